"""Ground truth for containment: every ordered pair of tables checked by the definition.

Deliberately independent of the pipeline: no pruning, no statistics, no duckdb. Each table
is loaded whole, every column cast to a canonical type of its family; every row of every
projection a pair needs is hashed (polars, 64 bits, cached per table and column list) and
B is contained in A when all of B's row hashes are among A's. Quadratic in the number of
tables: for tests and benchmarks only.
"""

from __future__ import annotations

import numpy as np
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
    frames = {}
    keys = {}
    for t in tables:
        data = read_table(t)
        frames[t.name] = _canonical(data)
        keys[t.name] = {column_key(f.name, f.type) for f in data.schema}
    cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def row_hashes(name: str, cols: tuple[str, ...]) -> np.ndarray:
        if (name, cols) not in cache:
            h = frames[name].select(cols).hash_rows(seed=0).to_numpy()
            cache[(name, cols)] = np.unique(h)
        return cache[(name, cols)]

    truth = set()
    for b in tables:
        if frames[b.name].height == 0:
            continue
        cols = tuple(frames[b.name].columns)
        hb = row_hashes(b.name, cols)
        for a in tables:
            if a.name == b.name or not keys[b.name] <= keys[a.name]:
                continue
            ha = row_hashes(a.name, cols)
            if len(ha) < len(hb):
                continue
            pos = np.searchsorted(ha, hb).clip(max=len(ha) - 1)
            if bool((ha[pos] == hb).all()):
                truth.add((a.name, b.name))
    return truth
