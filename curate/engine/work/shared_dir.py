"""A Global fit's directory kept alike on every Ray node through the work store, so that its
parallel pieces run on nodes that do not see the run's disk ("blind" nodes, work_store.py).

A piece reads what the fit's process and earlier pieces wrote under the fit's workdir and writes
files there (signature parts, band joins); which ones is the operator's business, so the whole
directory travels, file by file and only when changed:
  - before each `map`, the run process puts the directory's new and changed files in the store
    and hands the pieces its `view`: its sub-directories (pieces write into those the fit made)
    and each file's version (size and modification time);
  - a piece on a blind node fetches, into its node's mirror, the files whose version there
    differs from the view's (stamped with the view's time, so they read as that version), runs,
    and puts what it wrote in the store; it says which (with their versions);
  - after the map the run process fetches those files, stamped alike, so that the next view
    names them as the version the node has (nothing goes back and forth twice).
Pieces running at once on one node share its mirror, so a piece cannot tell its own files from
those another is still writing: it puts every file changed since it started, under the node's
lock, and the piece still writing one puts it again once it is whole, later, under the same lock.
The last version put of a file is thereby its whole one, the newest on that node, which is the
one the run process takes. A file the fit's process is still writing (a store it appends to)
is no piece's input, so it travels only once closed. A file the fit deletes stays in the
nodes' mirrors until the run ends: pieces read the files their arguments name, or globs over
directories whose files are only ever added.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from curate.engine.work.work_store import WorkStore
from curate.errors import CurateError

Versions = dict[str, str]  # a file's path relative to the directory -> "size:mtime_ns"


def versions(directory: Path, skip: frozenset[str] = frozenset()) -> Versions:
    """Every file below `directory` (but those in `skip`, absolute paths) and its version."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if path in skip:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # removed while listed (a duckdb spill file)
                continue
            found[os.path.relpath(path, directory)] = f"{st.st_size}:{st.st_mtime_ns}"
    return found


def push(store: WorkStore, directory: Path, pushed: Versions) -> tuple[list[str], Versions]:
    """The run process's side, before a map: the directory's files not in the store in their
    version there go there (`pushed`: what is, updated); the view the pieces get."""
    files = versions(directory, _being_written())
    for name, version in files.items():
        if pushed.get(name) != version:
            store.put(directory / name)
            pushed[name] = version
    dirs = sorted(os.path.relpath(root, directory) for root, _, _ in os.walk(directory))
    return dirs, files


def receive(store: WorkStore, directory: Path, written: list[Versions], pushed: Versions) -> int:
    """The run process's side, after a map: the files pieces on blind nodes wrote, each in its
    newest version (the whole one), stamped with it; how many."""
    newest: Versions = {}
    for files in written:
        for name, version in files.items():
            if name not in newest or _order(version) > _order(newest[name]):
                newest[name] = version
    for name, version in newest.items():
        path = directory / name
        store.fetch(path, replace=True)
        if path.stat().st_size != _order(version)[1]:
            # a version put after the whole one: a piece killed while writing it, whose node put
            # it half written after its retry put it whole elsewhere
            raise CurateError(
                f"{store.key(path)} in the work store is not the version the fit's pieces "
                f"wrote last (a piece's node died while writing it?); continue with --resume"
            )
        _stamp(path, version)
        pushed[name] = version
    return len(newest)


def run_piece(store: WorkStore, directory: Path, view: tuple[list[str], Versions], fn, args) -> tuple[object, Versions]:
    """A piece on a blind node: the view's directories made and files fetched, `fn(*args)` run,
    the files it changed put in the store. Returns its result and those files' versions."""
    dirs, files = view
    for name in dirs:
        (directory / name).mkdir(parents=True, exist_ok=True)
    uploaded = directory.with_name(f"{directory.name}.uploaded.json")  # beside it: no file of the fit's
    with _node_lock(directory):
        have = versions(directory)
        for name, version in files.items():
            if have.get(name) != version:
                store.fetch(directory / name, replace=True)
                _stamp(directory / name, version)
        before = versions(directory)
    result = fn(*args)
    with _node_lock(directory):
        done = set(json.loads(uploaded.read_text())) if uploaded.exists() else set()
        changed = {}
        for name, version in versions(directory).items():
            if before.get(name) == version or f"{name}@{version}" in done:
                continue
            try:
                store.put(directory / name)
            except FileNotFoundError:  # a piece's scratch file (a duckdb spill), gone meanwhile
                continue
            changed[name] = version
        uploaded.write_text(json.dumps(sorted(done | {f"{n}@{v}" for n, v in changed.items()})))
    return result, changed


@contextmanager
def _node_lock(directory: Path):
    """Held by one piece of this node at a time (pieces run in several worker processes)."""
    fd = os.open(directory.with_name(f"{directory.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _order(version: str) -> tuple[int, int]:
    """A version as (mtime_ns, size): newer last, by time, then by size (a file grows as it is written)."""
    size, mtime = version.split(":")
    return int(mtime), int(size)


def _stamp(path: Path, version: str) -> None:
    """`path`'s modification time set to the version's, so that it lists as that version."""
    mtime = _order(version)[0]
    os.utime(path, ns=(mtime, mtime))


def _being_written() -> frozenset[str]:
    """The files this process has open for writing (Linux's /proc; elsewhere none is known)."""
    found = set()
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return frozenset()
    for fd in fds:
        try:
            flags = int(Path(f"/proc/self/fdinfo/{fd}").read_text().split("flags:")[1].split()[0], 8)
            if flags & (os.O_WRONLY | os.O_RDWR):
                found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except (OSError, IndexError, ValueError):  # closed meanwhile, or not a file
            continue
    return frozenset(found)
