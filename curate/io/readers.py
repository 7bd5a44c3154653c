"""Stream a Source as RecordBatches with an `_id` column; unparseable rows come back as BadRows.

JSONL is parsed in multi-megabyte chunks by pyarrow; only a chunk that fails is re-read line by
line, to name the bad lines exactly (file, line, field) without slowing the common case.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import xxhash

from curate.columns import put
from curate.errors import InputError
from curate.io import raw_json, store, webdataset
from curate.io.gunzip import gunzip
from curate.io.meter import ReadMeter
from curate.io.sources import COMPRESSIONS, Source, named_errors, open_parquet

CHUNK_BYTES = 8 << 20
# What `file_schema` parses of a JSONL file (whole lines): enough for the types of its first rows.
PEEK_BYTES = 1 << 16
PEEK_ROWS = 64  # rows of a Parquet file's first batch a peek decodes
# Bytes a request of `file_schema`'s peek asks a store for. Its JSONL peek reads 64 KB of every
# input file, 32 at once: in a stream's 8 MB blocks, the next fetched ahead, that downloaded 16 MB
# a file, and the run process held 548-578 MB after peeking 69 JSONL.gz objects on moto (281 MB so).
PEEK_BLOCK = 1 << 18
# What `file_schema` reads of a WebDataset shard: its first samples.
WEBDATASET_PEEK = 64


@dataclass
class BadRows:
    """Rows a reader could not parse: where they were, their raw text and why."""

    line: list[int] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    error: list[str] = field(default_factory=list)

    def add(self, line: int, raw: bytes | str, error: str) -> None:
        self.line.append(line)
        self.raw.append(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        self.error.append(error)

    def __len__(self) -> int:
        return len(self.line)


Chunk = tuple[pa.RecordBatch | None, BadRows | None]


def read_source(source: Source, *, id_column: str | None = None, batch_rows: int = 8192,
                on_bad_row: str = "trace", raw_column: str | None = None,
                meter: ReadMeter | None = None, peek: bool = False) -> Iterator[Chunk]:
    """Batches of `source` with `_id` added (or taken from `id_column`), in file order; with
    `raw_column`, JSON records whole as their text in that one column (raw_json.py). `meter`
    follows how many of the file's bytes have been read, batch by batch. `peek`: the caller
    wants the first batches only (open_parquet's peek; the other formats stream anyway)."""
    readers = {"jsonl": _jsonl, "parquet": functools.partial(_parquet, peek=peek), "csv": _csv,
               "arrow_stream": _arrow_stream, "webdataset": _webdataset}
    reader = readers[source.format] if raw_column is None else raw_json.reader(raw_column)
    with named_errors(source.path, source.format):
        _not_empty(source)
        raw_json.check_format(source, raw_column)
        row = 0
        chunks = reader(source, batch_rows, on_bad_row, meter or ReadMeter())
        for batch, bad in (_then_unchanged(chunks, source, peek) if source.is_uri else chunks):
            if bad is not None and len(bad) and on_bad_row == "fail":
                raise InputError(f"{source.path}, line {bad.line[0]}: {bad.error[0]} "
                                 f"(set input.on_bad_row: trace to send such rows to the trace instead)")
            if batch is not None and batch.num_rows:
                batch = _add_partition(batch, source)
                batch = _add_id(batch, source, row, id_column)
                row += batch.num_rows
            yield batch, bad
        if row == 0 and source.format != "parquet":
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


def _not_empty(source: Source) -> None:
    size = source.size if source.is_uri else Path(source.path).stat().st_size
    if size == 0:
        raise InputError(f"{source.path}: the file is empty")


def _input_stream(source: Source, meter: ReadMeter | None = None, block: int | None = None) -> pa.NativeFile:
    """The file's bytes front to back, decompressed as its name says (.gz, .zst, .bz2); an
    object in a store is streamed by range requests of `block` bytes (the store's stream block
    by default), never downloaded whole first. `meter` follows the position in the file itself
    (before decompression)."""
    codec = COMPRESSIONS.get(Path(source.path).suffix.lower())
    if source.is_uri:
        return store.open_stream(source.path, source.storage_options, codec, source.size, source.version, meter,
                                 block)
    raw = pa.OSFile(source.path)
    if meter is not None:
        meter.follow(raw)
    if codec == "gzip":
        return gunzip(raw)
    return pa.input_stream(raw, compression=codec)


def _arrow_batches(source: Source, meter: ReadMeter | None = None,
                   block: int | None = None) -> pa.ipc.RecordBatchStreamReader:
    """An Arrow stream file's batches: a local file mapped, not read; an object streamed (in
    requests of `block` bytes)."""
    if source.is_uri:
        return pa.ipc.open_stream(_input_stream(source, meter, block))
    mapped = pa.memory_map(source.path)
    if meter is not None:
        meter.follow(mapped)
    return pa.ipc.open_stream(mapped)


def file_schema(source: Source, raw_column: str | None = None) -> tuple[pa.Schema | None, int | None]:
    """The columns `read_source` gives for `source` (hive partition columns added, `_id` not), read
    cheaply: a Parquet footer, an Arrow stream's header, a CSV file's first block (as the reader
    infers its types), the whole lines in a JSONL file's first PEEK_BYTES. None where that shows
    nothing: a Parquet file without rows, or JSONL lines that do not parse (the reader traces
    them). In a JSONL peek a column that is null in every row peeked has the type null.
    Beside it, the rows the source will give where that read tells them (a Parquet footer), else
    None: the progress bars' total, without a second read of every footer."""
    rows = None
    with named_errors(source.path, source.format):
        _not_empty(source)
        raw_json.check_format(source, raw_column)
        if raw_column is not None:
            schema = pa.schema([(raw_column, pa.string())])
        elif source.format == "parquet":
            pf = open_parquet(source.path, source.storage_options, source.size, source.version)
            schema = pf.schema_arrow if pf.metadata.num_rows else None
            rows = parquet_rows(pf.metadata, source)
        elif source.format == "arrow_stream":
            with _arrow_batches(source, block=PEEK_BLOCK) as reader:
                schema = reader.schema
        elif source.format == "csv":
            with _open_csv(source, lambda row: "skip") as reader:
                schema = reader.schema
        elif source.format == "webdataset":
            schema = _webdataset_peek(source)
        else:
            schema = _jsonl_peek(source)
    for key, _ in () if schema is None else source.partition:
        if key not in schema.names:
            schema = schema.append(pa.field(key, pa.string()))
    return schema, rows


def parquet_rows(meta, source: Source) -> int:
    """The rows of `source`'s row groups, from its file's footer (`meta`)."""
    groups = range(meta.num_row_groups) if source.row_groups is None else source.row_groups
    return sum(meta.row_group(i).num_rows for i in groups)


def _jsonl_peek(source: Source) -> pa.Schema | None:
    with _input_stream(source, block=PEEK_BLOCK) as stream:
        data = stream.read(PEEK_BYTES)
        while b"\n" not in data and len(data) < CHUNK_BYTES:  # a first line longer than the peek
            more = stream.read(PEEK_BYTES)
            if not more:
                break
            data += more
    cut = data.rfind(b"\n")
    lines = data[: cut + 1] if cut >= 0 else data
    try:
        return _read_json(lines, None).schema if lines.strip() else None
    except pa.ArrowInvalid:
        return None


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
            raise InputError(f"{source.path}: id column '{id_column}' (input.id_column) not found; "
                             f"columns are: {', '.join(batch.schema.names)}")
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


def _parquet(source: Source, batch_rows: int, on_bad_row: str, meter: ReadMeter, peek: bool = False) -> Iterator[Chunk]:
    pf = open_parquet(source.path, source.storage_options, source.size, source.version, peek)
    groups = list(source.row_groups) if source.row_groups is not None else None
    rows, done = parquet_rows(pf.metadata, source), 0
    size = source.byte_size()
    # A peek decodes a few rows: a Parquet batch's columns are the file's whatever its length (a
    # whole first batch of a 20 MB file's text took 0.3 CPU-s, before any worker could start)
    for batch in pf.iter_batches(batch_size=min(batch_rows, PEEK_ROWS) if peek else batch_rows, row_groups=groups):
        done += batch.num_rows
        meter.share(done, rows, size)  # of the file's bytes, as the plan weighs a task of some of its row groups
        yield batch, None


def _arrow_stream(source: Source, batch_rows: int, on_bad_row: str, meter: ReadMeter) -> Iterator[Chunk]:
    with _arrow_batches(source, meter) as reader:
        yield from ((batch, None) for batch in reader)


def _webdataset(source: Source, batch_rows: int, on_bad_row: str, meter: ReadMeter) -> Iterator[Chunk]:
    """Samples of a tar shard as rows (curate/io/webdataset.py); malformed ones as bad rows whose
    line is the position of their first member in the tar and whose error names the member."""
    schema: pa.Schema | None = None
    rows: list[dict] = []
    bad = BadRows()

    def flush() -> Chunk:
        nonlocal schema, rows, bad
        if schema is None and rows:
            schema = webdataset.file_schema(rows)
        batch = webdataset.rows_batch(rows, schema) if rows else None
        chunk = (batch, bad if len(bad) else None)
        rows, bad = [], BadRows()
        return chunk

    for item in webdataset.samples(source.path, source.storage_options, meter):
        if isinstance(item, webdataset.Malformed):
            bad.add(item.position, item.members, item.error)
            continue
        row, problem = webdataset.sample_row(item, source.path)
        if row is not None and schema is not None:
            problem = webdataset.misfit(row, schema)
        if problem is not None:
            bad.add(item.first, ", ".join(item.names), problem)
        else:
            rows.append(row)
        if len(rows) == batch_rows:
            yield flush()
    if rows or len(bad):
        yield flush()


def _csv(source: Source, batch_rows: int, on_bad_row: str, meter: ReadMeter) -> Iterator[Chunk]:
    bad = BadRows()

    def on_invalid(row) -> str:
        bad.add(row.number if row.number is not None else -1, row.text,
                f"expected {row.expected_columns} columns, got {row.actual_columns}")
        return "skip"

    reader = _open_csv(source, on_invalid, meter)
    row = 0  # data rows before this batch
    for batch in reader:
        batch = _drop_invalid_utf8(batch, row, bad)
        row += batch.num_rows + len(bad)
        yield batch, bad if len(bad) else None
        bad = BadRows()


def _open_csv(source: Source, on_invalid, meter: ReadMeter | None = None) -> pcsv.CSVStreamingReader:
    """The CSV reader; it reads the first block to infer the columns' types."""
    delimiter = "\t" if ".tsv" in Path(source.path).suffixes else ","
    # UTF-8 is checked per batch (_drop_invalid_utf8): pyarrow's own check turns a column binary
    # (first block) or fails the whole file (later blocks), where one bad row should go to the trace.
    return pcsv.open_csv(_input_stream(source, meter),
                         read_options=pcsv.ReadOptions(block_size=CHUNK_BYTES, use_threads=False),
                         parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_invalid),
                         convert_options=pcsv.ConvertOptions(check_utf8=False))


