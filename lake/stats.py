"""Per-table statistics: schema, row count, and per-column min, max, nulls.

Parquet tables: read from the footers only (row-group statistics, aggregated), no data
scan. CSV/JSONL tables have no footer, so they are scanned once (the result is cached by
fingerprint like the rest). Values are mapped to plain JSON numbers/strings by a
monotone function per type family, so comparisons between tables stay sound.

A CSV column is text (text.py): its statistics are those of its non-empty text, plus,
for every type family all of that text parses as, the bounds of the parsed values.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.types as pt

from .columns import type_family
from .reader import TableReadError, arrow_schema, duckdb_source, partition_types, quote_ident, read_table
from .tables import Table
from .text import TEXT, TEXT_FAMILIES, canonical_sql, parsed_sql

_EPOCH = dt.datetime(1970, 1, 1)
# Writers cut long string/binary statistics (polars at 64 bytes, duckdb at 256), and a cut
# bound from one writer compared with an exact one from another could prune a true edge.
# A bound this long may have been cut, so it is not used.
TRUNCATION_BYTES = 64
_MICRO = dt.timedelta(microseconds=1)


@dataclass
class ColumnStats:
    name: str
    type: str
    family: str
    min: object = None  # None: unknown, or no non-null value
    max: object = None
    nulls: int | None = None  # None: unknown
    values: int | None = None  # non-null values; None: unknown
    # Text columns only: {family: [min, max]} for each family all the text parses as.
    parses: dict | None = None


@dataclass
class TableStats:
    rows: int
    distinct_rows: int | None  # known only for scanned (non-Parquet) tables
    columns: list[ColumnStats]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TableStats:
        return cls(d["rows"], d["distinct_rows"], [ColumnStats(**c) for c in d["columns"]])


def comparable(value, family: str):
    """A JSON value ordered like `value` within its family (None when there is no sound one)."""
    if value is None:
        return None
    if family == "int":
        return int(value)
    if family == "float":
        f = float(value)
        return None if math.isnan(f) else f
    if family == "string":
        raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
        if len(raw) >= TRUNCATION_BYTES:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if family == "binary":
        return None if len(value) >= TRUNCATION_BYTES else bytes(value).hex()  # hex keeps byte order
    if family == "bool":
        return bool(value)
    if family == "date":
        return value.toordinal()
    if family.startswith("timestamp"):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return (value - _EPOCH) // _MICRO
    if family == "time":
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return None


def compute_stats(table: Table) -> TableStats:
    if table.format == "parquet":
        return _footer_stats(table)
    if table.format == "csv":
        return _text_stats(table)
    return _scanned_stats(table)


def _leaf_index(md: pq.FileMetaData) -> dict[str, int]:
    """Top-level column name -> its Parquet leaf, for columns that are a single leaf."""
    return {md.schema.column(i).path: i for i in range(md.num_columns)}


def _footer_stats(table: Table) -> TableStats:
    schema = arrow_schema(table)
    ptypes = partition_types(table)
    cols = {f.name: ColumnStats(f.name, str(f.type), type_family(f.type), nulls=0, values=0) for f in schema}
    # Whether each bound is still sound for the column: one chunk without it spoils it.
    sound = {name: {"min": True, "max": True} for name in cols}
    rows = 0
    for i, f in enumerate(table.files):
        try:
            md = pq.ParquetFile(f.path).metadata
        except Exception as e:
            raise TableReadError(f"{f.path}: not a readable Parquet file ({e})") from e
        rows += md.num_rows
        leaves = _leaf_index(md)
        for field in schema:
            c = cols[field.name]
            if field.name in ptypes:
                _fold_partition(c, (table.partitions[i] or {}).get(field.name), ptypes[field.name], md.num_rows, sound)
                continue
            leaf = leaves.get(field.name)
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                st = rg.column(leaf).statistics if leaf is not None else None
                _fold_chunk(c, st, rg.num_rows, sound)
    for name, c in cols.items():
        if not sound[name]["min"]:
            c.min = None
        if not sound[name]["max"]:
            c.max = None
    return TableStats(rows=rows, distinct_rows=None, columns=list(cols.values()))


def _fold_bound(c: ColumnStats, which: str, value, sound: dict) -> None:
    if value is None:
        sound[c.name][which] = False
        return
    current = getattr(c, which)
    setattr(c, which, value if current is None else (min if which == "min" else max)(current, value))


def _chunk_bound(st, which: str, family: str):
    try:
        return comparable(getattr(st, which), family)
    except (ValueError, OverflowError, pa.ArrowException):
        return None  # e.g. a timestamp beyond Python's datetime range, a cut UTF-8 sequence


def _fold_chunk(c: ColumnStats, st, num_rows: int, sound: dict) -> None:
    if st is None or not st.has_null_count:
        c.nulls = c.values = None
        sound[c.name]["min"] = sound[c.name]["max"] = False
        return
    if c.nulls is not None:
        c.nulls += st.null_count
        c.values += num_rows - st.null_count
    if num_rows - st.null_count == 0:
        return
    if not st.has_min_max:
        sound[c.name]["min"] = sound[c.name]["max"] = False
        return
    for which in ("min", "max"):
        _fold_bound(c, which, _chunk_bound(st, which, c.family), sound)


def _fold_partition(c: ColumnStats, raw: str | None, typ: pa.DataType, num_rows: int, sound: dict) -> None:
    if raw is None:
        c.nulls += num_rows
        return
    c.values += num_rows
    v = comparable(int(raw) if pt.is_integer(typ) else raw, c.family)
    for which in ("min", "max"):
        _fold_bound(c, which, v, sound)


def _scanned_stats(table: Table) -> TableStats:
    data = read_table(table)
    cols = []
    for name, arr in zip(data.column_names, data.columns):
        fam = type_family(arr.type)
        nulls = arr.null_count
        c = ColumnStats(name, str(arr.type), fam, nulls=nulls, values=len(arr) - nulls)
        if fam == "float":
            arr = pc.filter(arr, pc.invert(pc.is_nan(arr)))
        orderable = fam in ("int", "float", "string", "binary", "bool", "date", "time") or fam.startswith("timestamp")
        if c.values and orderable:
            mm = pc.min_max(arr)
            try:
                c.min = comparable(mm["min"].as_py(), fam)
                c.max = comparable(mm["max"].as_py(), fam)
            except (ValueError, OverflowError, pa.ArrowException):
                c.min = c.max = None
        cols.append(c)
    con = duckdb.connect()
    con.register("t", data)
    distinct = con.execute("SELECT count(*) FROM (SELECT DISTINCT * FROM t)").fetchone()[0] if data.num_columns else 0
    return TableStats(rows=data.num_rows, distinct_rows=distinct, columns=cols)


def _bound(value, family: str):
    try:
        return comparable(value, family)
    except (ValueError, OverflowError, pa.ArrowException):
        return None


def _text_stats(table: Table) -> TableStats:
    """One duckdb pass: per column, counts and bounds of the text and of each family it parses as."""
    names = arrow_schema(table).names
    inner, outer = [], ["count(*)"]
    for k, name in enumerate(names):
        col = quote_ident(name)
        inner.append(f"NULLIF({col}, '') AS t{k}")
        outer += [f"count(t{k})", f"min(t{k})", f"max(t{k})"]
        for f in TEXT_FAMILIES:
            inner.append(f"{parsed_sql(col, f)} AS p{k}_{f}")  # parsed once, aggregated thrice
            outer += [f"bool_and(t{k} IS NULL OR p{k}_{f} IS NOT NULL)", f"min({canonical_sql(f'p{k}_{f}', f)})", f"max({canonical_sql(f'p{k}_{f}', f)})"]
    query = f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM {duckdb_source(table)})"
    with duckdb.connect() as con:  # its own connection: another's unfinished result cannot block it
        values = list(con.sql(query).to_arrow_table().to_pylist()[0].values())
    rows, cols, at = values[0], [], 1
    for name in names:
        present, lo, hi = values[at : at + 3]
        at += 3
        parses = {}
        for f in TEXT_FAMILIES:
            ok, f_lo, f_hi = values[at : at + 3]
            at += 3
            if ok:
                parses[f] = [_bound(f_lo, f), _bound(f_hi, f)]
        cols.append(ColumnStats(name, "string", TEXT, _bound(lo, "string"), _bound(hi, "string"), rows - present, present, parses))
    # Distinct rows of text say nothing of distinct canonical values ("1" and "1.0"): unknown.
    return TableStats(rows=rows, distinct_rows=None, columns=cols)
