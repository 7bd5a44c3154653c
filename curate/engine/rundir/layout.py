"""Every path of a run directory, named in one place, on a filesystem abstraction (pyarrow.fs).

  data/part-NNNNN.parquet        the curated rows (published)
  trace/<step>.parquet           every removed row (published)
  README.md                      the run's dataset card (curate/card.py), written just before the manifest,
                                 so that `datasets.load_dataset(RUN_DIR)` reads data/ alone
  manifest.json                  written last: its presence says the run is complete
  report.html                    written after the run
  data.tmp/ trace.tmp/           what publishing builds before renaming it into place
  report.html.tmp                on a store: the report, written locally before it is uploaded
  _work/lock                     held (flock) by the live run; holds its pid and host
  _work/workers.lock             held shared by each live worker process from its first task
  _work/run.json                 fingerprints of recipe and input (checked by --resume)
  _work/plan.json                the plan (plan.py)
  _work/stage-K/data/            the stage's output shards
  _work/stage-K/trace/<step>/    removed rows, per task
  _work/stage-K/observed/        each task's run-observer summaries (observers.py), before its marker
  _work/stage-K/done/<task>.json one marker per finished task: its TaskResult, written last
  _work/stage-K/fit/             a Global fit's files (its state names the ones it needs)
  _work/stage-K/fit.json         the fit's seconds and summary
  _work/stage-K/state.pkl        the fitted state, written last: its presence says "fitted"

Paths are POSIX strings under the run's root. The runner and the tasks read and write through
`RunLayout` / `StageLayout`, so no other module builds a run path.

The root may be a URI (s3://bucket/prefix, memory://, file://...): then data/, trace/,
manifest.json and report.html are objects there (`files`: store_files.StoreFiles), and the rest,
what the run works in, is in a local directory of its own keyed by the URI (`local`:
$CURATE_CACHE_DIR/runs/<hash>/, ~/.cache/curate by default): _work/, data.tmp/, trace.tmp/,
report.html.tmp. The
store then holds two more objects while the run is not finished: `_work/run.json`, the mark
that the prefix is curate's (for --overwrite) and the fingerprints a --resume on another machine
checks, and `_work/lock`, the run's lease (lease.py); and with Ray nodes that do not see the
local directory, or by choice (`--work-store`), `_work/files/`, a copy of the work files
(work_store.py: for those nodes, and for a --resume on a machine without the local directory),
removed once the manifest is written.
Work stays local because the tasks, the fits (duckdb spills, memory-mapped indexes) and the
output formats all need a disk, and a local file's rename keeps resume exact; without a work
store, the store is written once, when the run publishes.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.fs as pafs

from curate.io.store import is_uri

WORK = "_work"
# What curate itself puts in an output directory besides _work: all that --overwrite may delete.
# The manifest goes first, so that a reader never finds it beside data half deleted.
OUTPUT = ("manifest.json", "README.md", "data", "trace", "report.html")
# Where publishing builds data/ and trace/ (in the local directory), and a store's report.html
STAGING = ("data.tmp", "trace.tmp", "report.html.tmp")
# Published from _work at the end of a run; anything of it found at a (re)start is stale.
PUBLISHED = ("manifest.json", "README.md", "data", "trace")
from curate.manifest import FORMAT_VERSION  # noqa: E402 (beside the names it gives)

MANIFEST_FORMAT = FORMAT_VERSION  # the manifest's `format_version`: how curate recognises its own runs


def _join(*parts: str) -> str:
    return posixpath.join(*parts)


class Files:
    """The file operations a run needs, on one pyarrow filesystem."""

    def __init__(self, fs: pafs.FileSystem | None = None):
        self.fs = fs or pafs.LocalFileSystem()

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_file(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.File

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def size(self, path: str) -> int:
        return self.fs.get_file_info(path).size

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        """`data` at `path`, appearing under its name only whole (a temporary name, then a rename)."""
        self.fs.create_dir(posixpath.dirname(path), recursive=True)
        tmp = f"{path}.tmp"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, path)

    def names(self, directory: str, suffix: str = "") -> list[str]:
        """The names in `directory` ending in `suffix`, sorted; none when it does not exist."""
        infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        return sorted(posixpath.basename(i.path) for i in infos if i.base_name.endswith(suffix))

    def bytes_under(self, directory: str) -> int:
        """The bytes of every file below `directory` (those being written too); 0 when it does not exist."""
        infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True, recursive=True))
        return sum(i.size for i in infos if i.type == pafs.FileType.File)

    def makedirs(self, path: str) -> None:
        self.fs.create_dir(path, recursive=True)

    def remove(self, path: str) -> None:
        """A file or a whole directory, if there; a symbolic link itself, never what it points to."""
        if os.path.islink(path):  # the local filesystem follows links: never delete through one
            os.unlink(path)
            return
        kind = self.fs.get_file_info(path).type
        if kind == pafs.FileType.Directory:
            self.fs.delete_dir(path)
        elif kind != pafs.FileType.NotFound:
            self.fs.delete_file(path)

    def move(self, src: str, dst: str) -> None:
        self.fs.move(src, dst)


def json_object(files: Files, path: str) -> dict:
    """The JSON object in the file at `path`; {} where there is none (missing, unreadable, not one)."""
    try:
        value = json.loads(files.read_bytes(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def is_run_directory(root: str, files: Files | None = None) -> bool:
    """Whether `root` is a curate run directory, by curate's own marks: a manifest curate wrote
    (its `format_version`; before that field, its recipe fingerprint and the curate version), or
    a `_work/` holding curate's run.json or lock (a run not finished). A file of the user's that happens
    to be called manifest.json is no such mark."""
    files = files or Files()
    manifest = json_object(files, _join(root, "manifest.json"))
    versions = manifest.get("versions")
    if manifest.get("format_version") == MANIFEST_FORMAT or (
        "recipe_fingerprint" in manifest and isinstance(versions, dict) and "curate" in versions
    ):
        return True
    # A run not finished: its fingerprints, or its lock alone (killed before it wrote them)
    return {"recipe", "inputs"} <= json_object(files, _join(root, WORK, "run.json")).keys() or {
        "pid",
        "host",
    } <= json_object(files, _join(root, WORK, "lock")).keys()


def _under(*parts: str) -> property:
    """A path under the layout's root, as a read-only attribute."""
    return property(lambda self: _join(self.root, *parts))