def _drop_invalid_utf8(batch: pa.RecordBatch, first_row: int, bad: BadRows) -> pa.RecordBatch:
    """`batch` without its rows holding invalid UTF-8 (added to `bad`, naming row and field).
    A full validation per batch is cheap; the row-by-row search runs only for a batch that fails."""
    try:
        batch.validate(full=True)
        return batch
    except pa.ArrowInvalid:
        pass
    keep = np.ones(batch.num_rows, dtype=bool)
    for name, column in zip(batch.schema.names, batch.columns):
        if not pa.types.is_string(column.type):
            continue
        for i, value in enumerate(column.cast(pa.binary()).to_pylist()):
            if keep[i] and value is not None:
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError as e:
                    keep[i] = False
                    # line = data row + 1 (the header), exact unless earlier fields span lines
                    bad.add(first_row + i + 2, value, f"field '{name}' is not valid UTF-8 "
                                                      f"({e.reason} at byte {e.start})")
    return batch.filter(pa.array(keep))


def _jsonl(source: Source, batch_rows: int, on_bad_row: str, meter: ReadMeter) -> Iterator[Chunk]:
    schema: pa.Schema | None = None
    line_no = 1  # line number of the first line of `data`
    rest = b""
    with _input_stream(source, meter) as stream:
        while True:
            block = stream.read(CHUNK_BYTES)
            data = rest + block
            end = len(data)
            if block:
                end = data.rfind(b"\n") + 1
                if end == 0:
                    rest = data
                    continue
                rest = data[end:]
            elif not data.strip():
                return
            else:
                rest = b""
            # its whole lines, parsed where they lie: a memoryview, not a copy of megabytes
            table, bad, schema = _parse_jsonl_chunk(memoryview(data)[:end], schema, line_no, source)
            line_no += data.count(b"\n", 0, end)
            batches = table.to_batches(max_chunksize=batch_rows) if table is not None else []
            if not batches:
                yield None, bad
            for i, batch in enumerate(batches):
                yield batch, bad if i == 0 else None
            if not block:
                return


