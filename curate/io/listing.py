"""Listing an input URI once, into the plan: a prefix (its subprefixes listed many at once:
find_all), a glob (fs.glob) or one object, each object with the `info` its listing gave (size,
ETag / generation / version), so that planning and fingerprints ask the store nothing more.
fsspec pages through large prefixes.

Curate run directories under a listed prefix are left out as they are locally (sources.py): a
run written into its input's prefix must not be read back.
"""

from __future__ import annotations

import glob
import posixpath
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath
from typing import Callable
from urllib.parse import urlparse

from curate.engine.rundir import layout
from curate.io import s3_listing, store

# The files curate and its peers write beside data, never data: names starting with . or _
# (_SUCCESS, _common_metadata, .crc files), temporary names.
SKIPPED_PREFIXES = (".", "_")
SKIPPED_SUFFIXES = (".crc", ".tmp")


def is_data_name(name: str) -> bool:
    return not name.startswith(SKIPPED_PREFIXES) and not name.endswith(SKIPPED_SUFFIXES)


@dataclass
class Listing:
    fs: object  # the fsspec filesystem
    base: PurePosixPath  # what names (and hive partitions) are relative to
    # The data objects, sorted: URI, name relative to `base` (or the URL's file name; a posix
    # path), listing info.
    files: list[tuple[str, str, dict]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # run directories left out, as URIs
    run_directory: bool | None = None  # the URI names a run directory: finished (True) or not


def in_unnamed_run_directory(
    f: PurePath, base: PurePath, pattern: tuple[str, ...], skipped: list, is_run: Callable[[PurePath], bool]
) -> bool:
    """Whether a glob's match `f` lies in a curate run directory (at or below `base`) reached
    through a wildcard: `out/*/data/*.parquet` names the runs' data/ and reads it, `out/**/*.parquet`
    does not. Pattern parts line up with the path's only before a `**`."""
    parts = f.parts
    for k in range(len(base.parts), len(parts)):  # the directory parts[:k], entered by parts[k]
        directory = type(f)(*parts[:k])
        if not is_run(directory):
            continue
        named = k < len(pattern) and "**" not in pattern[: k + 1] and not glob.has_magic(pattern[k])
        if not named:
            if directory not in skipped:
                skipped.append(directory)
            return True
    return False


def path_parts(name: str) -> tuple[str, ...]:
    """PurePosixPath(name).parts, without making the path object where `name` is already in the
    form pathlib would give it (every key of a usual listing): a tenth of the time, for 100,000."""
    if "//" in name or "/./" in name or name.endswith(("/", "/.")) or name.startswith("./") or name in ("", "."):
        return PurePosixPath(name).parts
    if name.startswith("/"):
        return ("/", *name[1:].split("/"))
    return tuple(name.split("/"))


def relative_name(parts: tuple[str, ...], base: tuple[str, ...]) -> str:
    """The path of `parts` relative to `base` (parts too), or its name where it is not below
    `base`, as a posix path: what PurePosixPath's relative_to and name give."""
    rooted = bool(parts) and parts[0].startswith("/")  # "/" or "//": a relative base holds no rooted path
    if parts[: len(base)] == base and (base or not rooted):
        return "/".join(parts[len(base) :]) or "."
    return PurePosixPath(PurePosixPath(*parts).name).as_posix()


def _glob_base(path: str) -> str:
    """The directory a glob starts from: its path up to the first wildcard."""
    fixed = path.split("*")[0].split("?")[0].split("[")[0]
    return fixed.rstrip("/") if fixed.endswith("/") else posixpath.dirname(fixed)


def list_uri(spec: str, options: dict) -> Listing:
    """The data objects `spec` names: every object under a prefix, a glob's matches, or one
    object (an http(s) URL is always one object: a web server lists nothing)."""
    fs, path = store.filesystem(spec, options)
    with store.store_errors(spec):
        fs.invalidate_cache()  # a listing fsspec kept from before would hide a changed object from --resume
        single = any(p in ("http", "https") for p in store.protocols(fs))
        info = None if glob.has_magic(path) and not single else fs.info(path)
        if info is None:
            found, base, complete = fs.glob(path, detail=True), _glob_base(path), False
        elif info["type"] == "directory" and not single:
            path = path.rstrip("/")
            found, base, complete = find_all(fs, path), path, True
        else:
            found, base, complete = {path: info}, posixpath.dirname(path), False
        listing = Listing(fs, PurePosixPath(base))
        runs = set() if single else _run_directories(fs, found, listing.base, complete)

        def is_run(directory: PurePath) -> bool:
            return str(directory) in runs

        base_parts = listing.base.parts
        if complete and is_run(listing.base):
            listing.run_directory = layout.Files(_arrow_fs(fs)).is_file(f"{base}/manifest.json")
            return listing
        skipped: list[PurePath] = []
        pattern = PurePosixPath(path).parts
        parts = {name: path_parts(name) for name in found}
        # The order of a local run's: a directory's files as paths, a glob's matches as strings.
        for name in sorted(found, key=parts.__getitem__ if complete else None):
            entry = found[name]
            if single:  # a URL: no directories to walk, and not a path to take apart
                listing.files.append((name, PurePosixPath(PurePosixPath(urlparse(name).path).name).as_posix(), entry))
                continue
            f = parts[name]
            if entry.get("type", "file") != "file" or not is_data_name(f[-1]):
                continue
            if runs and in_unnamed_run_directory(PurePosixPath(name), listing.base, pattern, skipped, is_run):
                continue
            listing.files.append((fs.unstrip_protocol(name), relative_name(f, base_parts), entry))
        listing.skipped = [fs.unstrip_protocol(str(d)) for d in skipped]
    return listing


SPLIT_LEVELS = 3  # how deep a prefix is split into subprefixes to list at once, at most


def find_all(fs, path: str) -> dict[str, dict]:
    """Every object under the prefix `path` with its info, as fs.find gives them, but listed many
    subprefixes at once: a store lists one prefix page after page (1,000 keys a request on S3),
    each page waiting on the one before, while pages of different subprefixes need not wait.
    The prefix is split one level at a time (a request each, listing that level's objects too)
    until there are subprefixes enough to keep REQUESTS_IN_FLIGHT requests going, or SPLIT_LEVELS.
    S3 the same way, its pages read for what the plan keeps alone (s3_listing.py)."""
    if s3_listing.lean(fs):
        return s3_listing.find(fs, path, store.REQUESTS_IN_FLIGHT, SPLIT_LEVELS)
    found: dict[str, dict] = {}
    prefixes = [path]
    for _ in range(SPLIT_LEVELS):
        deeper = []
        for entries in store.map_objects(lambda p: fs.ls(p, detail=True), prefixes, remote=True):
            for entry in entries:
                if entry["type"] == "directory":
                    deeper.append(entry["name"])
                else:
                    found[entry["name"]] = entry
        prefixes = deeper
        if len(prefixes) >= store.REQUESTS_IN_FLIGHT or not prefixes:
            break
    for listed in store.map_objects(lambda p: fs.find(p, detail=True), prefixes, remote=True):
        found.update(listed)
    return found


def _run_directories(fs, found: dict, base: PurePosixPath, complete: bool) -> set[str]:
    """The curate run directories at or below `base` on the way to the listed objects. Under a
    whole prefix the listing shows every run mark there is, so only the directories holding one
    are asked; a glob's matches do not show them, so every directory on their way is asked, many
    at once (a request or two each)."""
    if complete:
        candidates = {posixpath.dirname(k) for k in found if k.endswith("/manifest.json")} | {
            posixpath.dirname(posixpath.dirname(k)) for k in found if k.endswith(f"/{layout.WORK}/run.json")
        }
    else:
        candidates = {
            str(PurePosixPath(*PurePosixPath(k).parts[:i]))
            for k in found
            for i in range(len(base.parts), len(PurePosixPath(k).parts))
        }
    files = layout.Files(_arrow_fs(fs))
    ordered = sorted(candidates)
    marks = store.map_objects(lambda d: layout.is_run_directory(d, files), ordered, remote=True)
    return {d for d, is_run in zip(ordered, marks) if is_run}


def _arrow_fs(fs):
    """`fs` as a pyarrow filesystem, for layout.Files (how curate recognises its run directories)."""
    import pyarrow.fs as pafs

    return pafs.PyFileSystem(pafs.FSSpecHandler(fs))
