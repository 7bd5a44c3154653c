"""Exact containment of candidate pairs, measured on the stored shingle samples.

Each document keeps its `m` smallest shingle hashes (all of them when it has fewer). For a
pair, T is the smaller of the two documents' cut-offs (the m-th smallest hash, or +inf when
nothing was cut), and containment is measured on {h <= T} of both sets: that is the same
uniform hash sample on both sides, so the result is exact whenever neither document has more
than m shingles and an unbiased sample estimate otherwise.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from operators.dedup.store import RowStore

UNCUT = np.iinfo(np.uint64).max


def cutoffs(store: RowStore, sizes: np.ndarray) -> np.ndarray:
    """Per-_ord cut-off: the largest stored hash of documents that were cut, else UNCUT."""
    cut = np.full(len(sizes), UNCUT, np.uint64)
    truncated = np.flatnonzero(sizes > store.lengths)
    if len(truncated):
        last = store.starts[truncated] + store.lengths[truncated] - 1
        data = np.memmap(store.path, dtype=np.uint64, mode="r")
        try:
            cut[truncated] = data[last]
        finally:
            del data
    return cut


def containment(store: RowStore, cut: np.ndarray, child: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """|S(child) ∩ S(parent)| / |S(child)| for each pair (on the common hash sample)."""
    limit = np.minimum(cut[child], cut[parent])
    cv, co = store.gather(child)
    pv, po = store.gather(parent)
    pair_c = np.repeat(np.arange(len(child), dtype=np.int64), np.diff(co))
    pair_p = np.repeat(np.arange(len(parent), dtype=np.int64), np.diff(po))
    keep_c = cv <= limit[pair_c]
    keep_p = pv <= limit[pair_p]
    sample_size = np.bincount(pair_c[keep_c], minlength=len(child))
    both = pl.DataFrame({"pair": pair_c[keep_c], "h": cv[keep_c]}).join(
        pl.DataFrame({"pair": pair_p[keep_p], "h": pv[keep_p]}), on=["pair", "h"], how="inner"
    )
    shared = np.bincount(both["pair"].to_numpy(), minlength=len(child))
    return np.divide(shared, sample_size, out=np.zeros(len(child)), where=sample_size > 0)
