"""Resolve a recipe's `input` into Sources: the units of reading work, in a fixed order."""

from __future__ import annotations

import glob
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa

from curate.engine.rundir import layout
from curate.errors import InputError
from curate.io import retries, store
from curate.io.listing import in_unnamed_run_directory, is_data_name, list_uri

SUFFIX_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",
    ".arrow": "arrow_stream",
    ".tar": "webdataset",
    ".tgz": "webdataset",
    ".warc": "warc",
    ".arc": "warc",
    ".wet": "warc",  # also .warc.gz etc.: gzip per record, read by warc.py
}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}


@dataclass(frozen=True)
class Source:
    """One file (or row-group range of a Parquet file) to read."""

    path: str
    format: str
    name: str  # path relative to the input's base: used in _id and in messages
    partition: tuple[tuple[str, str], ...] = ()  # hive key=value pairs from the directory names
    row_groups: tuple[int, ...] | None = None  # Parquet only: a subset of row groups
    first_row: int = 0  # the file's row number of this source's first row (for _id)
    # A URI's object, as listed into the plan: its size and version (store.version: ETag,
    # generation, ...), so that neither the fingerprint nor planning asks the store again.
    size: int | None = None
    version: str = ""
    # input.storage_options, for the worker that opens a URI; may hold credentials, so it is
    # never shown (repr) and never part of a fingerprint or the plan's description.
    storage_options: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_uri(self) -> bool:
        return store.is_uri(self.path)

    def fingerprint(self) -> list:
        """What says the file is unchanged, for --resume: size and mtime of a local file; size and
        ETag / generation / version id of an object in a store (a copy elsewhere keeps no mtime)."""
        if self.is_uri:
            return [self.name, self.size, self.version, list(self.row_groups or ())]
        st = os.stat(self.path)
        return [self.name, st.st_size, st.st_mtime_ns, list(self.row_groups or ())]

    def byte_size(self) -> int:
        return (self.size or 0) if self.is_uri else os.path.getsize(self.path)


def file_format(path: str, declared: str | None = None) -> str:
    if declared and declared not in ("hf", "hf_disk"):
        return declared
    suffixes = [s.lower() for s in _suffixes(path)]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffixes[-1]]
    raise InputError(
        f"{path}: cannot tell the format from the extension; set input.format (parquet, jsonl, csv, webdataset, warc)"
    )


def _suffixes(path: str) -> list[str]:
    """Path(path).suffixes, without making the path object where the last name is plain (once for
    each of 100,000 listed objects): pathlib's rule on that name."""
    name = path.rpartition("/")[2]
    if name in ("", "."):  # a trailing separator: the name before it, as pathlib finds it
        name = Path(path).name
    if name.endswith("."):
        return []
    return ["." + suffix for suffix in name.lstrip(".").split(".")[1:]]


