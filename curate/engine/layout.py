"""Every path of a run directory, named in one place, on a filesystem abstraction (pyarrow.fs).

  data/part-NNNNN.parquet        the curated rows (published)
  trace/<step>.parquet           every removed row (published)
  manifest.json                  written last: its presence says the run is complete
  report.html                    written after the run
  data.tmp/ trace.tmp/           what publishing builds before renaming it into place
  _work/lock                     held (flock) by the live run; holds its pid and host
  _work/workers.lock             held shared by each live worker process
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
`RunLayout` / `StageLayout`, so no other module builds a run path; the filesystem is
`pyarrow.fs.LocalFileSystem` today (shards are written with pyarrow at these paths).
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass

import pyarrow.fs as pafs

WORK = "_work"
# What curate itself puts in an output directory: all that --overwrite may delete.
OWNED = (WORK, "data", "data.tmp", "trace", "trace.tmp", "manifest.json", "report.html")
# Published from _work at the end of a run; anything of it found at a (re)start is stale.
PUBLISHED = ("data", "data.tmp", "trace", "trace.tmp", "manifest.json")
MANIFEST_FORMAT = "curate-run/1"  # the manifest's `format_version`: how curate recognises its own runs


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


def _json_object(files: Files, path: str) -> dict:
    try:
        value = json.loads(files.read_bytes(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def is_run_directory(root: str, files: Files | None = None) -> bool:
    """Whether `root` is a curate run directory, by curate's own marks: a manifest curate wrote
    (its `format_version`; before that field, its recipe fingerprint and the curate version), or
    a `_work/` holding curate's run.json (a run not finished). A file of the user's that happens
    to be called manifest.json is no such mark."""
    files = files or Files()
    manifest = _json_object(files, _join(root, "manifest.json"))
    versions = manifest.get("versions")
    if manifest.get("format_version") == MANIFEST_FORMAT or (
            "recipe_fingerprint" in manifest and isinstance(versions, dict) and "curate" in versions):
        return True
    return {"recipe", "inputs"} <= _json_object(files, _join(root, WORK, "run.json")).keys()


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


@dataclass(frozen=True)
class RunLayout:
    """The paths of a run directory whose root is `root` (absolute, so that a path names the same
    file in a worker started elsewhere, whatever its working directory)."""

    root: str
    data = _under("data")
    data_tmp = _under("data.tmp")
    trace = _under("trace")
    trace_tmp = _under("trace.tmp")
    manifest = _under("manifest.json")
    report = _under("report.html")
    work = _under(WORK)
    lock = _under(WORK, "lock")
    workers_lock = _under(WORK, "workers.lock")
    run_file = _under(WORK, "run.json")
    plan = _under(WORK, "plan.json")

    @classmethod
    def at(cls, path) -> "RunLayout":
        return cls(os.path.abspath(os.fspath(path)))

    def stage(self, index: int) -> StageLayout:
        return StageLayout(_join(self.root, WORK, f"stage-{index}"))

    def owned(self) -> list[str]:
        return [_join(self.root, name) for name in OWNED]

    def published(self) -> list[str]:
        return [_join(self.root, name) for name in PUBLISHED]
