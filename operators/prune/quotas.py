"""DBP's per-cluster quotas: the projection of N*P onto the capped simplex, rounded to exactly N.

minimize ||x - N*P||^2  s.t.  sum x = N,  lb <= x <= size
has the solution x = clip(N*P - lambda, lb, size) for the lambda where the sum is N; the sum
falls monotonically in lambda, so bisection finds it (no QP solver, no solver tolerance). Then
floors, and the rows still missing go one each to the largest remainders (ties within 1e-9,
which float noise cannot order, to the lower cluster index), never above a cluster's size.
"""

from __future__ import annotations

import numpy as np


def lower_bounds(sizes: np.ndarray, total: int, balance: float) -> np.ndarray:
    """lb_j = min(floor(balance * N / k), size_j - 1), raised to 1 where that fits (the spec's
    "b = 0 means lb = 1": no cluster of 2+ rows vanishes) unless N is too small for one row in
    each such cluster; then the plain formula, whose sum is at most balance * N <= N."""
    base = int(np.floor(balance * total / len(sizes)))
    cap = np.maximum(sizes - 1, 0)
    lb = np.minimum(max(base, 1), cap)
    return lb if lb.sum() <= total else np.minimum(base, cap)


def project(target: np.ndarray, lb: np.ndarray, ub: np.ndarray, total: int) -> np.ndarray:
    """x = clip(target - lambda, lb, ub) with sum x = total (needs sum lb <= total <= sum ub)."""
    lo, hi = float((target - ub).min()), float((target - lb).max())  # sums: sum ub, sum lb
    while True:
        mid = (lo + hi) / 2
        if not lo < mid < hi:  # the interval is down to adjacent floats
            break
        if np.clip(target - mid, lb, ub).sum() > total:
            lo = mid
        else:
            hi = mid
    return np.clip(target - (lo + hi) / 2, lb, ub)


def round_to_total(x: np.ndarray, ub: np.ndarray, total: int) -> np.ndarray:
    """Integers within [floor(x), ub] summing to `total`: floors plus largest remainders."""
    base = np.floor(x).astype(np.int64)
    missing = total - int(base.sum())
    remainder = np.round(x - base, 9)  # quantised, so float noise makes ties, broken by index
    open_ = np.flatnonzero(base < ub)
    ranked = open_[np.lexsort((open_, -remainder[open_]))]
    if not 0 <= missing <= len(ranked):  # cannot happen when sum floor(x) <= total <= sum ub
        raise RuntimeError(f"cannot round {x} to {total} within {ub}")
    base[ranked[:missing]] += 1
    return base


def quotas(weights: np.ndarray, sizes: np.ndarray, total: int, balance: float) -> np.ndarray:
    """Rows to keep per cluster: sum == total, lb <= quota <= size (weights sum to 1)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if total >= sizes.sum():
        return sizes.copy()
    lb = lower_bounds(sizes, total, balance)
    return round_to_total(project(total * np.asarray(weights, np.float64), lb, sizes, total), sizes, total)
