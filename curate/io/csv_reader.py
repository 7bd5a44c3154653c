"""CSV and TSV files as batches (pyarrow's streaming CSV reader), rows of the wrong width or with
invalid UTF-8 as bad rows; and a CSV file's schema, scanned from all its rows, with a quote left
open refused."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from curate.errors import InputError
from curate.io import file_stream, input_schema
from curate.io.bad_rows import BadRows, Chunk, fit_to_schema
from curate.io.file_stream import input_stream
from curate.io.meter import ReadMeter
from curate.io.sources import Source


def read_csv(
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

    reader = open_csv(source, on_invalid, meter, schema)
    row = 0  # data rows before this batch
    for batch in reader:
        batch = _drop_invalid_utf8(batch, row, bad)
        batch, _ = fit_to_schema(batch, schema, row, bad)
        row += batch.num_rows + len(bad)
        yield batch, bad if len(bad) else None
        bad = BadRows()


def _csv_options(source: Source) -> tuple[str, pcsv.ParseOptions]:
    delimiter = "\t" if ".tsv" in Path(source.path).suffixes else ","
    return delimiter, pcsv.ParseOptions(delimiter=delimiter)


def open_csv(
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
        input_stream(source, meter),
        read_options=pcsv.ReadOptions(block_size=file_stream.CHUNK_BYTES, use_threads=False),
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


def scan_csv(source: Source, merged: input_schema.Merge) -> None:
    """A CSV file's columns: the types its reader infers from the first block, widened (to
    float64, else text) where a later row's value does not fit; and a quote never closed, or a
    stray quote after a closing one, refused: pyarrow would publish the fragments as rows."""
    _check_quotes(source)
    with open_csv(source, lambda row: "skip") as reader:
        inferred = reader.schema
    types = {f.name: f.type for f in inferred}
    as_text = {name: pa.string() for name in types}
    with open_csv(source, lambda row: "skip", column_types=as_text) as reader:
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
    with input_stream(source) as stream:
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
