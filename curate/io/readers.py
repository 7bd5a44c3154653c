"""Stream a Source as RecordBatches with an `_id` column; unparseable rows come back as BadRows.

JSONL is parsed in multi-megabyte chunks by pyarrow; only a chunk that fails is re-read line by
line, to name the bad lines exactly (file, line, field) without slowing the common case.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import xxhash

from curate.columns import put
from curate.errors import InputError
from curate.io import input_schema, raw_json, store, warc, webdataset
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
    """Rows a reader could not parse: where they were, their raw text and why. `unit` is what
    `line` counts, the word the trace and errors put before it: "line" (JSON lines, CSV), "row"
    (Parquet, Arrow), "member" (a tar's members: WebDataset), "offset" (bytes: WARC)."""

    line: list[int] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    error: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)  # the trace's reason: unparseable, or truncated
    unit: str = "line"

    def add(self, line: int, raw: bytes | str, error: str, reason: str = "unparseable") -> None:
        self.line.append(line)
        self.raw.append(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        self.error.append(error)
        self.reason.append(reason)

    def __len__(self) -> int:
        return len(self.line)


Chunk = tuple[pa.RecordBatch | None, BadRows | None]


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
        "jsonl": _jsonl,
        "parquet": functools.partial(_parquet, peek=peek),
        "csv": _csv,
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


def _input_stream(source: Source, meter: ReadMeter | None = None, block: int | None = None) -> pa.NativeFile:
    """The file's bytes front to back, decompressed as its name says (.gz, .zst, .bz2); an
    object in a store is streamed by range requests of `block` bytes (the store's stream block
    by default), never downloaded whole first. `meter` follows the position in the file itself
    (before decompression)."""
    codec = COMPRESSIONS.get(Path(source.path).suffix.lower())
    if source.is_uri:
        return store.open_stream(source.path, source.storage_options, codec, source.size, source.version, meter, block)
    raw = pa.OSFile(source.path)
    if meter is not None:
        meter.follow(raw)
    if codec == "gzip":
        return gunzip(raw)
    return pa.input_stream(raw, compression=codec)


def _arrow_batches(
    source: Source, meter: ReadMeter | None = None, block: int | None = None
) -> pa.ipc.RecordBatchStreamReader:
    """An Arrow stream file's batches: a local file mapped, not read; an object streamed (in
    requests of `block` bytes)."""
    if source.is_uri:
        return pa.ipc.open_stream(_input_stream(source, meter, block))
    mapped = pa.memory_map(source.path)
    if meter is not None:
        meter.follow(mapped)
    return pa.ipc.open_stream(mapped)


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
            with _arrow_batches(source, block=PEEK_BLOCK) as reader:
                schema = reader.schema
        elif source.format == "csv":
            with _open_csv(source, lambda row: "skip") as reader:
                schema = reader.schema
        elif source.format == "webdataset":
            schema = _webdataset_peek(source)
        elif source.format == "warc":
            schema = warc.SCHEMA  # fixed: not read
        else:
            schema = _jsonl_peek(source)
    for key, _ in () if schema is None or not partitions else source.partition:
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


def _fit(
    batch: pa.RecordBatch, schema: pa.Schema, first_row: int, bad: BadRows | None
) -> tuple[pa.RecordBatch, BadRows | None]:
    """`batch` (whose first row is the file's row `first_row`, 0-based) conformed to `schema`;
    rows with a value that cannot take its type are taken out into `bad` (as JSON text)."""
    fitted, misfits = input_schema.conform(batch, schema)
    if not misfits:
        return fitted, bad
    bad = bad if bad is not None else BadRows(unit="row")
    keep = np.ones(batch.num_rows, dtype=bool)
    for i, why in sorted(misfits.items()):
        keep[i] = False
        where = "" if bad.unit == "row" else f"row {first_row + i + 1}: "  # a row already says so
        bad.add(first_row + i + 1, orjson.dumps(batch.slice(i, 1).to_pylist()[0], default=str), where + why)
    return fitted.filter(pa.array(keep)), bad


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
        fitted, bad = _fit(batch, schema, source.first_row + done, None)
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
    with _arrow_batches(source, meter) as reader:
        for batch in reader:
            fitted, bad = _fit(batch, schema, done, None)
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


def _csv(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    bad = BadRows()

    def on_invalid(row) -> str:
        bad.add(
            row.number if row.number is not None else -1,
            row.text,
            f"expected {row.expected_columns} columns, got {row.actual_columns}",
        )
        return "skip"

    reader = _open_csv(source, on_invalid, meter, schema)
    row = 0  # data rows before this batch
    for batch in reader:
        batch = _drop_invalid_utf8(batch, row, bad)
        batch, _ = _fit(batch, schema, row, bad)
        row += batch.num_rows + len(bad)
        yield batch, bad if len(bad) else None
        bad = BadRows()


def _csv_options(source: Source) -> tuple[str, pcsv.ParseOptions]:
    delimiter = "\t" if ".tsv" in Path(source.path).suffixes else ","
    return delimiter, pcsv.ParseOptions(delimiter=delimiter)


def _open_csv(
    source: Source,
    on_invalid,
    meter: ReadMeter | None = None,
    schema: pa.Schema | None = None,
    column_types: dict | None = None,
) -> pcsv.CSVStreamingReader:
    """The CSV reader, its columns typed as `schema` says (a mixed field as text), else as the
    reader infers them from the first block."""
    delimiter, _ = _csv_options(source)
    if column_types is None and schema is not None:
        column_types = {f.name: pa.string() if input_schema.mixed(f) else f.type for f in schema}
    # UTF-8 is checked per batch (_drop_invalid_utf8): pyarrow's own check turns a column binary
    # (first block) or fails the whole file (later blocks), where one bad row should go to the trace.
    return pcsv.open_csv(
        _input_stream(source, meter),
        read_options=pcsv.ReadOptions(block_size=CHUNK_BYTES, use_threads=False),
        parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_invalid),
        convert_options=pcsv.ConvertOptions(check_utf8=False, column_types=column_types or {}),
    )


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
                    bad.add(
                        first_row + i + 2, value, f"field '{name}' is not valid UTF-8 ({e.reason} at byte {e.start})"
                    )
    return batch.filter(pa.array(keep))


@dataclass
class _Cut:
    """The end of a compressed file cut short: what was read of it before, and the error."""

    error: str


PIECE_BYTES = 1 << 16  # what a re-read of a file cut short decompresses at a time


def _blocks(source: Source, meter: ReadMeter | None, on_truncated: str) -> Iterator[bytes | _Cut]:
    """The file's (decompressed) bytes in blocks of CHUNK_BYTES. A compressed file cut short is
    an InputError that says so, or with on_truncated "keep", its bytes up to the cut (read again
    in small pieces, so that little is lost to the decompressor's last read) and then a _Cut."""
    done = 0
    try:
        with _input_stream(source, meter) as stream:
            while block := stream.read(CHUNK_BYTES):
                done += len(block)
                yield block
        return
    except (OSError, EOFError) as e:
        # cut short: ISA-L's EOFError, Arrow's "Truncated compressed stream"; else damaged data
        cut = isinstance(e, EOFError) or "truncated" in str(e).lower()
        if COMPRESSIONS.get(Path(source.path).suffix.lower()) is None or not cut:
            raise
        error = f"{type(e).__name__}: {e}"
    if on_truncated != "keep":
        raise InputError(
            f"{source.path}: the compressed file is cut short (truncated after {done:,} bytes of its "
            f"text were read: {error}); set input.on_truncated: keep to keep the rows before the cut "
            f"(the cut goes to the trace), or replace the file"
        )
    with _input_stream(source) as stream:
        skip = done  # given already, in the blocks before the cut
        try:
            while piece := stream.read(PIECE_BYTES):
                if skip >= len(piece):
                    skip -= len(piece)
                    continue
                yield piece[skip:]
                skip = 0
        except (OSError, EOFError):
            pass
    yield _Cut(error)


def _line_blocks(
    source: Source, meter: ReadMeter | None, on_truncated: str
) -> Iterator[tuple[bytes, int, BadRows | None]]:
    """(whole lines, the line number of the first, the cut) of the file: blocks of about
    CHUNK_BYTES cut after a newline; at a cut (a truncated compressed file read on), the last
    piece of a line before it is a bad row of reason `truncated`."""
    rest, line_no = b"", 1
    for block in _blocks(source, meter, on_truncated):
        if isinstance(block, _Cut):
            bad = BadRows()
            bad.add(
                line_no + rest.count(b"\n"),
                rest[-200:],
                f"the file is cut short here ({block.error}): what followed is lost",
                reason="truncated",
            )
            yield b"", line_no, bad  # `rest` is the line the cut went through: it is in `bad`
            return
        data = rest + block
        end = data.rfind(b"\n") + 1
        if end == 0:
            rest = data
            continue
        rest = data[end:]
        yield data[:end], line_no, None
        line_no += data.count(b"\n", 0, end)
    if rest.strip():
        yield rest, line_no, None


def _jsonl(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    assert schema is not None  # batches() passes the file's schema, scanned when not given
    modes = {f.name: mode for f in schema if (mode := input_schema.mixed(f))}
    for data, line_no, cut in _line_blocks(source, meter, on_truncated):
        if modes:
            data = _carried_as_text(data, modes)
        # its whole lines, parsed where they lie: a memoryview, not a copy of megabytes
        table, bad = _parse_jsonl_chunk(memoryview(data), schema, line_no) if data.strip() else (None, None)
        # every line is a row, a bad row or blank: the blank ones are counted, not traced
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data.strip() else 1)
        meter.blank_lines += lines - (table.num_rows if table is not None else 0) - (len(bad) if bad is not None else 0)
        if cut is not None:
            bad = bad if bad is not None else BadRows()
            for i in range(len(cut)):
                bad.add(cut.line[i], cut.raw[i], cut.error[i], cut.reason[i])
        batches = table.to_batches(max_chunksize=batch_rows) if table is not None else []
        if not batches:
            yield None, bad
        for i, batch in enumerate(batches):
            yield batch, bad if i == 0 else None


def _carried_as_text(data: bytes, modes: dict[str, str]) -> bytes:
    """The lines of `data` with the values of mixed fields as their text (input_schema.py), one
    line for one line (a line that does not parse is left as it is, for the parser to name)."""
    out = []
    for line in data.split(b"\n"):
        try:
            obj = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and any(k in obj for k in modes):
            for name, mode in modes.items():
                if name in obj:
                    obj[name] = input_schema.as_text(obj[name], mode)
            line = orjson.dumps(obj)
        out.append(line)
    return b"\n".join(out)


def _parse_options(schema: pa.Schema | None) -> pjson.ParseOptions:
    if schema is None:
        return pjson.ParseOptions()
    return pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")


def _read_json(data: bytes | memoryview, schema: pa.Schema | None) -> pa.Table:
    return pjson.read_json(
        pa.BufferReader(data),
        read_options=pjson.ReadOptions(use_threads=False, block_size=len(data) + 1),
        parse_options=_parse_options(schema),
    )


def _valid_utf8(data: bytes | memoryview) -> bool:
    """Whether `data` is UTF-8, checked by Arrow as one string value: bytes.decode would build
    the whole text as a Python str, 25 times slower."""
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data)).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _parse_jsonl_chunk(
    data: bytes | memoryview, schema: pa.Schema, first_line: int
) -> tuple[pa.Table | None, BadRows | None]:
    if _valid_utf8(data):  # pyarrow's JSON parser does not validate UTF-8
        try:
            return _read_json(data, schema), None
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
        unknown = [k for k in obj if k not in schema.names]
        if unknown:
            bad.add(where, line, f"field '{unknown[0]}' is not in the input's schema ({', '.join(schema.names)})")
            continue
        try:
            _read_json(line, schema)
        except pa.ArrowInvalid as e:
            why = next(
                (
                    f"field '{k}' {problem}"
                    for k, v in obj.items()
                    if (problem := input_schema.misfit(v, schema.field(k).type))
                ),
                None,
            )
            bad.add(where, line, why or f"{e}".replace("JSON parse error: ", ""))
            continue
        good.append(line)
    return (_read_json(b"\n".join(good), schema) if good else None), bad


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
            _scan_csv(source, merged)
        elif source.format == "webdataset":
            _scan_webdataset(source, merged)
        else:
            for data, _, _ in _line_blocks(source, None, on_truncated):
                for schema in _chunk_schemas(memoryview(data)):
                    merged.add(schema)
        return (merged.schema(keep_null=True) if merged.types else None), None


