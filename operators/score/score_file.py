"""The summary of a score column (count, mean, quantiles, histogram) from its values on disk, in
fixed memory, equal to numpy's over all the values in memory (np.mean, np.quantile, np.histogram).

The values are a raw float32 file (or a .npy of them), read in pieces of at most LEAF values in
two passes, whatever the number of rows:
- pass 1: the sum, min, max, and how many values fall in each of 2**16 buckets of the high half
  of their sortable bit pattern (which puts floats in numeric order);
- pass 2: within the few buckets holding a quantile's neighbouring ranks, the low half, so each
  needed order statistic is exact; and the histogram's counts, whose range (min, max) pass 1 gave.
The sum follows numpy's own pairwise summation tree (halves rounded down to a multiple of 8; a
node of up to LEAF values summed by numpy itself), so the mean has numpy's last bits too; the
quantiles interpolate as np.quantile's default ('linear') method does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

BINS = 30
QUANTILES = {"min": 0.0, "p05": 0.05, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p95": 0.95, "max": 1.0}
# Values in memory at once (8 MB as float64). At least numpy's PW_BLOCKSIZE (128): numpy sums a
# node of up to 128 values in one loop, which a split here would not reproduce.
LEAF = 1 << 20
HALF = 1 << 16


class ScoreFile:
    """float32 values appended to a raw file, then summarised from it."""

    def __init__(self, path: Path, offset: int = 0):
        self.path, self.offset = Path(path), offset  # offset: where the values start (a .npy's header)

    @classmethod
    def of_npy(cls, path: Path) -> "ScoreFile":
        mapped = np.load(path, mmap_mode="r")  # reads the header alone
        if mapped.dtype != np.float32 or mapped.ndim != 1:
            raise ValueError(f"{path}: a 1-d float32 array expected, got {mapped.dtype} {mapped.shape}")
        return cls(path, mapped.offset)

    def append(self, values: np.ndarray) -> None:
        with open(self.path, "ab") as f:
            f.write(np.ascontiguousarray(values, np.float32).tobytes())

    def __len__(self) -> int:
        return (self.path.stat().st_size - self.offset) // 4 if self.path.exists() else 0

    def read(self, start: int, count: int) -> np.ndarray:
        return np.fromfile(self.path, np.float32, count, offset=self.offset + 4 * start)

    def describe(self) -> dict:
        n = len(self)
        if not n:
            return {"count": 0}
        high = np.zeros(HALF, np.int64)
        bounds = [np.inf, -np.inf]

        def first(x: np.ndarray) -> None:
            high[:] += np.bincount(sortable(x) >> 16, minlength=HALF)
            bounds[:] = [min(bounds[0], float(x.min())), max(bounds[1], float(x.max()))]

        total = pairwise_sum(self.read, 0, n, first)
        lo, hi = bounds
        ranks, weights = quantile_ranks(n, list(QUANTILES.values()))
        wanted = np.unique(ranks)
        edges = np.histogram_bin_edges(np.array([lo, hi]), bins=BINS)
        counts = np.zeros(BINS, np.int64)

        def second(x: np.ndarray) -> None:
            counts[:] += np.histogram(x.astype(np.float64), bins=BINS, range=(lo, hi))[0]

        found = order_statistics(self.read, n, high, wanted, second)
        at = dict(zip(wanted.tolist(), found))
        q = [lerp(at[a], at[b], t) for (a, b), t in zip(ranks.reshape(-1, 2).tolist(), weights)]
        return {"count": int(n), "mean": round(float(total / n), 6),
                "quantiles": {k: round(float(v), 6) for k, v in zip(QUANTILES, q)},
                "histogram": {"edges": [round(float(e), 6) for e in edges], "counts": counts.tolist()}}


def sortable(x: np.ndarray) -> np.ndarray:
    """uint32 keys in the numeric order of the float32 values (negative ones with every bit flipped)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return np.where(u >> 31 == 1, ~u, u | np.uint32(1 << 31))


def unsortable(key: int) -> float:
    u = key ^ (1 << 31) if key >> 31 else ~key & 0xFFFFFFFF
    return float(np.array([u], np.uint32).view(np.float32)[0])


def pairwise_sum(read: Callable[[int, int], np.ndarray], start: int, n: int,
                 visit: Callable[[np.ndarray], None]) -> np.float64:
    """np.add.reduce over the float64 values start..start+n, node by node of numpy's pairwise tree
    (numpy/_core/src/umath/loops_utils.h.src); `visit` sees each leaf, in order."""
    if n <= LEAF:
        x = read(start, n).astype(np.float64)
        visit(x)
        return np.add.reduce(x)
    half = n // 2
    half -= half % 8
    return pairwise_sum(read, start, half, visit) + pairwise_sum(read, start + half, n - half, visit)


def quantile_ranks(n: int, qs: list[float]) -> tuple[np.ndarray, list[float]]:
    """np.quantile's 'linear' method: the ranks (below, above) each quantile lies between, flat,
    and its weight towards the one above."""
    virtual = (n - 1) * np.asarray(qs, np.float64)
    below = np.floor(virtual)
    above = below + 1
    last = virtual >= n - 1
    below[last] = above[last] = n - 1
    weights = (virtual - np.where(last, -1, below)).tolist()  # numpy's gamma; moot where below == above
    return np.stack([below, above], axis=1).astype(np.int64).ravel(), weights


def lerp(a: float, b: float, t: float) -> np.float64:
    """numpy's _lerp: from the nearer end, so that t = 1 gives b exactly."""
    a, b, t = np.float64(a), np.float64(b), np.float64(t)
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def order_statistics(read: Callable[[int, int], np.ndarray], n: int, high: np.ndarray, ranks: np.ndarray,
                     visit: Callable[[np.ndarray], None]) -> list[float]:
    """The values of the given ranks (0-based, ascending order), given the high-half bucket counts:
    one more pass counts the low halves inside the buckets those ranks fall in (`visit` sees its pieces)."""
    cumulative = np.cumsum(high)
    buckets = np.searchsorted(cumulative, ranks, side="right")
    within = ranks - (cumulative[buckets] - high[buckets])
    wanted = np.unique(buckets)
    low = np.zeros(len(wanted) * HALF, np.int64)
    for start in range(0, n, LEAF):
        x = read(start, LEAF)
        visit(x)
        keys = sortable(x)
        which = np.searchsorted(wanted, keys >> 16)
        inside = wanted[np.minimum(which, len(wanted) - 1)] == keys >> 16
        low += np.bincount(which[inside] * HALF + (keys[inside] & 0xFFFF), minlength=len(low))
    low = low.reshape(len(wanted), HALF).cumsum(axis=1)
    out = []
    for bucket, r in zip(buckets.tolist(), within.tolist()):
        row = low[np.searchsorted(wanted, bucket)]
        out.append(unsortable(bucket << 16 | int(np.searchsorted(row, r, side="right"))))
    return out
