"""Rebuilding a contained table B from its container A.

What makes the rebuild exact and cheap: the column mapping, B's schema (with metadata),
B's file layout, and for every row of B, in B's order, the position of an equal row in
A (A's row order is fixed by the reader). The rebuild is then a `take` and a cast.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError

from .reader import arrow_schema, file_schemas, partition_types, read_table
from .tables import Table


def schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def row_positions(a: Table, b: Table, mapping: dict[str, str]) -> np.ndarray:
    """For each row of B in order, the first row of A whose mapped columns are equal."""
    b_cols = list(mapping)
    a_data = read_table(a, [mapping[c] for c in b_cols]).rename_columns([f"__c{k}" for k in range(len(b_cols))])
    a_data = a_data.append_column("__a", pa.array(np.arange(a_data.num_rows, dtype=np.int64)))
    b_data = read_table(b, b_cols).rename_columns([f"__c{k}" for k in range(len(b_cols))])
    b_data = b_data.append_column("__b", pa.array(np.arange(b_data.num_rows, dtype=np.int64)))
    keys = ", ".join(f"__c{k}" for k in range(len(b_cols)))
    on = " AND ".join(f"b.__c{k} IS NOT DISTINCT FROM a.__c{k}" for k in range(len(b_cols)))
    con = duckdb.connect()
    con.register("a_rows", a_data)
    con.register("b_rows", b_data)
    pos = con.sql(
        f"SELECT a.__a FROM b_rows b LEFT JOIN (SELECT {keys}, min(__a) AS __a FROM a_rows GROUP BY {keys}) a "
        f"ON {on} ORDER BY b.__b"
    ).to_arrow_table().column(0)
    if pos.null_count:
        raise CurateError(f"{b.path}: {pos.null_count} rows have no equal row in {a.path}; it is not contained")
    return pos.to_numpy()


def rebuild(a: Table, positions: np.ndarray, mapping: dict[str, str], schema: pa.Schema) -> pa.Table:
    """B as an Arrow table: A's mapped columns at `positions`, renamed and cast to B's schema."""
    b_cols = list(mapping)
    a_data = read_table(a, [mapping[c] for c in b_cols]).take(pa.array(positions))
    return a_data.rename_columns(b_cols).select(schema.names).cast(schema)


def file_layout(b: Table) -> list[dict]:
    """B's Parquet files: path relative to B, row count, own schema (partition columns live in the path)."""
    root = Path(b.path)
    layout = []
    for f, schema in zip(b.files, file_schemas(b)):
        rel = Path(f.path).relative_to(root).as_posix() if b.partitioned else ""
        layout.append(
            {
                "relpath": rel,
                "rows": pq.ParquetFile(f.path).metadata.num_rows,
                "schema": schema_to_text(schema),
            }
        )
    return layout


def write_rebuilt(data: pa.Table, path: str | Path, layout: list[dict], partition_keys: list[str]) -> None:
    """Writes B back as it was laid out: one file, or its partition files. Temp name, then rename."""
    path = Path(path)
    tmp = path.with_name(path.name + ".restoring")
    if tmp.exists():
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    offset = 0
    for f in layout:
        schema = schema_from_text(f["schema"])
        part = data.slice(offset, f["rows"]).drop_columns([k for k in partition_keys if k in data.column_names])
        offset += f["rows"]
        target = tmp / f["relpath"] if f["relpath"] else tmp
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(part.select(schema.names).cast(schema), target)
    if offset != data.num_rows:
        raise CurateError(f"{path}: rebuilt {data.num_rows} rows but the layout holds {offset}")
    os.replace(tmp, path)


def table_schema(b: Table) -> tuple[pa.Schema, list[str]]:
    """B's full schema and its partition keys."""
    return arrow_schema(b), list(partition_types(b))
