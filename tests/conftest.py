"""Helpers shared by the tests: small corpora on disk and running the CLI in-process."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def write_jsonl(path: Path, rows: list[dict], compress: bool | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    if compress or (compress is None and path.suffix == ".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def free_port() -> int:
    """A TCP port free on loopback now (for servers the tests start: Ray nodes, moto S3)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_recipe(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def cli():
    """Run `curate ARGS...` in-process; returns the result (exit_code, stdout, stderr)."""
    from curate.cli import app

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke

