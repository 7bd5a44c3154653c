"""Resolve a recipe's `input` into Sources: the units of reading work, in a fixed order."""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path

from curate.errors import InputError

SUFFIX_FORMATS = {
    ".parquet": "parquet", ".pq": "parquet",
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".csv": "csv", ".tsv": "csv",
    ".arrow": "arrow_stream",
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

    def fingerprint(self) -> list:
        st = os.stat(self.path)
        return [self.name, st.st_size, st.st_mtime_ns, list(self.row_groups or ())]


def file_format(path: str, declared: str | None = None) -> str:
    if declared and declared not in ("hf", "hf_disk"):
        return declared
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffixes[-1]]
    raise InputError(f"{path}: cannot tell the format from the extension; set input.format (parquet, jsonl, csv)")


def _hive_partition(rel_parent: Path) -> tuple[tuple[str, str], ...]:
    pairs = []
    for part in rel_parent.parts:
        key, eq, value = part.partition("=")
        if eq and key:
            pairs.append((key, value))
    return tuple(pairs)


def _is_data_file(p: Path) -> bool:
    name = p.name
    return p.is_file() and not name.startswith((".", "_")) and not name.endswith((".crc", ".tmp"))


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
        raise InputError(f"reading the Hugging Face dataset '{name}' needs the `datasets` package: pip install 'curate[hf]'") from None
    try:
        ds = datasets.load_dataset(name, split=split or "train")
    except Exception as e:  # datasets raises many types; all mean "not available here"
        raise InputError(f"Hugging Face dataset '{name}' (split {split or 'train'}) is not available locally: {e}") from None
    return [Source(f["filename"], "arrow_stream", f"{name}/{Path(f['filename']).name}") for f in ds.cache_files]


def discover(paths: str | list[str], declared_format: str | None = None, split: str | None = None) -> list[Source]:
    """All input files in a stable order. Raises InputError when nothing matches."""
    specs = [paths] if isinstance(paths, str) else list(paths)
    sources: list[Source] = []
    for spec in specs:
        if spec.startswith("hf:") or declared_format == "hf":
            sources += _hf_cache_sources(spec.removeprefix("hf:"), split)
            continue
        p = Path(spec)
        if p.is_dir() and ((p / "state.json").is_file() or (p / "dataset_dict.json").is_file()):
            sources += _hf_disk_sources(p, split)
            continue
        if p.is_dir():
            base = p
            files = sorted(f for f in p.rglob("*") if _is_data_file(f))
        else:
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches and not glob.has_magic(spec):
                raise InputError(f"input not found: {spec}")
            base = Path(spec.split("*")[0].split("?")[0].split("[")[0])
            base = base if base.is_dir() else base.parent
            files = [Path(m) for m in matches if _is_data_file(Path(m))]
        if not files:
            raise InputError(f"no input files match {spec}")
        for f in files:
            rel = f.relative_to(base) if f.is_relative_to(base) else Path(f.name)
            sources.append(Source(str(f), file_format(str(f), declared_format), rel.as_posix(), _hive_partition(rel.parent)))
    return sources


def split_parquet(sources: list[Source], target_bytes: int = 128 << 20) -> list[Source]:
    """Split large Parquet files into runs of row groups of about `target_bytes`, so one big
    file still keeps every worker busy. Row numbers (and so `_id`s) do not depend on the split."""
    import pyarrow.parquet as pq

    out = []
    for src in sources:
        if src.format != "parquet" or src.row_groups is not None or os.path.getsize(src.path) <= target_bytes:
            out.append(src)
            continue
        try:
            meta = pq.ParquetFile(src.path).metadata
        except Exception:  # unreadable: the reader reports it with the file name
            out.append(src)
            continue
        groups, size, row, first = [], 0, 0, 0
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            if groups and size + rg.total_byte_size > target_bytes:
                out.append(Source(src.path, src.format, src.name, src.partition, tuple(groups), first))
                groups, size, first = [], 0, row
            groups.append(i)
            size += rg.total_byte_size
            row += rg.num_rows
        out.append(Source(src.path, src.format, src.name, src.partition, tuple(groups), first))
    return out
