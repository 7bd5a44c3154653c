"""Who may write a run directory (a lock), what --overwrite may delete, what --resume finds.

The paths are layout.py's; this module decides what happens to them when a run starts. A run
whose output is on a store (a URI) is locked twice: the flock of its local work directory
(workers and local runs), and the store's lease (lease.py: runs on other machines).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from typing import TYPE_CHECKING

from curate.engine.rundir.layout import OUTPUT, PUBLISHED, Files, RunLayout, is_run_directory, json_object
from curate.engine.rundir.store_files import output_errors
from curate.errors import CurateError
from curate.manifest import Manifest

if TYPE_CHECKING:
    from curate.engine.rundir.lease import StoreLease
from curate.manifest import read as read_manifest

_files = Files()  # the local directory's


class RunLocked(CurateError):
    """Another live run holds the output directory."""


def _json(path: str) -> dict | None:
    try:
        value = json.loads(_files.read_bytes(path))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class RunLock:
    """An exclusive flock on `_work/lock`. The kernel drops it when the holder dies, however it
    dies, so a stale lock never blocks a resume; the pid and host inside are for the message."""

    def __init__(self, layout: RunLayout):
        self.layout = layout
        self.fd: int | None = None
        self.lease: StoreLease | None = None  # on a store: its lease (lease.py)

    def acquire(self) -> None:
        self._flock()
        if self.layout.remote:
            from curate.engine.rundir.lease import StoreLease

            lease = StoreLease(self.layout.files, self.layout.lease, self.layout.root)
            try:
                with output_errors(self.layout.root):
                    lease.acquire()
            except BaseException:
                self.release()
                raise
            self.lease = lease

    def check(self) -> None:
        """Before publishing: raise unless this run still holds the output (a store's lease)."""
        if self.lease is not None:
            self.lease.check()

    @staticmethod
    def refuse_if_held(layout: RunLayout) -> None:
        """Raise RunLocked if a live run holds `layout`'s lock now (this machine's work
        directory; a store's lease is asked when the lock is taken)."""
        if layout.remote:
            return
        try:
            fd = os.open(layout.lock, os.O_RDONLY)
        except OSError:  # no lock file: no run has it
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(_locked_message(layout.root, os.read(fd, 4096).decode(errors="replace"))) from None
        finally:
            os.close(fd)  # and with it the shared lock, if it was taken

    def _flock(self) -> None:
        path = self.layout.lock
        _files.makedirs(self.layout.work)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 4096).decode(errors="replace")
                os.close(fd)
                raise RunLocked(_locked_message(self.layout.root, holder)) from None
            # The file may have been removed (a finishing run deletes _work) between open and
            # flock: then this lock guards nothing, so take the new file's.
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode())
        self.fd = fd

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()
            self.lease = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return f"pid {info['pid']} on {info['host']}"
    except (ValueError, KeyError, TypeError):
        return "pid unknown"


def wait_for_workers(layout: RunLayout, timeout: float = 60.0) -> None:
    """Wait until no worker of an earlier run of this directory is alive (they die with their
    parent, but dying takes a moment), so that none can write into _work while we resume."""
    path = layout.workers_lock
    if not os.path.exists(path):
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
                    raise CurateError(
                        f"{layout.work}: worker processes of an earlier run are still alive after "
                        f"{timeout:.0f}s; stop them (they hold {path}) and run again"
                    ) from None
                time.sleep(0.05)
    finally:
        os.close(fd)


