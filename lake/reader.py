"""Reading lake tables: their Arrow schema, their rows in a fixed order, and a duckdb source.

Every part of the lake code reads tables through here, so that stats, content checks,
verification, apply and restore all see the same columns, types and row order.
Row order of a table: its files in sorted path order, rows in file order; partition
columns (from `key=value` directories) are appended after the file's columns.
CSV and JSONL are read by duckdb. A CSV file's columns are read as text: its types are
given per column pair when it is compared (text.py), not guessed once from its text.
"""

from __future__ import annotations

import re
from functools import lru_cache

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError

from .tables import Table

_INT = re.compile(r"^-?\d{1,18}$")
# The first record of a CSV file (quoted fields may hold line breaks) and the line end after it.
_FIRST_RECORD = re.compile(rb'(?:[^"\r\n]|"(?:[^"]|"")*")*(\r\n|\n|\r)')
_HEAD_BYTES = 1 << 20


class TableReadError(CurateError):
    """A table cannot be read (corrupt or missing file, bad CSV/JSON, ...)."""

    kind = "unreadable"


class MixedSchemaError(TableReadError):
    """The files of one partitioned table have different schemas."""

    kind = "mixed_schema"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def partition_types(table: Table) -> dict[str, pa.DataType]:
    """int64 for a partition key whose values are all integers, else string (hive convention)."""
    keys: dict[str, list] = {}
    for parts in table.partitions:
        for k, v in parts.items():
            keys.setdefault(k, []).append(v)
    return {
        k: pa.int64() if all(v is None or _INT.match(v) for v in vals) and any(v is not None for v in vals) else pa.string()
        for k, vals in keys.items()
    }


def _line_end(path: str) -> str:
    """The line end of a CSV file, from the end of its header. duckdb's sniffer cannot find
    it when a quoted header cell holds a line break of another kind (Excel writes LF
    inside cells and CRLF between lines)."""
    with open(path, "rb") as f:
        m = _FIRST_RECORD.match(f.read(_HEAD_BYTES))
    return {b"\r\n": "\\r\\n", b"\r": "\\r"}.get(m.group(1), "\\n") if m else "\\n"


@lru_cache(maxsize=1024)
def _csv_options(path: str, _mtime_ns: int) -> str:
    return f"all_varchar=true, header=true, new_line={quote_str(_line_end(path))}"


def _nonparquet_source(path: str, fmt: str, mtime_ns: int) -> str:
    if fmt == "csv":
        try:
            return f"read_csv({quote_str(path)}, {_csv_options(path, mtime_ns)})"
        except OSError as e:
            raise TableReadError(f"{path}: cannot read ({e})") from e
    return f"read_json({quote_str(path)}, format='newline_delimited')"


def duckdb_source(table: Table) -> str:
    """A FROM-clause expression that reads the table in duckdb."""
    if table.format != "parquet":
        return _nonparquet_source(table.files[0].path, table.format, table.files[0].mtime_ns)
    files = "[" + ", ".join(quote_str(f.path) for f in table.files) + "]"
    if not table.partitioned or not table.partitions or not table.partitions[0]:
        # Explicitly off: duckdb would otherwise read `k=v` segments of the lake's own path as columns.
        return f"read_parquet({files}, hive_partitioning=false)"
    types = ", ".join(
        f"{quote_str(k)}: {'BIGINT' if t == pa.int64() else 'VARCHAR'}" for k, t in partition_types(table).items()
    )
    return f"read_parquet({files}, hive_partitioning=true, hive_types={{{types}}})"


def _file_schema(path: str) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except Exception as e:  # pyarrow raises several types for corrupt footers
        raise TableReadError(f"{path}: not a readable Parquet file ({e})") from e


def file_schemas(table: Table) -> list[pa.Schema]:
    return [_file_schema(f.path) for f in table.files]


def arrow_schema(table: Table) -> pa.Schema:
    """The table's schema; a partitioned table whose files disagree is a TableReadError."""
    if table.format != "parquet":
        return _nonparquet_schema(table.files[0].path, table.format, table.files[0].mtime_ns)
    if not table.files:
        raise TableReadError(f"{table.path}: no Parquet files")
    schemas = file_schemas(table)
    first = schemas[0]
    for f, s in zip(table.files[1:], schemas[1:]):
        if not s.remove_metadata().equals(first.remove_metadata()):
            raise MixedSchemaError(
                f"{table.path}: mixed schemas across files ({table.files[0].path}: {_short(first)}; {f.path}: {_short(s)})"
            )
    for k, t in partition_types(table).items():
        if k in first.names:
            raise MixedSchemaError(f"{table.path}: partition key {k!r} is also a column in the files")
        first = first.append(pa.field(k, t))
    return first


def _short(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}:{f.type}" for f in schema)


@lru_cache(maxsize=256)
def _nonparquet_schema(path: str, fmt: str, mtime_ns: int) -> pa.Schema:
    try:
        with duckdb.connect() as con:  # its own connection: another's unfinished result cannot block it
            return con.sql(f"SELECT * FROM {_nonparquet_source(path, fmt, mtime_ns)} LIMIT 0").to_arrow_table().schema
    except duckdb.Error as e:
        raise TableReadError(f"{path}: cannot read as {fmt.upper()} ({_first_line(e)})") from e


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def read_table(table: Table, columns: list[str] | None = None) -> pa.Table:
    """All rows of the table in its fixed order, optionally only `columns` (in that order)."""
    try:
        if table.format != "parquet":
            cols = "*" if columns is None else ", ".join(quote_ident(c) for c in columns)
            con = duckdb.connect()
            # One thread keeps duckdb's output in file order.
            con.execute("SET threads=1")
            src = duckdb_source(table)
            return con.sql(f"SELECT {cols} FROM {src}").to_arrow_table()
        schema = arrow_schema(table)
        ptypes = partition_types(table)
        parts = []
        for f, pvals in zip(table.files, table.partitions or [{}] * len(table.files)):
            file_cols = None if columns is None else [c for c in columns if c not in ptypes]
            t = pq.read_table(f.path, columns=file_cols)
            for k, typ in ptypes.items():
                if columns is None or k in columns:
                    t = t.append_column(pa.field(k, typ), pa.array([pvals.get(k)] * t.num_rows, pa.string()).cast(typ))
            parts.append(t)
        out_schema = schema if columns is None else pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        if not parts:
            return out_schema.empty_table()
        return pa.concat_tables([p.select(out_schema.names).cast(out_schema) for p in parts])
    except TableReadError:
        raise
    except (OSError, pa.ArrowException, duckdb.Error) as e:
        raise TableReadError(f"{table.path}: cannot read ({_first_line(e)})") from e
