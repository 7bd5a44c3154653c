"""Containment of candidate pairs, measured on the stored shingle samples.

Each document keeps its `m` smallest shingle hashes (all of them when it has fewer), stored
as their top 32 bits (SAMPLE_DTYPE): order is kept, so "the m smallest" and the cut-offs
below still hold, at 4 bytes a hash. For a pair, T is the smaller of the two documents'
cut-offs (the m-th smallest value, or UNCUT when nothing was cut), and containment is
measured on the child's values <= T: the same uniform hash sample of both sets (the
parent's stored values include all of its values <= T). It is exact whenever neither
document has more than m shingles, up to 32-bit collisions (a stray match changes a
containment by 1/|S(A)| with probability about |S(B)| / 2^32), and an unbiased sample
estimate otherwise.

Vectorized: the parents of a chunk are laid out once as one sorted key array
(parent slot << 32 | value), and every child value of every pair is looked up in it with
one searchsorted.
"""

from __future__ import annotations

import numpy as np

from curate_operators.dedup.shingles import HASH_BITS
from curate_operators.dedup.store import RowStore, ranges

SAMPLE_DTYPE = np.uint32
UNCUT = np.iinfo(SAMPLE_DTYPE).max
# Below this many sampled hashes a screening estimate is too noisy to reject a pair on.
MIN_SCREEN_SAMPLE = 10


def sample_values(hashes: np.ndarray) -> np.ndarray:
    """Shingle hashes (HASH_BITS wide) -> stored sample values: their top 32 bits."""
    return (hashes >> np.uint64(HASH_BITS - 32)).astype(SAMPLE_DTYPE)


def cutoffs(store: RowStore, sizes: np.ndarray, head: int | None = None) -> np.ndarray:
    """Per-_ord cut-off of a sample: the largest value kept when a document was cut, else UNCUT.

    With `head`, the sample is each document's first `head` stored values (a coarser sample
    of the same kind, used to discard clear non-matches cheaply).
    """
    cut = np.full(len(sizes), UNCUT, SAMPLE_DTYPE)
    lengths = store.lengths[: len(sizes)]
    kept = lengths if head is None else np.minimum(lengths, head)
    truncated = sizes > kept
    # Where a row's whole stored sample is kept, its cut-off is its last value, in the store's
    # index: no read of the file (a pass over all of it at ten million documents).
    whole = truncated & (kept == lengths)
    cut[whole] = store.lasts[: len(sizes)][whole]
    within = np.flatnonzero(truncated & ~whole)
    if len(within):
        cut[within] = store.read(store.starts[within] + kept[within] - 1, np.ones(len(within), np.int64))
    return cut


def containment(store: RowStore, cut: np.ndarray, child: np.ndarray, parent: np.ndarray, head: int | None = None) -> np.ndarray:
    """|S(child) ∩ S(parent)| / |S(child)| for each pair, on the common hash sample.

    `cut` must come from cutoffs(..., head) with the same `head`.
    """
    shared, sample_size = _counts(store, cut, child, parent, head)
    return np.divide(shared, sample_size, out=np.zeros(len(child)), where=sample_size > 0)


def _counts(store: RowStore, cut: np.ndarray, child: np.ndarray, parent: np.ndarray, head: int | None):
    """(shared values, child sample size) per pair."""
    if len(child) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    limit = np.minimum(cut[child], cut[parent])
    parents, slot = np.unique(parent, return_inverse=True)
    pv, po = store.gather(parents, head)
    pkeys = (np.repeat(np.arange(len(parents), dtype=np.uint64), np.diff(po)) << np.uint64(32)) | pv
    # Child values, pair by pair (a child may appear in many pairs).
    children, cslot = np.unique(child, return_inverse=True)
    cv, co = store.gather(children, head)
    lengths = np.diff(co)[cslot]
    pair = np.repeat(np.arange(len(child), dtype=np.int64), lengths)
    h = cv[ranges(co[:-1][cslot], lengths)]
    in_sample = h <= limit[pair]
    h, pair = h[in_sample], pair[in_sample]
    qkeys = (slot[pair].astype(np.uint64) << np.uint64(32)) | h
    if len(pkeys) == 0:
        return np.zeros(len(child), np.int64), np.bincount(pair, minlength=len(child))
    probe = np.minimum(np.searchsorted(pkeys, qkeys), len(pkeys) - 1)
    hit = pkeys[probe] == qkeys
    sample_size = np.bincount(pair, minlength=len(child))
    shared = np.bincount(pair[hit], minlength=len(child))
    return shared, sample_size


def screened_containment(store: RowStore, heads: RowStore, cut: np.ndarray, head_cut: np.ndarray,
                         child: np.ndarray, parent: np.ndarray, floor: float) -> np.ndarray:
    """containment(), computed only for pairs whose estimate on the rows' first values (`heads`:
    each row's first values of `store`; `head_cut` from cutoffs(heads, sizes, head)) reaches
    `floor` or rests on fewer than MIN_SCREEN_SAMPLE values; the others get that (lower)
    estimate. A fully contained child always passes: its whole sample is in the parent."""
    shared, size = _counts(heads, head_cut, child, parent, None)
    rough = np.divide(shared, size, out=np.zeros(len(child)), where=size > 0)
    out = rough.copy()
    go = np.flatnonzero((rough >= floor) | (size < MIN_SCREEN_SAMPLE))
    out[go] = containment(store, cut, child[go], parent[go])
    return out