@dataclass(frozen=True)
class StageLayout:
    """The paths of one stage under `_work/`; travels with every task of the stage."""

    root: str
    data = _under("data")
    traces = _under("trace")
    done_dir = _under("done")
    fit = _under("fit")
    fit_report = _under("fit.json")
    state = _under("state.pkl")

    def trace(self, label: str) -> str:
        return _join(self.root, "trace", label)

    def done(self, task_name: str) -> str:
        return _join(self.root, "done", f"{task_name}.json")

    def observed(self, task_name: str) -> str:
        return _join(self.root, "observed", f"{task_name}.pkl")


def _local(*parts: str) -> property:
    """A path under the layout's local directory (the root itself for a local run)."""
    return property(lambda self: _join(self.local, *parts))


def work_directory(uri: str) -> str:
    """The local directory of a run whose output is at `uri`: the same for every run into it on
    this machine (so --resume finds its work), a different one for every other URI."""
    base = Path(os.environ.get("CURATE_CACHE_DIR") or Path.home() / ".cache" / "curate")
    return str((base / "runs" / hashlib.sha256(uri.encode()).hexdigest()[:16]).resolve())


def files_at(root: str, options: dict | None = None):
    """The file operations of the filesystem `root` is on (a store's for a URI, with `options`:
    output.storage_options)."""
    if is_uri(root):
        from curate.engine.rundir.store_files import StoreFiles

        return StoreFiles(root, options)
    return Files()


@dataclass(frozen=True)
class RunLayout:
    """The paths of a run directory whose root is `root` (absolute, so that a path names the same
    file in a worker started elsewhere, whatever its working directory; or a URI), and of the
    local directory `local` its work is in (the root itself, for a local run)."""

    root: str
    local: str
    # output.storage_options, for the store at a URI root; may hold credentials: never shown
    options: dict = field(default_factory=dict, compare=False, repr=False)
    data = _under("data")
    trace = _under("trace")
    manifest = _under("manifest.json")
    card = _under("README.md")
    report = _under("report.html")
    data_tmp = _local("data.tmp")
    trace_tmp = _local("trace.tmp")
    report_tmp = _local("report.html.tmp")  # a store's report.html, written before it is uploaded
    work = _local(WORK)
    lock = _local(WORK, "lock")
    workers_lock = _local(WORK, "workers.lock")
    run_file = _local(WORK, "run.json")
    plan = _local(WORK, "plan.json")
    # On a store, while the run is not finished: the mark that the prefix is curate's, and the lease.
    marker = _under(WORK, "run.json")
    lease = _under(WORK, "lock")
    work_files = _under(WORK, "files")  # the Ray nodes' work store, where some do not see `local`

    @classmethod
    def at(cls, path, options: dict | None = None) -> "RunLayout":
        """The layout of the run directory `path`; `options`: output.storage_options of a URI's store."""
        path = os.fspath(path)
        if is_uri(path):
            root = path.rstrip("/")
            return cls(root, work_directory(root), dict(options or {}))
        root = os.path.abspath(path)
        return cls(root, root)

    @property
    def remote(self) -> bool:
        """Whether the output is on a store (elsewhere than the local directory)."""
        return self.root != self.local

    @property
    def files(self):
        """The file operations of the output's filesystem, made once for this layout (a store's
        filesystem is an instance of its own, whose client takes a while to make)."""
        made = self.__dict__.get("_files")
        if made is None:
            made = files_at(self.root, self.options)
            object.__setattr__(self, "_files", made)  # frozen: the fields; this is no field
        return made

    def __getstate__(self) -> dict:
        """Pickled without its filesystem (a worker or node that needs it makes its own)."""
        return {k: v for k, v in self.__dict__.items() if k != "_files"}

    def stage(self, index: int) -> StageLayout:
        return StageLayout(_join(self.local, WORK, f"stage-{index}"))

    def outputs(self, names: tuple[str, ...]) -> list[str]:
        """The paths of `names` (of OUTPUT) in the output."""
        return [_join(self.root, name) for name in names]

    def staging(self) -> list[str]:
        return [_join(self.local, name) for name in STAGING]
