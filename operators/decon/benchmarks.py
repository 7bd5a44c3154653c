"""Benchmark items: each benchmark read through curate's own readers (any input curate reads), its
`columns` joined in order into one text per item, with the item's id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from curate.errors import InputError
from curate.io.readers import file_schema, read_source
from curate.io.sources import discover

# Between the fields of an item, and between the checked columns of a document: a line break, so
# that n-grams can straddle a question and its answer (datatrove's query/label overlap n-grams).
JOIN = "\n"


class Benchmark(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(..., min_length=1, description="Name in the trace and the report.")
    path: str | list[str] = Field(..., description="Any input curate reads: JSONL, Parquet, CSV, an HF save_to_disk "
                                                   "directory, hf:NAME (local cache), a glob or a list.")
    columns: list[str] = Field(["text"], min_length=1, description="The fields that make an item, joined in order.")
    id_column: str | None = Field(None, description="The item's id; default: its row number in the benchmark.")
    split: str | None = Field(None, description="The split of an HF dataset (default: every split).")


@dataclass
class Items:
    """One benchmark's items: their texts and ids, in file order."""

    texts: list[str]
    ids: list[str]


def check(bench: Benchmark, where: str) -> None:
    """The benchmark's files exist and have its columns (their first rows, read cheaply)."""
    for source in discover(bench.path, split=bench.split):
        schema, _ = file_schema(source)
        if schema is None:
            continue
        for column in [*bench.columns, *([bench.id_column] if bench.id_column else [])]:
            if column not in schema.names:
                raise InputError(f"{where} ({bench.name}): {source.path} has no column '{column}'; "
                                 f"its columns are: {', '.join(schema.names)}")


def read(bench: Benchmark, where: str) -> Items:
    texts: list[str] = []
    ids: list[str] = []
    row = 0
    for source in discover(bench.path, split=bench.split):
        for batch in _batches(source, where, bench):
            texts.extend(_joined(batch, bench, source.path, where))
            if bench.id_column:
                ids.extend(pc.cast(batch.column(bench.id_column), pa.string()).fill_null("").to_pylist())
            else:
                ids.extend(str(i) for i in range(row, row + batch.num_rows))
            row += batch.num_rows
    return Items(texts, ids)


def _batches(source, where: str, bench: Benchmark) -> Iterator[pa.RecordBatch]:
    for batch, bad in read_source(source, on_bad_row="fail"):
        if batch is None or not batch.num_rows:
            continue
        for column in [*bench.columns, *([bench.id_column] if bench.id_column else [])]:
            if column not in batch.schema.names:
                raise InputError(f"{where} ({bench.name}): {source.path} has no column '{column}'; "
                                 f"its columns are: {', '.join(n for n in batch.schema.names if n != '_id')}")
        yield batch


def _joined(batch: pa.RecordBatch, bench: Benchmark, path: str, where: str) -> list[str]:
    fields = []
    for column in bench.columns:
        values = batch.column(column)
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                or pa.types.is_integer(values.type) or pa.types.is_floating(values.type) or pa.types.is_null(values.type)):
            raise InputError(f"{where} ({bench.name}): {path}: column '{column}' is {values.type}, not text")
        fields.append(pc.cast(values, pa.string()).fill_null(""))
    if len(fields) == 1:
        return fields[0].to_pylist()
    return pc.binary_join_element_wise(*fields, JOIN).to_pylist()
