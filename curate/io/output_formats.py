"""Output formats besides Parquet, and the copy of a finished run to a remote filesystem.

The runner stages the output as Parquet parts in `data.tmp/`; for `output.format` jsonl or hf
each part is converted there (in the workers, one part per task) before `data.tmp` becomes
`data`, so publishing stays one rename and a killed run is published again from `_work`:
- jsonl: `part-NNNNN.jsonl` (`.jsonl.gz`, `.jsonl.zst` with `output.compression`), one JSON
  object a line, written by polars; a string column whose field metadata has JSON_TEXT holds
  JSON text (ADP's content and details) and is written nested, as that JSON, not as a string;
- hf: the layout of Hugging Face `Dataset.save_to_disk` (`data-NNNNN-of-MMMMM.arrow` Arrow
  streams, `state.json`, `dataset_info.json`), which `datasets.load_from_disk(out/data)` reads;
- webdataset: `part-NNNNN.tar` (img2dataset's layout: KEY.jpg|png|webp, KEY.txt, KEY.json per row,
  the key from `_key`, else `_id`) with `part-NNNNN.parquet` beside it holding the same rows'
  metadata (every column but the image), as img2dataset writes them. One tar per part: the parts
  are already of about `shard_mb` (encoded images do not compress), or merged up to it with
  `merge_shards`.
- megatron: `part-NNNNN.bin` / `.idx`, Megatron-LM's indexed dataset of the input_ids column
  (megatron.py);
- parquet with `output.pack`: each part's input_ids packed into rows of seq_len ids (packing.py).
The token formats write `_tokens.json` beside the parts (the leading _ makes Parquet dataset
readers skip it): the documents and tokens of every part and of the whole output (the tokenize
step's own total is in the manifest's step entry).

`output.upload` copies the published run (data/, trace/, then manifest.json last, so a
manifest there means the copy is whole) to any fsspec URI: s3://, gs://, file://, ...
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.engine.failpoints import failpoint
from curate.errors import CurateError
from curate.io import store
from curate.io.megatron import TOKENS, megatron_code, to_megatron, token_type
from curate.io.packing import to_packed

SUFFIX = {"none": ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}
PATTERN = {
    "parquet": "*.parquet",
    "jsonl": "part-*.jsonl*",
    "hf": "*.arrow",
    "webdataset": "*.tar",
    "megatron": "*.bin",
}
TOKEN_TOTALS = "_tokens.json"
# Field metadata of a string column holding JSON text that JSON lines output writes nested.
JSON_TEXT = b"curate.json_text"


def data_files(directory: Path, fmt: str) -> list[Path]:
    return sorted(directory.glob(PATTERN[fmt]))


def to_jsonl(part: Path, compression: str) -> None:
    """`part` (Parquet) as JSON lines beside it, then `part` removed; written as .tmp, then renamed."""
    import polars as pl

    target = part.with_name(part.name.removesuffix(".parquet") + SUFFIX[compression])
    tmp = target.with_name(target.name + ".tmp")
    codec = None if compression == "none" else compression
    pf = pq.ParquetFile(part)
    nested = [f.name for f in pf.schema_arrow if (f.metadata or {}).get(JSON_TEXT)]
    with pa.output_stream(str(tmp), compression=codec) as out:
        for batch in pf.iter_batches(batch_size=8192):
            if nested:
                out.write(_ndjson_nested(batch, nested))
            else:
                frame = pl.from_arrow(pa.Table.from_batches([batch]))
                assert isinstance(frame, pl.DataFrame)  # what a Table gives
                out.write(frame.write_ndjson().encode())
    os.replace(tmp, target)
    part.unlink()


def _ndjson_nested(batch: pa.RecordBatch, nested: list[str]) -> bytes:
    """`batch` as JSON lines, the JSON text of the `nested` columns embedded as JSON (orjson.Fragment)."""
    import orjson

    lines = []
    for row in batch.to_pylist():
        for name in nested:
            if row[name] is not None:
                row[name] = orjson.Fragment(row[name])
        lines.append(orjson.dumps(row))
    return b"\n".join(lines) + b"\n" if lines else b""


def to_arrow_stream(part: Path, target: Path) -> None:
    """`part` (Parquet) as an Arrow IPC stream file (what save_to_disk writes), then `part` removed."""
    pf = pq.ParquetFile(part)
    tmp = target.with_name(target.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, pf.schema_arrow) as writer:
        for batch in pf.iter_batches(batch_size=8192):
            writer.write_batch(batch)
    os.replace(tmp, target)
    part.unlink()


def to_webdataset(part: Path) -> None:
    """`part` (Parquet) as `part-NNNNN.tar` beside it, and `part` replaced by the rows' metadata
    (every column but `image`); both written as .tmp, then renamed."""
    import tarfile

    from curate.io.webdataset import add_member, sample_members

    pf = pq.ParquetFile(part)
    names = pf.schema_arrow.names
    key_column = "_key" if "_key" in names else "_id"
    target = part.with_suffix(".tar")
    tmp, meta_tmp = target.with_name(target.name + ".tmp"), part.with_name(part.name + ".meta.tmp")
    meta_columns = [n for n in names if n != "image"]
    with (
        tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar,
        pq.ParquetWriter(
            meta_tmp,
            pf.schema_arrow.remove(names.index("image")) if "image" in names else pf.schema_arrow,
            compression="zstd",
        ) as meta,
    ):
        for batch in pf.iter_batches(batch_size=1024):
            for row in batch.to_pylist():
                for name, data in sample_members(row, str(row[key_column])):
                    add_member(tar, name, data)
            meta.write_batch(batch.select(meta_columns))
    os.replace(tmp, target)
    os.replace(meta_tmp, part)


def written_columns(output) -> tuple[str, ...] | None:
    """The only columns a token output is written from (megatron: the ids; pack: the ids and each
    document's `_id`), so the Parquet a run stages for it carries no text it would read back and
    drop; None where the format writes every column."""
    if output.pack is not None:
        return (TOKENS, "_id")
    return (TOKENS,) if output.format == "megatron" else None


def check_tokens(output, schema: pa.Schema) -> None:
    """A token output (megatron, pack) gets an input_ids column of integer lists it can write, from
    the steps' output `schema` (its type unknown until the data shows it: null)."""
    if not output.tokens:
        return
    setting = "output.format" if output.format == "megatron" else "output.pack"
    if TOKENS in schema.names and pa.types.is_null(schema.field(TOKENS).type):
        return
    value_type = token_type(schema, setting)
    if output.format == "megatron":
        megatron_code(value_type, setting)


def write_token_totals(staging: Path, shards: list[dict], **about) -> None:
    totals = {key: sum(s[key] for s in shards) for key in shards[0] if key != "file"} if shards else {}
    (staging / TOKEN_TOTALS).write_text(
        json.dumps({**about, "documents": 0, "tokens": 0, **totals, "shards": shards}, indent=1) + "\n"
    )


def convert(staging: Path, fmt: str, compression: str | None, run_map, pack=None) -> None:
    """The Parquet parts in `staging` converted to `fmt` (and packed by `pack`, an output.pack);
    `run_map(fn, *lists)` runs them in parallel."""
    parts = sorted(staging.glob("part-*.parquet"))
    if pack is not None:
        codec = None if compression == "none" else compression or "zstd"
        shards = run_map(
            to_packed, parts, [pack.seq_len] * len(parts), [pack.pad_id] * len(parts), [codec] * len(parts)
        )
        write_token_totals(staging, shards, seq_len=pack.seq_len, last=pack.last)
    elif fmt == "megatron":
        write_token_totals(staging, run_map(to_megatron, parts))
    elif fmt == "jsonl":
        run_map(to_jsonl, parts, [compression or "none"] * len(parts))
    elif fmt == "webdataset":
        run_map(to_webdataset, parts)
    elif fmt == "hf":
        targets = [staging / f"data-{i:05d}-of-{len(parts):05d}.arrow" for i in range(len(parts))]
        if not parts:  # an empty dataset still loads: one stream with no batches
            pq.write_table(pa.table({}), staging / "part-00000.parquet")
            parts, targets = [staging / "part-00000.parquet"], [staging / "data-00000-of-00001.arrow"]
        run_map(to_arrow_stream, parts, targets)
        state: dict[str, Any] = {
            "_data_files": [{"filename": t.name} for t in targets],
            "_fingerprint": None,
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": None,
        }
        (staging / "state.json").write_text(json.dumps(state, indent=2))
        (staging / "dataset_info.json").write_text(json.dumps({"description": "written by curate"}))


def remote_fs(uri: str, what: str = "output.upload", options: dict | None = None):
    """The fsspec filesystem and root path of `uri`; a clear error naming `what` (the setting)
    when it cannot be opened (checked before a run starts, so a typo does not surface after
    hours of work). With `options` (output.storage_options) it is the output's filesystem
    (store.filesystem: its requests retried by their policy, counted as the output's)."""
    try:
        import fsspec
    except ImportError:
        raise CurateError(
            f"{what} needs fsspec (pip install 'curate[remote]'), plus s3fs for s3:// or gcsfs for gs://"
        ) from None
    if options is not None:
        from curate.io.store import filesystem

        try:
            fs, root = filesystem(uri, options, side="output")
        except CurateError as e:
            raise CurateError(f"{what}: {e}") from None
        return fs, root.rstrip("/")
    try:
        fs, root = fsspec.core.url_to_fs(uri)
    except (ImportError, ValueError) as e:
        raise CurateError(f"{what}: cannot open {uri}: {e}") from None
    return fs, root.rstrip("/")


def upload(out: Path, uri: str, options: dict | None = None) -> None:
    """Copy the published run in `out` to `uri` (its filesystem opened with `options`:
    output.storage_options), manifest.json last; nothing to do when the manifest there is already
    this run's. Files of curate's own names under `uri` are replaced."""
    fs, root = remote_fs(uri, options=options or {})
    manifest = (out / "manifest.json").read_bytes()
    remote_manifest = f"{root}/manifest.json"
    if fs.exists(remote_manifest) and fs.cat_file(remote_manifest) == manifest:
        return
    for name in ("manifest.json", "data", "trace", "README.md"):  # an earlier copy goes first: the manifest first
        if fs.exists(f"{root}/{name}"):
            fs.rm(f"{root}/{name}", recursive=True)
    made = set()
    for name in ("data", "trace"):
        local = out / name
        for path in sorted(p for p in local.rglob("*") if p.is_file()) if local.is_dir() else []:
            target = f"{root}/{path.relative_to(out).as_posix()}"
            if posixpath.dirname(target) not in made:
                fs.makedirs(posixpath.dirname(target), exist_ok=True)
                made.add(posixpath.dirname(target))
            fs.put_file(str(path), target, **store.upload_options(fs, [path.stat().st_size]))
    if (out / "README.md").is_file():  # the run's card (curate/card.py), so the copy loads as a dataset too
        fs.pipe_file(f"{root}/README.md", (out / "README.md").read_bytes())
    failpoint("uploaded-data")
    fs.pipe_file(remote_manifest, manifest)