def _parse_options(schema: pa.Schema | None) -> pjson.ParseOptions:
    if schema is None:
        return pjson.ParseOptions()
    return pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")


def _read_json(data: bytes | memoryview, schema: pa.Schema | None) -> pa.Table:
    return pjson.read_json(pa.BufferReader(data), read_options=pjson.ReadOptions(use_threads=False, block_size=len(data) + 1),
                           parse_options=_parse_options(schema))


def _settle(schema: pa.Schema) -> pa.Schema:
    """The file's schema from its first rows; all-null fields become strings so later values fit."""
    return pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in schema])


def _valid_utf8(data: bytes | memoryview) -> bool:
    """Whether `data` is UTF-8, checked by Arrow as one string value: bytes.decode would build
    the whole text as a Python str, 25 times slower."""
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data)).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _parse_jsonl_chunk(data: bytes | memoryview, schema: pa.Schema | None, first_line: int,
                       source: Source) -> tuple[pa.Table | None, BadRows | None, pa.Schema]:
    if _valid_utf8(data):  # pyarrow's JSON parser does not validate UTF-8
        try:
            table = _read_json(data, schema)
            if schema is None and not table.num_columns:  # blank lines only: the first row sets the schema
                return None, None, None
            if schema is None:
                schema = _settle(table.schema)
                table = table.cast(schema)
            return table, None, schema
        except pa.ArrowInvalid:
            pass
    # Slow path, only for a chunk with a problem: find the bad lines one by one.
    data = bytes(data)
    bad, good = BadRows(), []
    for offset, line in enumerate(data.split(b"\n")):
        if not line.strip():
            continue
        where = first_line + offset
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            bad.add(where, line, f"not valid UTF-8 ({e.reason} at byte {e.start})")
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            bad.add(where, line, f"malformed JSON: {e}")
            continue
        if not isinstance(obj, dict):
            bad.add(where, line, f"expected a JSON object, got {type(obj).__name__}")
            continue
        if schema is None:  # the first good line sets the file's schema
            schema = _settle(_read_json(line, None).schema)
        else:
            unknown = [k for k in obj if k not in schema.names]
            if unknown:
                bad.add(where, line, f"field '{unknown[0]}' is not in the file's schema (from its first rows: "
                                     f"{', '.join(schema.names)})")
                continue
            try:
                _read_json(line, schema)
            except pa.ArrowInvalid as e:
                bad.add(where, line, f"{e}".replace("JSON parse error: ", ""))
                continue
        good.append(line)
    if not good:
        return None, bad, schema
    try:
        table = _read_json(b"\n".join(good), schema)
    except pa.ArrowInvalid as e:  # rows fine alone but not together: types differ between rows
        last = first_line + data.count(b"\n")
        raise InputError(f"{source.path}, lines {first_line}-{last}: fields change type between rows: {e}") from None
    return table, bad, schema
