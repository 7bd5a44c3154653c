"""Runs with their input or output on a store: inputs uploaded under the names they have locally,
and the published files of a run read back from a store, to compare with a local run's."""

from __future__ import annotations

import glob
import hashlib
from pathlib import Path

import fsspec
import yaml


def local_digest(out: Path) -> dict[str, str]:
    """sha256 of every file under data/ and trace/ of a local run, by relative path."""
    files = sorted(p for d in ("data", "trace") for p in (out / d).rglob("*") if p.is_file())
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def store_digest(uri: str, options: dict | None = None) -> dict[str, str]:
    """The same for a run published at `uri` (read through a fresh listing; `options`: its
    filesystem's, where the environment does not give them)."""
    fs, root = fsspec.core.url_to_fs(uri, **(options or {}))
    fs.invalidate_cache()
    root = root.rstrip("/")
    found = {}
    for d in ("data", "trace"):
        for path in fs.find(f"{root}/{d}"):
            found[path.removeprefix(root).lstrip("/")] = hashlib.sha256(fs.cat_file(path)).hexdigest()
    return dict(sorted(found.items()))


def store_names(uri: str, options: dict | None = None) -> list[str]:
    """Every object under `uri`, relative to it."""
    fs, root = fsspec.core.url_to_fs(uri, **(options or {}))
    fs.invalidate_cache()
    root = root.rstrip("/")
    return sorted(p.removeprefix(root).lstrip("/") for p in fs.find(root))


def input_on_store(args: list, recipe: Path, uri: str, options: dict | None = None) -> list[str]:
    """`args` with the run's input (its --input, else the recipe's input.path) uploaded under `uri`,
    every file keeping its name relative to the glob's or directory's base, so `_id`s agree."""
    args = [str(a) for a in args]
    if "--input" in args:
        at = args.index("--input") + 1
    else:
        args += ["--input", yaml.safe_load(recipe.read_text())["input"]["path"]]
        at = len(args) - 1
    spec = Path(args[at])
    if glob.has_magic(args[at]):
        base, pattern = spec.parent, spec.name
    elif spec.is_dir():
        base, pattern = spec, ""
    else:
        base, pattern = spec.parent, spec.name
    fs, root = fsspec.core.url_to_fs(uri, **(options or {}))
    for f in sorted(p for p in base.rglob("*") if p.is_file()):
        fs.pipe_file(f"{root}/{f.relative_to(base).as_posix()}", f.read_bytes())
    args[at] = f"{uri}/{pattern}"
    return args
