"""JSON records read whole (input.raw_column): each record's JSON text in one string column.

Nested records whose shape varies from record to record (raw agent trajectories: a field that is
a string here and an object there, keys present in some steps only) do not survive a column per
field: Arrow would unify their types, adding null keys and refusing mixed ones. Read whole, a
record reaches the step that parses it exactly as the file has it. A file is JSON lines (read a
line at a time) or, as some releases ship samples, one JSON array of records (parsed whole, so
meant for samples, not for large data). A record is a JSON object, or an array (a session
stored as its list of steps); anything else is a bad row, with its line (or, in an array, its
position) and why.
"""

from __future__ import annotations

from typing import Callable, Iterator

import orjson
import pyarrow as pa

from curate.errors import InputError


def check_format(source, raw_column: str | None) -> None:
    if raw_column is not None and source.format != "jsonl":
        raise InputError(
            f"{source.path}: input.raw_column reads JSON (lines or an array of records); this file is "
            f"{source.format}, whose rows are records as they are: leave input.raw_column empty"
        )


def reader(column: str) -> Callable:
    def read(source, batch_rows: int, on_bad_row: str, meter) -> Iterator:
        from curate.io.bad_rows import BadRows
        from curate.io.file_stream import input_stream

        schema = pa.schema([(column, pa.string())])
        texts: list[str] = []
        bad = BadRows()
        for where, text, error in _records(source.path, input_stream(source, meter)):
            if error is not None:
                bad.add(where, text, error)
            else:
                texts.append(text)
            if len(texts) >= batch_rows:
                yield pa.RecordBatch.from_pydict({column: texts}, schema=schema), bad
                texts, bad = [], BadRows()
        if texts or len(bad):
            yield (pa.RecordBatch.from_pydict({column: texts}, schema=schema) if texts else None), bad

    return read


def _records(path: str, opened: pa.NativeFile) -> Iterator[tuple[int, str, str | None]]:
    """(line, or position in an array; the record's JSON text; None, or why it is not a record) of
    the file at `path`, `opened` as a decompressed stream (a local file, or an object streamed)."""
    with opened as stream:
        head = stream.read(1 << 16)
        if head.lstrip()[:1] == b"[":
            yield from _array(path, head + stream.read())
            return
        rest, line_no = head, 1
        while True:
            block = stream.read(8 << 20)
            data = rest + block
            lines = data.split(b"\n")
            rest = lines.pop() if block else b""
            for line in lines:
                if line.strip():
                    yield line_no, *_one(line)
                line_no += 1
            if not block:
                return


def _one(line: bytes) -> tuple[str, str | None]:
    text = line.decode("utf-8", "replace").strip()
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        return text, f"malformed JSON: {e}"
    return text, None if isinstance(
        record, (dict, list)
    ) else f"expected a JSON object or array, got {type(record).__name__}"


def _array(path: str, data: bytes) -> Iterator[tuple[int, str, str | None]]:
    try:
        records = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    for i, record in enumerate(records, 1):
        text = orjson.dumps(record).decode()
        yield (
            i,
            text,
            None
            if isinstance(record, (dict, list))
            else (f"record {i} of the array is a {type(record).__name__}, not a JSON object or array"),
        )
