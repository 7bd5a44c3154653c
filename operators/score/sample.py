"""A seeded uniform sample of a stream of batches, of bounded size, taken in one pass.

Each row gets a random key from a generator seeded by (seed, _ord), so the sample depends only
on the rows and the seed, not on how they were batched; the rows with the `size` smallest keys
are the sample (bottom-k sampling), kept in _ord order.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa


def row_keys(ords: np.ndarray, seed: int) -> np.ndarray:
    """A uniform [0, 1) key per row, a pure function of (seed, _ord) (splitmix64)."""
    z = ords.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) % 2**64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def bottom_k(batches: Iterable[pa.RecordBatch], size: int, seed: int, columns: list[str]) -> tuple[pa.Table, int]:
    """(the sampled rows' `columns` and `_ord`, in _ord order; the number of rows seen)."""
    kept: pa.Table | None = None
    seen = 0
    for batch in batches:
        seen += batch.num_rows
        keys = row_keys(batch.column("_ord").to_numpy(), seed)
        part = pa.Table.from_batches([batch.select([*columns, "_ord"])]).append_column("_key", pa.array(keys))
        kept = part if kept is None else pa.concat_tables([kept, part])
        if kept.num_rows > 2 * size:  # trim now and then: memory stays O(size)
            kept = _smallest(kept, size)
    if kept is None:
        return pa.table({c: [] for c in [*columns, "_ord"]}), 0
    kept = _smallest(kept, size)
    return kept.sort_by("_ord").drop(["_key"]), seen


def _smallest(table: pa.Table, size: int) -> pa.Table:
    if table.num_rows <= size:
        return table
    keys = table.column("_key").to_numpy()
    return table.take(np.argpartition(keys, size - 1)[:size])
