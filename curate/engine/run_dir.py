"""The run directory: who may write it (a lock), what --overwrite may delete, what --resume finds.

Layout (the user-visible parts are published last; see local.py):
  _work/lock            held (flock) by the live run; holds its pid and host
  _work/workers.lock    held shared by each live worker process, so a resume can wait for a
                        dying run's workers to be gone before it touches _work
  _work/run.json        fingerprints of recipe and input (checked by --resume)
  data/ trace/ manifest.json   the published run; manifest.json is written last and is what
                        says the run is complete
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from pathlib import Path

from curate.errors import CurateError
from curate.io.writer import atomic_write_bytes

# What curate itself puts in an output directory: all that --overwrite deletes.
OWNED = ("_work", "data", "data.tmp", "trace", "trace.tmp", "manifest.json", "report.html")
PUBLISHED = ("data", "data.tmp", "trace", "trace.tmp", "manifest.json")


class RunLocked(CurateError):
    """Another live run holds the output directory."""


def is_curate_output(out: Path) -> bool:
    return (out / "manifest.json").is_file() or (out / "_work").is_dir()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


class RunLock:
    """An exclusive flock on `_work/lock`. The kernel drops it when the holder dies, however it
    dies, so a stale lock never blocks a resume; the pid and host inside are for the message."""

    def __init__(self, work: Path):
        self.path = work / "lock"
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 4096).decode(errors="replace")
                os.close(fd)
                raise RunLocked(f"{self.path.parent.parent}: another curate run is writing here ({_describe(holder)}); "
                                f"wait for it to finish or stop it first") from None
            # The file may have been removed (a finishing run deletes _work) between open and
            # flock: then this lock guards nothing, so take the new file's.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return f"pid {info['pid']} on {info['host']}"
    except (ValueError, KeyError, TypeError):
        return "pid unknown"


def wait_for_workers(work: Path, timeout: float = 60.0) -> None:
    """Wait until no worker of an earlier run of this directory is alive (they die with their
    parent, but dying takes a moment), so that none can write into _work while we resume."""
    path = work / "workers.lock"
    if not path.exists():
        return
    fd = os.open(path, os.O_RDWR)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise CurateError(f"{work}: worker processes of an earlier run are still alive after "
                                      f"{timeout:.0f}s; stop them (they hold {path}) and run again") from None
                time.sleep(0.05)
    finally:
        os.close(fd)


def hold_worker_lock(work: Path) -> int:
    """Called in each worker: a shared lock held until the process exits."""
    fd = os.open(work / "workers.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def open_run_dir(out: Path, fingerprint: dict, *, resume: bool, overwrite: bool) -> tuple[RunLock, bool]:
    """Lock the run directory and make it ready. Returns the lock and whether a finished run is
    already there (only with --resume)."""
    work = out / "_work"
    if not resume and out.exists() and any(out.iterdir()):
        if not overwrite:
            raise CurateError(f"output {out} already exists and is not empty; use --resume to continue an "
                              f"interrupted run or --overwrite to replace it")
        if not is_curate_output(out):
            raise CurateError(f"--overwrite: {out} is not a curate run directory (no manifest.json or _work/); "
                              f"curate only replaces its own output. Choose another --output or empty it yourself")
    lock = RunLock(work)
    lock.acquire()
    try:
        wait_for_workers(work)
        if resume and finished_manifest(out, fingerprint["recipe"]) is not None:
            return lock, True
        run_file = work / "run.json"
        if resume and run_file.is_file():
            before = json.loads(run_file.read_text())
            for key, what in (("recipe", "the recipe"), ("inputs", "the input files"), ("limit", "--limit")):
                if before.get(key) != fingerprint[key]:
                    raise CurateError(f"{out}: cannot resume: {what} changed since the interrupted run. "
                                      f"Run again with --overwrite to start over.")
        else:  # a fresh run (or a resume with nothing to resume): nothing of an earlier run is kept
            for name in [p.name for p in work.iterdir() if p.name != "lock"]:
                _remove(work / name)
            for name in OWNED:
                if name != "_work":
                    _remove(out / name)
        # Publishing is redone from _work, which stays intact until the manifest is written, so
        # anything published before a kill is stale and goes.
        for name in PUBLISHED:
            _remove(out / name)
        atomic_write_bytes(run_file, json.dumps(fingerprint).encode())
    except BaseException:
        lock.release()
        raise
    return lock, False


def finished_manifest(out: Path, recipe_fingerprint: str) -> dict | None:
    """The manifest of the finished run in `out` (it is written last, so it marks one), or None.
    A finished run of another recipe is not ours to resume."""
    path = out / "manifest.json"
    if not path.is_file():
        return None
    manifest = json.loads(path.read_text())
    if manifest.get("recipe_fingerprint") != recipe_fingerprint:
        raise CurateError(f"{out} holds a finished run of another recipe; use --overwrite to replace it")
    return manifest


def produced_anything(work: Path) -> bool:
    """Whether a run got far enough that --resume would save work (a task or a fit finished)."""
    return any(work.glob("stage-*/done/*.json")) or any(work.glob("stage-*/state.pkl"))


def discard_failed_start(out: Path, created_out: bool) -> None:
    """A run that failed before producing anything leaves nothing behind."""
    shutil.rmtree(out / "_work", ignore_errors=True)
    if created_out:
        try:
            out.rmdir()
        except OSError:
            pass
