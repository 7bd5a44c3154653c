"""A run's work files on an object store: for Ray nodes that share no filesystem with the
`curate run` process (`--engine ray --work-store URI`: s3://, gs://, any fsspec filesystem; for
an output at a URI, by default its own `_work/files/` prefix: layout.py), and for a run whose
output is at a URI, so that `--resume` continues it on another machine (`--work-store URI` with
either engine).

It is a copy, not a second owner of the run: the run process keeps `_work/` on its own
disk as always, where the runner decides what is done. The store holds a copy of what is done,
under the same relative names (layout.py), each piece's files before the file that says it is
whole, so that what the store holds is always a consistent part of the run:
  - each task's files (data shards, trace shards, its observers' summaries) and then its done
    marker, put there by the task wherever it ran;
  - a fitted stage's `fit.json` and the files its state lists (`state.files()`: a dedup's
    decisions, a selection's arrays), then its `state.pkl`, put there by the run process before
    the stage's tasks.
On --resume the runner fetches into `_work/` what the store holds and `_work/` lacks (every
machine but the interrupted run's lacks it all): the finished tasks' files, marker last, and
the fitted states (`fetch_done`, `fetch_fitted`), and runs only the rest.
A node that does not see `_work/` (a "blind" node, found by the Ray engine's probe) keeps a
mirror of it at the same path, so that every path in a task and in a fitted state names the
same file on every node; a task there fetches what it reads before it runs. The run process
fetches each finished task's files into `_work/`. A fit's parallel pieces run on any node: its
directory travels through the store too (shared_dir.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import posixpath
import shutil
import uuid
from pathlib import Path

from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout, StageLayout
from curate.engine.tasks.context import StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work.worker import run_task_in_worker
from curate.errors import CurateError
from curate.fit_state import FitState
from curate.io.output_formats import remote_fs
from curate.io.store import filesystem, upload_options

STATE_FILES = "state-files.json"  # beside state.pkl: the files under fit/ the state names
MIRROR_TAG = "mirror-of"  # in a blind node's mirror: the engine session it belongs to
MIRROR_LOCK = "mirror.lock"


class WorkStore:
    """`_work/` (at the absolute path `work`) copied file by file under `uri`; `output_options`:
    where `uri` is under the run's output, its output.storage_options (the output's filesystem)."""

    def __init__(self, uri: str, work: Path, output_options: dict | None = None):
        self.uri = uri
        self.work = Path(work)
        self.beside_output = output_options is not None  # on the output's filesystem (under its prefix)
        if output_options is None:
            self.fs, self.root = remote_fs(uri, "--work-store")
        else:
            fs, root = filesystem(uri, output_options, side="output")
            self.fs, self.root = fs, root.rstrip("/")

    def key(self, path: Path) -> str:
        return f"{self.root}/{Path(path).relative_to(self.work).as_posix()}"

    def put(self, path: Path) -> None:
        self.fs.put_file(str(path), self._key_in_made_dir(path), **upload_options(self.fs, [path.stat().st_size]))

    def put_bytes(self, path: Path, data: bytes) -> None:
        self.fs.pipe_file(self._key_in_made_dir(path), data)

    def _key_in_made_dir(self, path: Path) -> str:
        key = self.key(path)
        self.fs.makedirs(posixpath.dirname(key), exist_ok=True)
        return key

    def names(self, directory: Path) -> set[str]:
        """The file names in `directory` of the store, as it is now."""
        self.fs.invalidate_cache()  # other processes write here: no listing of ours is current
        try:
            return {posixpath.basename(k) for k in self.fs.ls(self.key(directory), detail=False)}
        except FileNotFoundError:
            return set()

    def read_bytes(self, path: Path) -> bytes | None:
        try:
            return self.fs.cat_file(self.key(path))
        except FileNotFoundError:
            return None

    def read_json(self, path: Path):
        """The JSON file at `path`, or None when it is not there (or was cut short)."""
        data = self.read_bytes(path)
        try:
            return None if data is None else json.loads(data)
        except ValueError:
            return None

    def size(self, path: Path) -> int | None:
        self.fs.invalidate_cache()  # other processes write here: no listing of ours is current
        try:
            return self.fs.size(self.key(path))
        except FileNotFoundError:
            return None

    def fetch(self, path: str | Path, replace: bool = False) -> bool:
        """`path` from the store, unless it is here already (False) and not to be `replace`d (a
        fit's file that changed); it appears under its name only whole."""
        path = Path(path)
        if path.exists() and not replace:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.fetch-{uuid.uuid4().hex}")
        try:
            self.fs.get_file(self.key(path), str(part))
            os.replace(part, path)
            return True
        except FileNotFoundError:
            raise CurateError(
                f"{self.uri}: {self.key(path)} is missing from the work store (was it emptied "
                f"during the run?); continue with --resume"
            ) from None
        finally:
            part.unlink(missing_ok=True)

    def start(self, resume: bool) -> None:
        """Ready the store for a run whose `_work/run.json` is written: a fresh run empties it,
        a resume keeps what an earlier attempt of the same run put there. Only a store holding
        curate's work files (or nothing) is ever emptied."""
        run = self.work / "run.json"
        before = self.read_bytes(run)
        if resume and before == run.read_bytes():
            return
        if before is None and self.fs.exists(self.root) and self.fs.ls(self.root):
            raise CurateError(
                f"--work-store {self.uri} holds files that are not a curate run's work files; "
                f"give an empty location (curate empties it at each fresh run)"
            )
        self.clear()
        self.put(run)

    def clear(self) -> None:
        if self.fs.exists(self.root):
            self.fs.rm(self.root, recursive=True)


def for_run(uri: str, layout: RunLayout) -> WorkStore:
    """The work store at `uri` of the run in `layout`; under the output's own prefix, reached as
    the output is (with output.storage_options: credentials, endpoint)."""
    under = layout.remote and f"{uri.rstrip('/')}/".startswith(f"{layout.root}/")
    return WorkStore(uri, Path(layout.work), layout.options if under else None)


def held_copies(store: WorkStore | None, linked: dict[Path, Path]) -> dict[Path, str]:
    """Of the staged output files that are links to work shards (`linked`: staged -> shard), those
    whose shard the store holds whole, on the output's own filesystem: staged -> the shard's key
    there, for the output to copy within the store instead of uploading the bytes a second time."""
    if store is None or not store.beside_output or not linked:
        return {}
    store.fs.invalidate_cache()  # the tasks wrote there from other processes
    sizes: dict[str, int] = {}
    for directory in {store.key(shard.parent) for shard in linked.values()}:  # a listing each, not a request a file
        try:
            sizes.update(
                {posixpath.basename(e["name"].rstrip("/")): e["size"] for e in store.fs.ls(directory, detail=True)}
            )
        except OSError:  # missing, or not listable now: those shards are uploaded, as without a store
            continue
    return {
        staged: store.key(shard)
        for staged, shard in linked.items()
        if sizes.get(shard.name) == Path(staged).stat().st_size
    }


def task_files(layout: StageLayout, result: TaskResult) -> list[Path]:
    """What a finished task wrote under the stage's directory, its done marker last."""
    files = [Path(layout.data) / name for name in result.shards]
    files += [Path(layout.traces) / name for name in result.traces]
    if result.observed:
        files.append(Path(layout.observed(result.task)))
    return files + [Path(layout.done(result.task))]


def run_task(
    store: WorkStore | None, ctx: StageContext, task: Task, blind: bool = False, session: str = "", queue=None
) -> TaskResult:
    """Run `task` in this worker process; with a `store`, its files copied there once it is done.
    On a blind node, the files it reads are fetched first."""
    if store is None:
        return run_task_in_worker(ctx, task, queue)
    if blind:
        mirror(store.work, session)
        for shard in task.shards:
            store.fetch(shard)
        if ctx.stage.global_step is not None:
            fetch_state(store, ctx.layout)
    result = run_task_in_worker(ctx, task, queue)
    put_task_files(store, ctx.layout, result)
    return result


def put_task_files(store: WorkStore, layout: StageLayout, result: TaskResult) -> None:
    """A finished task's files into the store, its done marker last."""
    for path in task_files(layout, result):
        store.put(path)


def fetch_task_files(store: WorkStore, layout: StageLayout, result: TaskResult) -> int:
    """A finished task's files into the run process's `_work/` (where it ran elsewhere); how many
    were not there."""
    return sum(store.fetch(path) for path in task_files(layout, result))


def fetch_done(store: WorkStore, layout: StageLayout, names: list[str]) -> int:
    """Of the tasks `names` (not done in `_work/`), those whose done marker the store holds, with
    their files, marker last (--resume: done in an earlier attempt, maybe on another machine);
    how many."""
    held = store.names(Path(layout.done_dir))
    fetched = 0
    for name in names:
        marker = Path(layout.done(name))
        # None where it was cut short (on a store whose writes are copies, a file:// one): not done
        done = store.read_json(marker) if marker.name in held else None
        if done is not None:
            fetch_task_files(store, layout, TaskResult.from_dict(done))
            fetched += 1
    return fetched


def publish_shards(store: WorkStore, shards: list[str]) -> None:
    """Input shards of a stage that are not in the store go there (their tasks ran before this
    run used a store, or on a node that sees `_work/` in an attempt without one)."""
    listed: dict[Path, set[str]] = {}
    for shard in map(Path, shards):
        if shard.parent not in listed:
            listed[shard.parent] = store.names(shard.parent)
        if shard.name not in listed[shard.parent]:
            store.put(shard)


def publish_state(store: WorkStore, layout: StageLayout) -> None:
    """A fitted stage's state into the store, with the files it lists (`state.files()`, the Global
    contract), state.pkl last; nothing to do when an earlier attempt put it there whole."""
    state = Path(layout.state)
    if store.size(state) == state.stat().st_size:
        return
    files = state_files(FitState.load(state.read_bytes()))
    for path in files:
        store.put(path)
    store.put_bytes(
        Path(layout.root) / STATE_FILES, json.dumps([str(p.relative_to(store.work)) for p in files]).encode()
    )
    store.put(Path(layout.fit_report))  # what the manifest says of the fit, when a resume skips it
    store.put(state)


def state_files(state: FitState) -> list[Path]:
    """The files a fitted state reads, sorted."""
    return sorted(Path(f) for f in state.files())


def fetch_state(store: WorkStore, layout: StageLayout) -> None:
    """The stage's state and its files on this node; state.pkl last, so its presence means all."""
    state = Path(layout.state)
    if state.exists():
        return
    for name in store.read_json(Path(layout.root) / STATE_FILES) or []:
        store.fetch(store.work / name)
    store.fetch(Path(layout.fit_report))
    store.fetch(state)


def fetch_fitted(store: WorkStore, layout: StageLayout) -> bool:
    """The stage's fitted state from the store, if it holds one and `_work/` does not (--resume:
    fitted in an earlier attempt); whether it was fetched."""
    if Path(layout.state).exists() or Path(layout.state).name not in store.names(Path(layout.root)):
        return False
    fetch_state(store, layout)
    return True


_mirrored: set[tuple[str, str]] = set()


def mirror(work: Path, session: str) -> None:
    """Make `work` on this (blind) node this engine session's mirror: created where missing; a
    mirror of another session (a run killed before its cleanup) is emptied first. A directory
    there that is no mirror (another run's `_work/` on this node's own disk) is left alone."""
    if (str(work), session) in _mirrored:
        return
    work.mkdir(parents=True, exist_ok=True)
    fd = os.open(work / MIRROR_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the node's other workers wait while one empties it
        tag = work / MIRROR_TAG
        if not tag.exists() or tag.read_text() != session:
            others = [p for p in work.iterdir() if p.name not in (MIRROR_LOCK, MIRROR_TAG)]
            if others and not tag.exists():
                raise CurateError(
                    f"{work} on this Ray node holds files of its own (another run's work directory?); "
                    f"curate mirrors the run's work files there on nodes that do not see the output "
                    f"directory: choose another --output"
                )
            for p in others:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            tag.write_text(session)
    finally:
        os.close(fd)
    _mirrored.add((str(work), session))


def drop_mirror(work: Path, session: str) -> None:
    """Remove this node's mirror of `work` (if it is this session's), and the output directory
    above it if that is left empty."""
    tag = work / MIRROR_TAG
    if tag.exists() and tag.read_text() == session:
        shutil.rmtree(work, ignore_errors=True)
        try:
            work.parent.rmdir()
        except OSError:
            pass
