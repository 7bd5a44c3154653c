"""MinHash signatures over shingle-hash sets, and LSH band keys from them.

Permutation i is the affine map h -> a_i * h + b_i (mod 2^64, a_i odd, so a bijection of
the already well-mixed 64-bit shingle hashes); the signature keeps each map's minimum.
Values stay 64-bit: with 32 bits, the minima of large sets are small numbers and unrelated
documents would collide in single-row bands.
"""

from __future__ import annotations

import numpy as np

from curate_operators.dedup.shingles import ShingleSets, _POSITION_MULTIPLIERS, fmix64

EMPTY = np.iinfo(np.uint64).max  # signature value of a row with no shingles


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) coefficients of `num_perm` affine permutations, fixed by `seed`."""
    rng = np.random.default_rng([seed, 0x5EED])
    a = rng.integers(0, 2**63, num_perm, dtype=np.int64).view(np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, num_perm, dtype=np.int64).view(np.uint64) * np.uint64(2)
    return a, b


BLOCK_VALUES = 1 << 17  # shingle hashes per block of rows: 1 MB, and its permuted copy, stay in cache


def signatures(sets: ShingleSets, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(rows, num_perm) uint64 MinHash signatures; rows without shingles are all EMPTY."""
    sizes = sets.sizes
    out = np.full((len(sizes), len(a)), EMPTY, dtype=np.uint64)
    nonempty = np.flatnonzero(sizes > 0)
    starts, ends = sets.offsets[nonempty], sets.offsets[nonempty + 1]
    permuted = np.empty(min(BLOCK_VALUES, len(sets.values)), dtype=np.uint64)
    # Rows in blocks of about BLOCK_VALUES hashes, every permutation over a block before the
    # next: a pass over a whole batch's hashes (tens of MB) per permutation was bound by memory
    # bandwidth (4.7x slower on a 2-core EPYC without AVX-512: bench/minhash_signing.py). The same
    # arithmetic, the same values.
    lo = 0
    while lo < len(nonempty):
        hi = max(lo + 1, int(np.searchsorted(ends, starts[lo] + BLOCK_VALUES, side="right")))
        h = sets.values[starts[lo]:ends[hi - 1]]
        v = permuted[: len(h)] if len(h) <= len(permuted) else np.empty(len(h), np.uint64)
        mins = np.empty((len(a), hi - lo), dtype=np.uint64)
        for i in range(len(a)):
            np.multiply(h, a[i], out=v)
            v += b[i]
            np.minimum.reduceat(v, starts[lo:hi] - starts[lo], out=mins[i])
        out[nonempty[lo:hi]] = mins.T
        lo = hi
    return out


def band_keys(sig: np.ndarray, rows_per_band: int, bands: int) -> np.ndarray:
    """(rows, bands) uint64 keys; key t hashes signature columns [t*r, (t+1)*r).

    With one row per band the key is the MinHash value, mixed (fmix64, one to one): a minimum is
    small, and mixed, the keys of every band spread evenly over the 64-bit range, which the
    containment join splits into parts of equal size.
    """
    r = rows_per_band
    if bands * r > sig.shape[1]:
        raise ValueError(f"{bands} bands x {r} rows need {bands * r} permutations, have {sig.shape[1]}")
    block = sig[:, : bands * r].reshape(len(sig), bands, r)
    if r == 1:
        return fmix64(np.ascontiguousarray(block[:, :, 0]))
    acc = block[:, :, 0] * _POSITION_MULTIPLIERS[0]
    for j in range(1, r):
        acc += block[:, :, j] * _POSITION_MULTIPLIERS[j % len(_POSITION_MULTIPLIERS)]
    return fmix64(acc)


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of agreeing signature positions, row by row."""
    return (sig_a == sig_b).mean(axis=1)