def _chunk_schemas(data: memoryview) -> Iterator[pa.Schema]:
    """The inferred schemas of the parts of `data` (whole JSON lines) that parse: a part where a
    field changes type, or a bad line, is split in halves until its parts parse (a bad line
    alone gives nothing: the reader traces it)."""
    try:
        table = _read_json(data, None)
        if table.num_columns:
            yield table.schema
        return
    except pa.ArrowInvalid:
        pass
    text = bytes(data)
    body = len(text.rstrip(b"\n"))
    mid = text.find(b"\n", len(text) // 2)
    if mid < 0 or mid + 1 >= body:
        mid = text.rfind(b"\n", 0, len(text) // 2)
    if mid < 0 or mid + 1 >= body:
        return  # one line
    yield from _chunk_schemas(data[: mid + 1])
    yield from _chunk_schemas(data[mid + 1 :])


CSV_NULLS = [
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "n/a",
    "nan",
    "null",
]  # pyarrow.csv's default null values


def _scan_csv(source: Source, merged: input_schema.Merge) -> None:
    """A CSV file's columns: the types its reader infers from the first block, widened (to
    float64, else text) where a later row's value does not fit; and a quote never closed, or a
    stray quote after a closing one, refused: pyarrow would publish the fragments as rows."""
    _check_quotes(source)
    with _open_csv(source, lambda row: "skip") as reader:
        inferred = reader.schema
    types = {f.name: f.type for f in inferred}
    as_text = {name: pa.string() for name in types}
    with _open_csv(source, lambda row: "skip", column_types=as_text) as reader:
        for batch in reader:
            for name, column in zip(batch.schema.names, batch.columns):
                if pa.types.is_string(types[name]):
                    continue
                values = pc.filter(column, pc.invert(pc.is_in(column, pa.array(CSV_NULLS))))
                types[name] = _fitting(values, types[name])
    for f in inferred:
        merged.add_field(f.name, types[f.name])


def _fitting(values: pa.Array, type_: pa.DataType) -> pa.DataType:
    """`type_`, or the first type every one of `values` (text, nulls taken out) casts to: from
    null, as the reader infers (int64, float64, boolean); from an integer, float64; else text."""
    if len(values) == 0:
        return type_
    if pa.types.is_null(type_):
        candidates = [pa.int64(), pa.float64(), pa.bool_()]
    else:
        candidates = [type_] + ([pa.float64()] if pa.types.is_integer(type_) else [])
    for candidate in candidates:
        try:
            values.cast(candidate)
            return candidate
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return pa.string()


def _check_quotes(source: Source) -> None:
    """InputError naming the line where a quoted field is left open or a quote strays after a
    closing one (Python's csv module in strict mode reads the file)."""
    import csv
    import io

    delimiter, _ = _csv_options(source)
    with _input_stream(source) as stream:
        text = io.TextIOWrapper(pa.PythonFile(stream, mode="r"), encoding="utf-8", errors="replace", newline="")
        reader = csv.reader(text, delimiter=delimiter, strict=True)
        try:
            for _ in reader:
                pass
        except csv.Error as e:
            raise InputError(
                f"{source.path}, line {reader.line_num}: {e}: a quoted field is left open or a quote "
                f"stands outside one, so the rows after it cannot be told apart (fix the quoting; "
                f'a field that holds a quote is written "like ""this""")'
            ) from None


def _scan_webdataset(source: Source, merged: input_schema.Merge) -> None:
    for item in webdataset.samples(source.path, source.storage_options):
        row = webdataset.sample_row(item, source.path)[0] if isinstance(item, webdataset.Sample) else None
        for name, value in (row or {}).items():
            merged.add_field(name, *webdataset.value_type(name, value))
