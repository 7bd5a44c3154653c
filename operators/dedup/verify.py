"""Exact containment of candidate pairs, measured on the stored shingle samples.

Each document keeps its `m` smallest shingle hashes (all of them when it has fewer). For a
pair, T is the smaller of the two documents' cut-offs (the m-th smallest hash, or +inf when
nothing was cut), and containment is measured on the child's hashes <= T: the same uniform
hash sample of both sets (the parent's stored hashes include all of its hashes <= T), so the
result is exact whenever neither document has more than m shingles and an unbiased sample
estimate otherwise.

Vectorized: the parents of a chunk are laid out once as one sorted key array
(parent slot << 32 | top 32 hash bits), every child hash of every pair is looked up in it
with one searchsorted, and a hit counts only when the full 64-bit hashes agree too (keys
that share their top bits are probed in turn).
"""

from __future__ import annotations

import numpy as np

from operators.dedup.store import RowStore, ranges

UNCUT = np.iinfo(np.uint64).max
# Below this many sampled hashes a screening estimate is too noisy to reject a pair on.
MIN_SCREEN_SAMPLE = 10


def cutoffs(store: RowStore, sizes: np.ndarray, head: int | None = None) -> np.ndarray:
    """Per-_ord cut-off of a sample: the largest hash kept when a document was cut, else UNCUT.

    With `head`, the sample is each document's first `head` stored hashes (a coarser sample
    of the same kind, used to discard clear non-matches cheaply).
    """
    cut = np.full(len(sizes), UNCUT, np.uint64)
    kept = store.lengths[: len(sizes)] if head is None else np.minimum(store.lengths[: len(sizes)], head)
    truncated = np.flatnonzero(sizes > kept)
    if len(truncated):
        last = store.starts[truncated] + kept[truncated] - 1
        data = np.memmap(store.path, dtype=np.uint64, mode="r")
        try:
            cut[truncated] = data[last]
        finally:
            del data
    return cut


def containment(store: RowStore, cut: np.ndarray, child: np.ndarray, parent: np.ndarray, head: int | None = None) -> np.ndarray:
    """|S(child) ∩ S(parent)| / |S(child)| for each pair, on the common hash sample.

    `cut` must come from cutoffs(..., head) with the same `head`.
    """
    shared, sample_size = _counts(store, cut, child, parent, head)
    return np.divide(shared, sample_size, out=np.zeros(len(child)), where=sample_size > 0)


def _counts(store: RowStore, cut: np.ndarray, child: np.ndarray, parent: np.ndarray, head: int | None):
    """(shared hashes, child sample size) per pair."""
    if len(child) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    limit = np.minimum(cut[child], cut[parent])
    parents, slot = np.unique(parent, return_inverse=True)
    pv, po = store.gather(parents, head)
    pkeys = (np.repeat(np.arange(len(parents), dtype=np.uint64), np.diff(po)) << np.uint64(32)) | (pv >> np.uint64(32))
    # Child hashes, pair by pair (a child may appear in many pairs).
    children, cslot = np.unique(child, return_inverse=True)
    cv, co = store.gather(children, head)
    lengths = np.diff(co)[cslot]
    element = ranges(co[:-1][cslot], lengths)
    pair = np.repeat(np.arange(len(child), dtype=np.int64), lengths)
    h = cv[element]
    in_sample = h <= limit[pair]
    h, pair = h[in_sample], pair[in_sample]
    qkeys = (slot[pair].astype(np.uint64) << np.uint64(32)) | (h >> np.uint64(32))
    hit = _lookup(pkeys, pv, qkeys, h)
    sample_size = np.bincount(pair, minlength=len(child))
    shared = np.bincount(pair[hit], minlength=len(child))
    return shared, sample_size


def screened_containment(store: RowStore, cut: np.ndarray, head_cut: np.ndarray, child: np.ndarray,
                         parent: np.ndarray, head: int, floor: float) -> np.ndarray:
    """containment(), computed only for pairs whose estimate on the first `head` hashes reaches
    `floor` or rests on fewer than MIN_SCREEN_SAMPLE hashes; the others get that (lower)
    estimate. A fully contained child always passes: its whole sample is in the parent."""
    shared, size = _counts(store, head_cut, child, parent, head)
    rough = np.divide(shared, size, out=np.zeros(len(child)), where=size > 0)
    out = rough.copy()
    go = np.flatnonzero((rough >= floor) | (size < MIN_SCREEN_SAMPLE))
    out[go] = containment(store, cut, child[go], parent[go])
    return out


def _lookup(pkeys: np.ndarray, pv: np.ndarray, qkeys: np.ndarray, h: np.ndarray) -> np.ndarray:
    """For each query, whether (its key, its full hash) is among (pkeys, pv); pkeys sorted."""
    hit = np.zeros(len(qkeys), bool)
    probe = np.searchsorted(pkeys, qkeys)
    live = np.flatnonzero(probe < len(pkeys))
    live = live[pkeys[probe[live]] == qkeys[live]]
    while len(live):
        match = pv[probe[live]] == h[live]
        hit[live[match]] = True
        live = live[~match]
        probe[live] += 1
        live = live[probe[live] < len(pkeys)]
        live = live[pkeys[probe[live]] == qkeys[live]]
    return hit