def hold_worker_lock(path: str) -> int:
    """Called in each worker: a shared lock on `_work/workers.lock`, held until the process exits."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def _locked_message(root: str, holder: str) -> str:
    return (
        f"{root}: another curate run is writing here ({_describe(holder)}); wait for it to finish (or "
        f"stop it), or write this run to another --output"
    )


def open_run_dir(layout: RunLayout, fingerprint: dict, *, resume: bool, overwrite: bool) -> tuple[RunLock, bool, bool]:
    """Lock the run directory and make it ready. Returns the lock, whether a finished run is
    already there (only with --resume) and whether the run continues an earlier attempt (--resume
    found its fingerprints: in the local work directory, or on the output's store, where a run
    from another machine left them)."""
    out = layout.files
    with output_errors(layout.root):
        if layout.remote:  # others write there: nothing listed earlier in this process is current
            out.refresh()
        if not resume and out.names(layout.root):
            if not is_run_directory(layout.root, out):
                raise CurateError(
                    f"output {layout.root} already exists and is not a curate run directory (it holds "
                    f"files curate did not write); curate only writes into an empty directory or "
                    f"replaces its own runs. Choose another --output or empty it yourself"
                )
            if not overwrite:
                RunLock.refuse_if_held(layout)  # a live run's: --resume and --overwrite would be refused too
                raise CurateError(
                    f"output {layout.root} already exists and is not empty; use --resume to continue "
                    f"an interrupted run or --overwrite to replace it"
                )
    lock = RunLock(layout)
    lock.acquire()
    try:
        wait_for_workers(layout)
        if resume and finished_manifest(layout, fingerprint["recipe"]) is not None:
            return lock, True, True
        before = _json(layout.run_file) if resume else None
        if resume and before is None and layout.remote:  # this machine has no work directory for it:
            before = json_object(out, layout.marker) or None  # the fingerprints on the store then
        if before is not None:
            for key, what in (("recipe", "the recipe"), ("inputs", "the input files"), ("limit", "--limit")):
                if before.get(key) != fingerprint[key]:
                    raise CurateError(
                        f"{layout.root}: cannot resume: {what} changed since the interrupted run. "
                        f"Run again with --overwrite to start over."
                    )
        else:  # a fresh run (or a resume with nothing to resume): nothing of an earlier run is kept
            for name in _files.names(layout.work):
                if name != "lock":
                    _files.remove(f"{layout.work}/{name}")
        # The fingerprints first: a run killed anywhere after this is one to --resume or --overwrite.
        _files.write_bytes(layout.run_file, json.dumps(fingerprint).encode())
        with output_errors(layout.root):
            if layout.remote:
                out.write_bytes(layout.marker, json.dumps(fingerprint).encode())
            # Publishing is redone from _work, which stays intact until the manifest is written, so
            # anything published before a kill is stale and goes (a fresh run: all of curate's own).
            for path in layout.outputs(PUBLISHED if before is not None else OUTPUT):
                out.remove(path)
        for path in layout.staging():
            _files.remove(path)
    except BaseException:
        lock.release()
        raise
    return lock, False, before is not None


def remembered_work_store(layout: RunLayout) -> str | None:
    """The --work-store an earlier attempt of the run was given, as its fingerprints recorded it
    (this machine's work directory, else the output's store): a --resume elsewhere needs no
    second mention of it."""
    before = _json(layout.run_file)
    if before is None and layout.remote:
        with output_errors(layout.root):
            before = json_object(layout.files, layout.marker)
    return (before or {}).get("work_store")


def finished_manifest(root, recipe_fingerprint: str, options: dict | None = None) -> Manifest | None:
    """The manifest of the finished run in `root` (a path, a URI whose store takes `options`:
    output.storage_options, or a RunLayout), or None: it is written last, so it marks one. A
    finished run of another recipe is not ours to resume."""
    layout = root if isinstance(root, RunLayout) else RunLayout.at(root, options)
    out = layout.files
    with output_errors(layout.root):
        if not out.is_file(layout.manifest):
            return None
        manifest = read_manifest(out.read_bytes(layout.manifest), layout.manifest)
    if manifest.recipe_fingerprint != recipe_fingerprint:
        raise CurateError(f"{layout.root} holds a finished run of another recipe; use --overwrite to replace it")
    return manifest


def produced_anything(layout: RunLayout) -> bool:
    """Whether a run got far enough that --resume would save work (a task or a fit finished)."""
    for stage in _files.names(layout.work, ""):
        if stage.startswith("stage-"):
            st = layout.stage(int(stage.removeprefix("stage-")))
            if _files.names(st.done_dir, ".json") or _files.is_file(st.state):
                return True
    return False


def discard_failed_start(layout: RunLayout, created_out: bool) -> None:
    """A run that failed before producing anything leaves nothing behind (on a store, its lease
    goes when the lock is released)."""
    _files.remove(layout.work)
    if layout.remote:
        layout.files.remove(layout.work_files)
        layout.files.remove(layout.marker)
    if created_out or layout.remote:  # a store run's local directory is its own
        try:
            os.rmdir(layout.local)
        except OSError:
            pass
