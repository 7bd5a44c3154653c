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

from .columns import type_family
from .reader import arrow_schema, duckdb_source, file_schemas, partition_types, quote_ident, read_table
from .tables import Table
from .text import read_as, side_sql


def schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def read_container(a: Table, mapping: dict[str, str], schema: pa.Schema) -> pa.Table:
    """A's columns that B maps to, in B's column order and under B's names. A CSV
    container's text is read as B's types, the way the scan compared them (text.py)."""
    if a.format != "csv":
        return read_table(a, list(mapping.values())).rename_columns(list(mapping))
    cols = []
    for b_col, a_col in mapping.items():
        t = schema.field(b_col).type
        how = read_as(type_family(t), str(t), a_text=True)
        value = side_sql(quote_ident(a_col), how, text=True)[0] if how else quote_ident(a_col)
        cols.append(f"{value} AS {quote_ident(b_col)}")
    con = duckdb.connect()
    con.execute("SET threads=1")  # keeps the file's row order
    return con.sql(f"SELECT {', '.join(cols)} FROM {duckdb_source(a)}").to_arrow_table()


def row_positions(container: pa.Table, b: pa.Table) -> np.ndarray:
    """For each row of B in order, the first row of the container with equal columns.

    Both tables carry B's column names; values compare null-safe, across widened types.
    """
    n = len(b.column_names)
    keyed = [f"__c{k}" for k in range(n)]
    a_rows = container.select(b.column_names).rename_columns(keyed)
    a_rows = a_rows.append_column("__a", pa.array(np.arange(a_rows.num_rows, dtype=np.int64)))
    b_rows = b.rename_columns(keyed).append_column("__b", pa.array(np.arange(b.num_rows, dtype=np.int64)))
    keys = ", ".join(keyed)
    on = " AND ".join(f"b.{k} IS NOT DISTINCT FROM a.{k}" for k in keyed)
    con = duckdb.connect()
    con.register("a_rows", a_rows)
    con.register("b_rows", b_rows)
    pos = con.sql(
        f"SELECT a.__a FROM b_rows b LEFT JOIN (SELECT {keys}, min(__a) AS __a FROM a_rows GROUP BY {keys}) a "
        f"ON {on} ORDER BY b.__b"
    ).to_arrow_table().column(0)
    if pos.null_count:
        raise CurateError(f"{pos.null_count} rows have no equal row in the container; the table is not contained")
    return pos.to_numpy()


def rebuild(container: pa.Table, positions: np.ndarray, schema: pa.Schema) -> pa.Table:
    """B as an Arrow table: the container's rows at `positions`, cast to B's schema."""
    return container.take(pa.array(positions)).select(schema.names).cast(schema)


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
