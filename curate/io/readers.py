"""Stream a Source as RecordBatches with an `_id` column; unparseable rows come back as BadRows.

`read_source` runs the reader of the file's format: JSONL (jsonl_reader.py), CSV (csv_reader.py),
WARC (warc.py), raw JSON records (raw_json.py), and here those of Parquet, Arrow streams and
WebDataset shards, which their own libraries parse. Here too the schema of a file: read cheaply
(`file_schema`), or of every row (`scan_schema`, which the preflight merges into the input's).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Generator, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.columns import put
from curate.errors import InputError
from curate.io import input_schema, raw_json, store, warc, webdataset
from curate.io.bad_rows import BadRows, Chunk, fit_to_schema
from curate.io.csv_reader import open_csv, read_csv, scan_csv
from curate.io.file_stream import PEEK_BLOCK, arrow_batches
from curate.io.jsonl_reader import peek_jsonl, read_jsonl, scan_jsonl
from curate.io.meter import ReadMeter
from curate.io.sources import Source, named_errors, open_parquet

PEEK_ROWS = 64  # rows of a Parquet file's first batch a peek decodes

# What `file_schema` reads of a WebDataset shard: its first samples.
WEBDATASET_PEEK = 64


def read_source(
    source: Source,
    *,
    id_column: str | None = None,
    batch_rows: int = 8192,
    on_bad_row: str = "trace",
    raw_column: str | None = None,
    meter: ReadMeter | None = None,
    peek: bool = False,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
    mime_types: list[str] | tuple[str, ...] | None = None,
) -> Generator[Chunk, None, None]:
    """Batches of `source` with `_id` added (or taken from `id_column`), in file order, in the
    columns of `schema` (the input's, decided from every file: input_schema.py; by default this
    file's own, read whole first); a row with a value that cannot take its type is a bad row. With
    `raw_column`, JSON records whole as their text in that one column (raw_json.py). `meter`
    follows how many of the file's bytes have been read, batch by batch. `peek`: the caller
    wants the first batches only (open_parquet's peek; the other formats stream anyway).
    `on_truncated`: "keep" reads a compressed file cut short up to the cut (a bad row says where).
    `mime_types`: a WARC file's payload types read (default: HTML and XHTML; curate/io/warc.py)."""
    readers: dict[str, Callable[..., Any]] = {
        "jsonl": read_jsonl,
        "parquet": functools.partial(_parquet, peek=peek),
        "csv": read_csv,
        "arrow_stream": _arrow_stream,
        "webdataset": _webdataset,
        "warc": warc.read,
    }
    meter = meter or ReadMeter()
    with named_errors(source.path, source.format):
        if _empty(source, on_bad_row, meter):
            return
        raw_json.check_format(source, raw_column)
        if raw_column is not None:
            reader = raw_json.reader(raw_column)
        else:
            if schema is None:
                schema = input_schema.merge([scan_schema(source, on_truncated=on_truncated)[0]])
            reader = functools.partial(readers[source.format], schema=schema, on_truncated=on_truncated)
            if source.format == "warc" and mime_types is not None:
                reader = functools.partial(reader, selection=warc.Selection(mime_types=tuple(mime_types)))
        row, bad_rows = 0, 0
        chunks = reader(source, batch_rows, on_bad_row, meter)
        for batch, bad in _then_unchanged(chunks, source, peek) if source.is_uri else chunks:
            bad_rows += len(bad) if bad is not None else 0
            if bad is not None and len(bad) and on_bad_row == "fail":
                raise InputError(
                    f"{source.path}, {bad.unit} {bad.line[0]}: {bad.error[0]} "
                    f"(set input.on_bad_row: trace to send such rows to the trace instead)"
                )
            if batch is not None and batch.num_rows:
                batch = _add_partition(batch, source)
                batch = _add_id(batch, source, row, id_column)
                row += batch.num_rows
            yield batch, bad
        if row == 0 and not bad_rows and source.format != "warc":  # no rows at all (a crawl file may hold no page)
            _empty(source, on_bad_row, meter, rows=0)
        elif row == 0 and source.format not in ("parquet", "warc"):
            raise InputError(f"{source.path}: no rows could be read from this file")


def _then_unchanged(chunks: Iterator[Chunk], source: Source, peek: bool) -> Iterator[Chunk]:
    """`chunks` of an object in a store, and an InputError after them if the object is no longer
    the version it was listed as (store.unchanged: a HEAD where its reads cannot say so). The ask
    goes out once the last chunk has been read, on a thread, while that chunk is processed: after
    it, the ask was a few percent of a whole read from S3. (A chunk is held back to know it is
    the last; not for a `peek`, whose caller wants the first chunk only.)"""
    if peek:
        yield from chunks
        store.unchanged(source.path, source.storage_options, source.version)
        return
    held = None
    for chunk in chunks:
        if held is not None:
            yield held
        held = chunk
    with ThreadPoolExecutor(1) as thread:
        asked = thread.submit(store.unchanged, source.path, source.storage_options, source.version)
        if held is not None:
            yield held
        asked.result()


EMPTY_FAILS = (
    "input.on_bad_row: fail refuses an empty input file; with trace, the default, it is skipped "
    "and counted in the manifest"
)


def is_empty_file(source: Source) -> bool:
    return (source.size if source.is_uri else Path(source.path).stat().st_size) == 0


def _empty(source: Source, on_bad_row: str, meter: ReadMeter, rows: int | None = None) -> bool:
    """Whether `source` is empty (no bytes; or, given `rows` 0, no rows): skipped and counted
    (`meter.empty`, the manifest's read counts) whatever its format, or an InputError with
    on_bad_row: fail."""
    if rows != 0 and not is_empty_file(source):
        return False
    if on_bad_row == "fail":
        raise InputError(f"{source.path}: the file is empty{'' if rows is None else ' (no rows)'} ({EMPTY_FAILS})")
    meter.empty = True
    return True


def file_schema(
    source: Source, raw_column: str | None = None, partitions: bool = True
) -> tuple[pa.Schema | None, int | None]:
    """The columns `read_source` gives for `source` (hive partition columns added unless not
    `partitions`, `_id` not), read
    cheaply: a Parquet footer, an Arrow stream's header, a CSV file's first block (as the reader
    infers its types), the whole lines in a JSONL file's first PEEK_BYTES. None where that shows
    nothing: a Parquet file without rows, or JSONL lines that do not parse (the reader traces
    them). In a JSONL peek a column that is null in every row peeked has the type null.
    Beside it, the rows the source will give where that read tells them (a Parquet footer), else
    None: the progress bars' total, without a second read of every footer."""
    rows = None
    with named_errors(source.path, source.format):
        if is_empty_file(source):
            return None, 0
        raw_json.check_format(source, raw_column)
        if raw_column is not None:
            schema = pa.schema([(raw_column, pa.string())])
        elif source.format == "parquet":
            pf = open_parquet(source.path, source.storage_options, source.size, source.version)
            schema = pf.schema_arrow if pf.metadata.num_rows else None
            rows = parquet_rows(pf.metadata, source)
        elif source.format == "arrow_stream":
            with arrow_batches(source, block=PEEK_BLOCK) as reader:
                schema = reader.schema
        elif source.format == "csv":
            with open_csv(source, lambda row: "skip") as reader:
                schema = reader.schema
        elif source.format == "webdataset":
            schema = _webdataset_peek(source)
        elif source.format == "warc":
            schema = warc.SCHEMA  # fixed: not read
        else:
            schema = peek_jsonl(source)
    for key, _ in () if schema is None or not partitions else source.partition:
        if key not in schema.names:
            schema = schema.append(pa.field(key, pa.string()))
    return schema, rows


def parquet_rows(meta, source: Source) -> int:
    """The rows of `source`'s row groups, from its file's footer (`meta`)."""
    groups = range(meta.num_row_groups) if source.row_groups is None else source.row_groups
    return sum(meta.row_group(i).num_rows for i in groups)


def _webdataset_peek(source: Source) -> pa.Schema | None:
    rows = []
    for item in webdataset.samples(source.path, source.storage_options):
        row = webdataset.sample_row(item, source.path)[0] if isinstance(item, webdataset.Sample) else None
        if row is not None:
            rows.append(row)
        if len(rows) == WEBDATASET_PEEK:
            break
    return webdataset.file_schema(rows) if rows else None


def _add_partition(batch: pa.RecordBatch, source: Source) -> pa.RecordBatch:
    for key, value in source.partition:
        if key not in batch.schema.names:
            batch = batch.append_column(key, pa.array([value] * batch.num_rows, pa.string()))
    return batch


def _add_id(batch: pa.RecordBatch, source: Source, start: int, id_column: str | None) -> pa.RecordBatch:
    if id_column:
        if id_column not in batch.schema.names:
            raise InputError(
                f"{source.path}: id column '{id_column}' (input.id_column) not found; "
                f"columns are: {', '.join(batch.schema.names)}"
            )
        ids = pc.cast(batch.column(id_column), pa.string())
        if ids.null_count:
            first = pc.index(pc.is_null(ids), True).as_py()
            raise InputError(f"{source.path}, row {start + first}: id column '{id_column}' is null")
    elif "_id" in batch.schema.names:  # already curated data keeps its ids
        return batch
    else:
        prefix = xxhash.xxh3_64_hexdigest(source.name.encode())[:12]
        first = source.first_row + start
        numbers = pa.array(np.arange(first, first + batch.num_rows, dtype=np.int64)).cast(pa.string())
        ids = pc.binary_join_element_wise(prefix, numbers, ":")
    return put(batch, "_id", ids)


def _parquet(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    peek: bool = False,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    pf = open_parquet(source.path, source.storage_options, source.size, source.version, peek)
    groups = list(source.row_groups) if source.row_groups is not None else None
    rows, done = parquet_rows(pf.metadata, source), 0
    size = source.byte_size()
    # A peek decodes a few rows: a Parquet batch's columns are the file's whatever its length (a
    # whole first batch of a 20 MB file's text took 0.3 CPU-s, before any worker could start)
    for batch in pf.iter_batches(batch_size=min(batch_rows, PEEK_ROWS) if peek else batch_rows, row_groups=groups):
        fitted, bad = fit_to_schema(batch, schema, source.first_row + done, None)
        done += batch.num_rows
        meter.share(done, rows, size)  # of the file's bytes, as the plan weighs a task of some of its row groups
        yield fitted, bad


def _arrow_stream(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    done = 0
    with arrow_batches(source, meter) as reader:
        for batch in reader:
            fitted, bad = fit_to_schema(batch, schema, done, None)
            done += batch.num_rows
            yield fitted, bad


def _webdataset(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    """Samples of a tar shard as rows (curate/io/webdataset.py) in the input's columns; malformed
    ones, and those with a field that cannot take its type, as bad rows whose position is that
    of their first member in the tar (unit "member") and whose error names the member."""
    rows: list[dict] = []
    bad = BadRows(unit="member")

    def flush() -> Chunk:
        nonlocal rows, bad
        batch = webdataset.rows_batch(rows, schema) if rows else None
        chunk = (batch, bad if len(bad) else None)
        rows, bad = [], BadRows(unit="member")
        return chunk

    for item in webdataset.samples(source.path, source.storage_options, meter):
        if isinstance(item, webdataset.Malformed):
            bad.add(item.position, item.members, item.error)
            continue
        row, problem = webdataset.sample_row(item, source.path)
        if row is not None:
            problem = webdataset.misfit(row, schema)
        if problem is not None:
            bad.add(item.first, ", ".join(item.names), problem)
        else:
            assert row is not None  # sample_row gives a row or a problem
            rows.append(row)
        if len(rows) == batch_rows:
            yield flush()
    if rows or len(bad):
        yield flush()


# The whole-file schemas the preflight merges into the input's (input_schema.py).


def scan_schema(
    source: Source, raw_column: str | None = None, on_truncated: str = "fail"
) -> tuple[pa.Schema | None, int | None]:
    """The schema of every row of `source` (hive partition columns not added), and its rows
    where a footer tells them. Parquet and Arrow: the file's header. JSONL, CSV and WebDataset:
    the whole file is read, so that a field whose type changes anywhere in it is seen (as a
    mixed field, input_schema.py); a CSV quote left open is an InputError."""
    with named_errors(source.path, source.format):
        if is_empty_file(source):
            return None, 0
        raw_json.check_format(source, raw_column)
        if raw_column is not None or source.format in ("parquet", "arrow_stream", "warc"):
            return file_schema(source, raw_column, partitions=False)
        merged = input_schema.Merge()
        if source.format == "csv":
            scan_csv(source, merged)
        elif source.format == "webdataset":
            _scan_webdataset(source, merged)
        else:
            scan_jsonl(source, merged, on_truncated)
        return (merged.schema(keep_null=True) if merged.types else None), None


def _scan_webdataset(source: Source, merged: input_schema.Merge) -> None:
    for item in webdataset.samples(source.path, source.storage_options):
        row = webdataset.sample_row(item, source.path)[0] if isinstance(item, webdataset.Sample) else None
        for name, value in (row or {}).items():
            merged.add_field(name, *webdataset.value_type(name, value))
