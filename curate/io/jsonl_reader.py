"""JSON lines as batches: parsed in multi-megabyte chunks by pyarrow; only a chunk that fails is re-read
line by line, to name the bad lines exactly (file, line, field) without slowing the common case.
Also a JSONL file's schema: peeked from its first lines, or scanned from all of them."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.json as pjson

from curate.io import file_stream, input_schema
from curate.io.bad_rows import BadRows, Chunk
from curate.io.file_stream import PEEK_BLOCK, input_stream, line_blocks
from curate.io.meter import ReadMeter
from curate.io.sources import Source

# What `file_schema` parses of a JSONL file (whole lines): enough for the types of its first rows.
PEEK_BYTES = 1 << 16


def read_jsonl(
    source: Source,
    batch_rows: int,
    on_bad_row: str,
    meter: ReadMeter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
) -> Iterator[Chunk]:
    assert schema is not None  # batches() passes the file's schema, scanned when not given
    modes = {f.name: mode for f in schema if (mode := input_schema.mixed(f))}
    for data, line_no, cut in line_blocks(source, meter, on_truncated):
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


def peek_jsonl(source: Source) -> pa.Schema | None:
    with input_stream(source, block=PEEK_BLOCK) as stream:
        data = stream.read(PEEK_BYTES)
        while b"\n" not in data and len(data) < file_stream.CHUNK_BYTES:  # a first line longer than the peek
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


def scan_jsonl(source: Source, merged: input_schema.Merge, on_truncated: str = "fail") -> None:
    """The schemas of every part of a JSONL file, merged (a field whose type changes anywhere in
    it is seen: a mixed field, input_schema.py)."""
    for data, _, _ in line_blocks(source, None, on_truncated):
        for schema in _chunk_schemas(memoryview(data)):
            merged.add(schema)


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