def _hive_partition(directories: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The key=value pairs of the names of a file's `directories`, from its input's base down."""
    pairs = []
    for part in directories:
        key, eq, value = part.partition("=")
        if eq and key:
            pairs.append((key, value))
    return tuple(pairs)


@contextmanager
def named_errors(path: str, what: str) -> Iterator[None]:
    """What pyarrow or the OS raise while reading `path`, as an InputError naming it: a damaged,
    truncated or unreadable file is the user's to fix, whichever code opens it first."""
    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, EOFError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read as {what}: {e}") from None


PEEK_BUFFER = 1 << 20  # bytes of a column chunk read at a time where a Parquet file is peeked
# The footers of objects read in this process, kept for the next open of the same object: the
# preflight reads every footer, and a stage run on threads of this process (no operator) would
# ask the store for each one again before its first row. Bounded by their encoded size; the
# first ones are kept (the first tasks' objects, those the run waits on).
FOOTERS_KEPT_BYTES = 32 << 20
_footers: dict[tuple[str, int | None, str], object] = {}
_footer_bytes = 0


def open_parquet(
    path: str, storage_options: dict | None = None, size: int | None = None, version: str = "", peek: bool = False
):
    """`pq.ParquetFile(path)`, its footer read; a damaged or truncated file is an InputError naming
    it. A URI is read by range requests: the footer now (or the one this process read before of
    the same object: size and version), later only the row groups asked for (`size`, `version`:
    the object's, as listed): the column chunks of a row group coalesced into one request
    (pre_buffer), not one request each; a quarter less CPU for a read from S3.
    `peek`: only the first rows are wanted (the preflight's first batch), so the column chunks
    are read a page at a time (PEEK_BUFFER), not a whole row group (often 100 MB or more) at once."""
    import pyarrow.parquet as pq

    global _footer_bytes
    try:
        remote = store.is_uri(path)
        if not remote:  # a local footer is a read of the page cache: nothing kept
            return pq.ParquetFile(path, pre_buffer=False, buffer_size=PEEK_BUFFER) if peek else pq.ParquetFile(path)
        key = (path, size, version)
        known = _footers.get(key) if size is not None and version else None
        opened = store.open_random(path, storage_options, size, version)
        pf = (
            pq.ParquetFile(opened, metadata=known, pre_buffer=False, buffer_size=PEEK_BUFFER)
            if peek
            else pq.ParquetFile(opened, metadata=known, pre_buffer=True)
        )
        if known is None and size is not None and version and _footer_bytes < FOOTERS_KEPT_BYTES:
            _footers[key] = pf.metadata
            _footer_bytes += pf.metadata.serialized_size
        return pf
    except (pa.ArrowInvalid, OSError) as e:
        if retries.failure(e) is not None:  # the store failed every try: nothing says the file is damaged
            raise InputError(f"{path}: cannot read it from the store: {e}") from None
        raise InputError(f"{path}: not a readable Parquet file (damaged, truncated or not Parquet?): {e}") from None


def is_run_directory(path: Path) -> bool:
    """Whether `path` is a curate run directory (by curate's own marks: layout.is_run_directory)."""
    return layout.is_run_directory(str(path))


def _run_directory_error(path: str, finished: bool) -> InputError:
    """Naming a run directory itself would read its trace, work files and manifest as data."""
    data = f"{path.rstrip('/')}/data"
    if finished:
        return InputError(f"{path} is a curate run directory; to read its output, name its data: {data}")
    return InputError(
        f"{path} is an unfinished curate run directory (no manifest.json): its files are not "
        f"a dataset yet; finish it with --resume, then name its data: {data}"
    )


def _no_files_error(spec: str, skipped: list) -> InputError:
    left_out = (
        f" (left out: the curate run director{'ies' if len(skipped) > 1 else 'y'} "
        f"{', '.join(map(str, skipped))}; to read a run's output, name its data/ directory)"
        if skipped
        else ""
    )
    relative = (
        ""
        if store.is_uri(spec) or Path(spec).expanduser().is_absolute()
        else (
            f" (a relative path is relative to the working directory, {Path.cwd()}, not to the recipe's: run curate "
            f"from the directory the recipe's paths start at, or give --input an absolute path)"
        )
    )
    return InputError(f"no input files match {spec}{left_out}{relative}")


def _uri_sources(spec: str, declared_format: str | None, options: dict) -> list[Source]:
    """The objects at the URI `spec`, listed once (their sizes and versions kept for the plan)."""
    found = list_uri(spec, options)
    if found.run_directory is not None:
        raise _run_directory_error(spec, found.run_directory)
    if not found.files:
        raise _no_files_error(spec, found.skipped)
    sources = []
    for uri, rel, info in found.files:
        sources.append(
            Source(
                uri,
                file_format(uri, declared_format),
                rel,
                _hive_partition(rel.split("/")[:-1]),
                size=info.get("size"),
                version=store.version(info),
                storage_options=options,
            )
        )
    return sources


def _walk(root: Path, skipped: list[Path]) -> list[Path]:
    """The data files under `root`, sorted, leaving out curate run directories below it (listed
    in `skipped`): a run written into its own input directory must not be read back."""
    files = []
    for top, dirs, names in os.walk(root):
        here = Path(top)
        for d in list(dirs):
            if is_run_directory(here / d):
                dirs.remove(d)
                skipped.append(here / d)
        files += [here / n for n in names if _is_data_file(here / n)]
    return sorted(files)


def on_this_machine(spec: str) -> bool:
    """Whether an input spec names files of this machine: not a URI, not a Hugging Face dataset."""
    return not (spec.startswith("hf:") or store.is_uri(spec))


def searched_directories(paths: str | list[str]) -> list[tuple[str, Path]]:
    """(input spec, directory) for each directory whose subdirectories the input's expansion
    searches: a directory given as input, or the fixed part of a glob with a wildcard in a
    directory name or `**`. A glob such as `data/*.jsonl` searches `data/` itself only."""
    found = []
    for spec in [paths] if isinstance(paths, str) else paths:
        if not on_this_machine(spec):
            continue
        p = Path(spec)
        if p.is_dir():
            found.append((spec, p))
        elif glob.has_magic(spec) and (any(glob.has_magic(part) for part in p.parts[:-1]) or "**" in p.parts):
            found.append((spec, _glob_base(spec)))
    return found


def _glob_base(spec: str) -> Path:
    """The directory a glob starts from: its path up to the first wildcard."""
    base = Path(spec.split("*")[0].split("?")[0].split("[")[0])
    return base if base.is_dir() else base.parent


def _is_data_file(p: Path) -> bool:
    return p.is_file() and is_data_name(p.name)


def _hf_disk_sources(root: Path, split: str | None) -> list[Source]:
    """A `datasets.save_to_disk` directory: state.json lists Arrow stream files; a DatasetDict has splits."""
    if (root / "dataset_dict.json").is_file():
        splits = json.loads((root / "dataset_dict.json").read_text())["splits"]
        if split is None:
            if len(splits) != 1:
                raise InputError(f"{root}: a dataset with splits {', '.join(splits)}; choose one with input.split")
            split = splits[0]
        if split not in splits:
            raise InputError(f"{root}: no split '{split}' (splits: {', '.join(splits)})")
        root = root / split
    state = json.loads((root / "state.json").read_text())
    files = [root / f["filename"] for f in state["_data_files"]]
    return [Source(str(f), "arrow_stream", str(f.relative_to(root.parent))) for f in files]


def _hf_cache_sources(name: str, split: str | None) -> list[Source]:
    # Only the local cache is read: never wait on a hub (set before `datasets` reads its config).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    try:
        import datasets  # optional extra: curate[hf]
    except ImportError:
        raise InputError(
            f"reading the Hugging Face dataset '{name}' needs the `datasets` package: pip install 'curate[hf]'"
        ) from None
    try:
        ds = datasets.load_dataset(name, split=split or "train")
    except Exception as e:  # datasets raises many types; all mean "not available here"
        raise InputError(
            f"Hugging Face dataset '{name}' (split {split or 'train'}) is not available locally: {e}"
        ) from None
    return [Source(f["filename"], "arrow_stream", f"{name}/{Path(f['filename']).name}") for f in ds.cache_files]


def discover(
    paths: str | list[str],
    declared_format: str | None = None,
    split: str | None = None,
    storage_options: dict | None = None,
) -> list[Source]:
    """All input files in a stable order. Raises InputError when nothing matches."""
    specs = [paths] if isinstance(paths, str) else list(paths)
    sources: list[Source] = []
    for spec in specs:
        if store.is_uri(spec):
            sources += _uri_sources(spec, declared_format, storage_options or {})
            continue
        if spec.startswith("hf:") or declared_format == "hf":
            sources += _hf_cache_sources(spec.removeprefix("hf:"), split)
            continue
        p = Path(spec)
        if p.is_dir() and ((p / "state.json").is_file() or (p / "dataset_dict.json").is_file()):
            sources += _hf_disk_sources(p, split)
            continue
        skipped: list[Path] = []
        if p.is_dir():
            if is_run_directory(p):
                raise _run_directory_error(str(p), (p / "manifest.json").is_file())
            base = p
            files = _walk(p, skipped)
        else:
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches and not glob.has_magic(spec):
                raise InputError(f"input not found: {spec}")
            base = _glob_base(spec)
            is_run = cache(is_run_directory)  # asked for every directory on the way to each match
            files = [
                Path(m)
                for m in matches
                if _is_data_file(Path(m)) and not in_unnamed_run_directory(Path(m), base, p.parts, skipped, is_run)
            ]
        if not files:
            raise _no_files_error(spec, skipped)
        for f in files:
            rel = f.relative_to(base) if f.is_relative_to(base) else Path(f.name)
            sources.append(
                Source(str(f), file_format(str(f), declared_format), rel.as_posix(), _hive_partition(rel.parent.parts))
            )
    return sources


def split_parquet(sources: list[Source], target_bytes: int = 128 << 20) -> list[Source]:
    """Split large Parquet files into runs of row groups of about `target_bytes`, so one big
    file still keeps every worker busy. Row numbers (and so `_id`s) do not depend on the split."""
    out = []
    for src in sources:
        if src.format != "parquet" or src.row_groups is not None or src.byte_size() <= target_bytes:
            out.append(src)
            continue
        meta = open_parquet(src.path, src.storage_options, src.size, src.version).metadata
        groups: list[int]
        groups, size, row, first = [], 0, 0, 0
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            if groups and size + rg.total_byte_size > target_bytes:
                out.append(replace(src, row_groups=tuple(groups), first_row=first))
                groups, size, first = [], 0, row
            groups.append(i)
            size += rg.total_byte_size
            row += rg.num_rows
        out.append(replace(src, row_groups=tuple(groups), first_row=first))
    return out


def input_objects(sources: list[Source]) -> list[dict]:
    """Lineage of a run's input, for its manifest: each file or object once, in run order (a large
    Parquet file is split into several sources), with what identifies its content: a local
    file's size and modification time; an object's size and version as its store's listing gave
    them (store.version: ETag, VersionId, generation, blob id). Nothing is hashed: a 10 TB input
    is not read twice."""
    entries: dict[str, dict] = {}
    for s in sources:
        if s.path in entries:
            continue
        if s.is_uri:
            entries[s.path] = {"path": s.path, "bytes": s.size, "version": s.version}
        else:
            st = os.stat(s.path)
            entries[s.path] = {"path": s.path, "bytes": st.st_size, "modified_ns": st.st_mtime_ns}
    return list(entries.values())
