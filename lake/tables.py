"""Table discovery in a lake and table fingerprints.

A table is a Parquet file, a CSV file, a JSONL file, or a partitioned Parquet
directory (hive `key=value` subdirectories, or a directory of `part-*` files).
Any other directory is a folder of tables and is searched recursively.
The fingerprint covers every file's path, size and mtime, so it changes when
any file of the table changes, and computing it reads no data. It can also change
when nothing did (a `touch`, the same bytes copied back): where that matters, for a
plan's tables and a deleted table's container, the content hash decides (same_data).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import xxhash

from curate.errors import CurateError

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
QUARANTINE_DIRNAME = ".curate-quarantine"


@dataclass(frozen=True)
class FileEntry:
    path: str  # absolute
    size: int
    mtime_ns: int


@dataclass
class Table:
    """One table of the lake: its name (path relative to the scan root it came from) and its files."""

    name: str
    path: str  # absolute path of the file or directory
    format: str  # parquet | csv | jsonl
    files: list[FileEntry]
    partitioned: bool = False
    # For partitioned directories: one {key: raw value} per file, in file order.
    partitions: list[dict[str, str | None]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def fingerprint(self) -> str:
        h = xxhash.xxh3_128()
        for f in self.files:
            h.update(f"{f.path}\0{f.size}\0{f.mtime_ns}\n".encode())
        return h.hexdigest()

    def content_hash(self) -> str:
        """xxh3-128 of the table's data: each file's place in the table and its bytes, streamed.
        Reads the whole table, so it is taken only for tables a plan may name (scan.py)."""
        h = xxhash.xxh3_128()
        buf = bytearray(1 << 20)
        for f in self.files:
            h.update(f"{os.path.relpath(f.path, self.path)}\0".encode())
            size = 0
            with open(f.path, "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    h.update(memoryview(buf)[:n])
                    size += n
            h.update(f"\0{size}\n".encode())  # where one file ends and the next begins
        return h.hexdigest()


def same_data(now: Table | None, fingerprint: str, content: str | None) -> bool:
    """Whether the table at a path `now` still holds the data recorded as (fingerprint, content).
    An unchanged fingerprint says so without reading; otherwise the content decides, so a touched
    file or a byte-identical copy is the same table. Records without a content hash (scans before
    it was recorded) have only the fingerprint."""
    if now is None:
        return False
    if now.fingerprint == fingerprint:
        return True
    return content is not None and now.content_hash() == content


def _format_of(name: str) -> str | None:
    low = name.lower()
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(CSV_SUFFIXES):
        return "csv"
    if low.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return None


def _entry(path: Path) -> FileEntry:
    st = path.stat()
    return FileEntry(str(path.resolve()), st.st_size, st.st_mtime_ns)


def _is_hive_dir(name: str) -> bool:
    key, sep, _ = name.partition("=")
    return bool(sep) and bool(key)


def _hidden(name: str) -> bool:
    # Spark/Hadoop markers and our own quarantine are not data.
    return name.startswith((".", "_"))


def _is_partitioned_dir(path: Path) -> bool:
    children = [c for c in os.scandir(path) if not _hidden(c.name)]
    if any(c.is_dir() and _is_hive_dir(c.name) for c in children):
        return True
    files = [c for c in children if c.is_file()]
    dirs = [c for c in children if c.is_dir()]
    # A directory named like a Parquet file, or holding only part files, is one table.
    if path.name.lower().endswith(PARQUET_SUFFIXES) and not dirs:
        return True
    return bool(files) and not dirs and all(
        c.name.startswith("part-") and _format_of(c.name) == "parquet" for c in files
    )


def _partitioned_table(name: str, path: Path) -> Table:
    files: list[tuple[Path, dict[str, str | None]]] = []

    def walk(d: Path, parts: dict[str, str | None]):
        for c in sorted(os.scandir(d), key=lambda e: e.name):
            if _hidden(c.name):
                continue
            if c.is_dir():
                key, sep, value = c.name.partition("=")
                if not sep:
                    raise CurateError(f"{d}: subdirectory {c.name!r} is not a key=value partition")
                value = unquote(value)
                walk(Path(c.path), {**parts, key: None if value == HIVE_NULL else value})
            elif _format_of(c.name) == "parquet":
                files.append((Path(c.path), parts))

    walk(path, {})
    return Table(
        name=name,
        path=str(path.resolve()),
        format="parquet",
        files=[_entry(p) for p, _ in files],
        partitioned=True,
        partitions=[parts for _, parts in files],
    )


def discover(roots: list[str | Path], exclude: list[str | Path] = ()) -> tuple[list[Table], list[dict]]:
    """Find the tables under `roots`, skipping the `exclude` directories (e.g. the scan's own
    output inside the lake); returns (tables, issues). A missing root is a user error."""
    tables: list[Table] = []
    issues: list[dict] = []
    skip = {Path(p).resolve() for p in exclude}
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise CurateError(f"{root}: no such file or directory")
        base = root.parent if root.is_file() else root
        _discover(root, base, tables, issues, skip)
    # Two roots may name the same table; keep the first.
    seen: set[str] = set()
    unique = []
    for t in tables:
        if t.path not in seen:
            seen.add(t.path)
            unique.append(t)
    names = [t.name for t in unique]
    if len(set(names)) != len(names):
        # Tables from different roots with the same relative name: qualify with the full path.
        for t in unique:
            t.name = t.path
    return sorted(unique, key=lambda t: t.name), issues


def _discover(path: Path, base: Path, tables: list[Table], issues: list[dict], skip: set[Path]) -> None:
    name = path.relative_to(base).as_posix() if path != base else path.name
    if skip and path.resolve() in skip:
        return
    try:
        if path.is_file():
            fmt = _format_of(path.name)
            if fmt is not None:
                tables.append(Table(name=name, path=str(path.resolve()), format=fmt, files=[_entry(path)]))
            return
        if _is_partitioned_dir(path):
            tables.append(_partitioned_table(name, path))
            return
        for c in sorted(os.scandir(path), key=lambda e: e.name):
            if not _hidden(c.name):
                _discover(Path(c.path), base, tables, issues, skip)
    except (OSError, CurateError) as e:
        issues.append({"table": name, "path": str(path), "kind": "unreadable", "detail": str(e)})


def table_at(path: str | Path) -> Table | None:
    """The table whose data is at `path` now (same discovery rules as a scan), or None when gone."""
    path = Path(path)
    if not path.exists():
        return None
    found, _ = discover([path])
    resolved = str(path.resolve())
    return next((t for t in found if t.path == resolved), None)
