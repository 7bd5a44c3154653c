"""Ground truth for containment: every ordered pair of tables checked by the definition.

Deliberately independent of the pipeline: no pruning, no duckdb; each table is loaded
whole, every column cast to a canonical type of its family, and rows compared by value
with polars. Quadratic in the number of tables: for tests and benchmarks only.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from .columns import column_key
from .reader import read_table
from .tables import Table

_CANONICAL = {"int": pa.int64(), "float": pa.float64(), "string": pa.large_string(), "binary": pa.large_binary()}


def _canonical_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return _canonical_type(t.value_type)
    if pa.types.is_timestamp(t):
        return pa.timestamp("ns", tz=t.tz)
    if pa.types.is_date(t):
        return pa.date32()
    return _CANONICAL.get(column_key("", t)[1], t)


def _canonical(t: pa.Table) -> pl.DataFrame:
    cols = [col.cast(_canonical_type(f.type)) for f, col in zip(t.schema, t.columns)]
    return pl.from_arrow(pa.table(cols, names=[column_key(f.name, f.type)[0] for f in t.schema]))


def contained_pairs(tables: list[Table]) -> set[tuple[str, str]]:
    """{(container name, contained name)} for every pair where the contained table is non-empty."""
    loaded = {t.name: read_table(t) for t in tables}
    frames = {name: _canonical(data) for name, data in loaded.items()}
    keys = {name: {column_key(f.name, f.type) for f in data.schema} for name, data in loaded.items()}
    truth = set()
    for b in tables:
        fb = frames[b.name]
        if fb.height == 0:
            continue
        distinct_b = fb.unique()
        for a in tables:
            if a.name == b.name or not keys[b.name] <= keys[a.name]:
                continue
            proj = frames[a.name].select(fb.columns).unique()
            if proj.height < distinct_b.height:
                continue
            missing = distinct_b.join(proj, on=fb.columns, how="anti", nulls_equal=True)
            if missing.height == 0:
                truth.add((a.name, b.name))
    return truth
