"""Straightforward implementations of the SemDeDup and DBP specs (/work/shared/specs), written
from the formulas with plain loops and full matrices, to check the product against. Nothing
here imports curate_operators.prune.

Conventions the specs leave open, as the product documents them:
- within a cluster, ties of the order key go to the lower row (_ord);
- "random" orders a cluster by splitmix64(_ord + seed * 0x9E3779B97F4A7C15 mod 2**64);
- DBP lower bound: min(max(floor(bN/k), 1), size - 1), or without the max(., 1) when those
  bounds sum to more than N; rounding: floors, then +1 by largest remainder (remainders equal
  to 9 decimals: lower cluster first);
- DBP N >= rows keeps everything.
"""

from __future__ import annotations

import math

import numpy as np

G = 0x9E3779B97F4A7C15
M64 = 2**64


def splitmix(row: int, seed: int) -> int:
    z = (row + seed * G + G) % M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M64
    return z ^ (z >> 31)


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    n = math.sqrt(float(v @ v))
    return v / n if n > 0 else v


def cos_dist(x, c) -> float:
    return 1.0 - float(unit(x) @ unit(c))


def ordered_members(X, centroids, labels, cluster: int, mode: str, seed: int) -> list[int]:
    members = [i for i in range(len(labels)) if labels[i] == cluster]
    d = {i: cos_dist(X[i], centroids[cluster]) for i in members}
    if mode == "hard":
        return sorted(members, key=lambda i: (-d[i], i))
    if mode == "easy":
        return sorted(members, key=lambda i: (d[i], i))
    return sorted(members, key=lambda i: (splitmix(i, seed), i))


def semdedup_removed(X, centroids, labels, eps: float, mode: str = "hard", seed: int = 0) -> set[int]:
    """Rows SemDeDup removes: max cosine to an earlier member of the ordered cluster > 1 - eps."""
    removed = set()
    for c in range(len(centroids)):
        members = ordered_members(X, centroids, labels, c, mode, seed)
        vecs = [unit(X[i]) for i in members]
        for j in range(1, len(members)):
            best = max(float(vecs[i] @ vecs[j]) for i in range(j))
            if best > 1 - eps:
                removed.add(members[j])
    return removed


def semdedup_max_similarity(X, centroids, labels, mode: str = "hard", seed: int = 0) -> dict[int, float]:
    out = {}
    for c in range(len(centroids)):
        members = ordered_members(X, centroids, labels, c, mode, seed)
        vecs = [unit(X[i]) for i in members]
        for j in range(1, len(members)):
            out[members[j]] = max(float(vecs[i] @ vecs[j]) for i in range(j))
    return out


def complexity(X, centroids, labels, neighbors: int) -> list[float]:
    k = len(centroids)
    C = [unit(c) for c in centroids]
    sizes = [int(np.sum(np.asarray(labels) == j)) for j in range(k)]
    values = []
    for j in range(k):
        members = [i for i in range(len(labels)) if labels[i] == j]
        d_intra = np.mean([cos_dist(X[i], centroids[j]) for i in members]) if members else float("nan")
        l = min(neighbors, k - 1)
        sims = sorted((float(C[j] @ C[i]) for i in range(k) if i != j), reverse=True)[:l]
        d_inter = np.mean([1 - s for s in sims]) if l >= 1 else float("nan")
        values.append(d_intra * d_inter)
    good = [v for v, s in zip(values, sizes) if s > 2 and math.isfinite(v)]
    fill = np.mean(good) if good else 0.0
    return [v if s > 2 and math.isfinite(v) else fill for v, s in zip(values, sizes)]


def capped_simplex(t, lb, ub, total) -> list[float]:
    """x = clip(t - lam, lb, ub), sum x = total, with lam found exactly among the breakpoints of
    the piecewise-linear sum."""
    def g(lam):
        return sum(min(max(ti - lam, l), u) for ti, l, u in zip(t, lb, ub))

    points = sorted({ti - u for ti, u in zip(t, ub)} | {ti - l for ti, l in zip(t, lb)})
    lam = points[0]
    for a, b in zip(points, points[1:]):
        ga, gb = g(a), g(b)
        if ga >= total >= gb:
            lam = a if ga == gb else a + (ga - total) * (b - a) / (ga - gb)
            break
    return [min(max(ti - lam, l), u) for ti, l, u in zip(t, lb, ub)]


def round_exact(x, ub, total) -> list[int]:
    q = [math.floor(v) for v in x]
    rem = [round(v - qi, 9) for v, qi in zip(x, q)]
    candidates = sorted((j for j in range(len(q)) if q[j] < ub[j]), key=lambda j: (-rem[j], j))
    for j in candidates[: total - sum(q)]:
        q[j] += 1
    return q


def dbp_quotas(P, sizes, N, balance) -> list[int]:
    k = len(sizes)
    base = math.floor(balance * N / k)
    lb = [min(max(base, 1), max(s - 1, 0)) for s in sizes]
    if sum(lb) > N:
        lb = [min(base, max(s - 1, 0)) for s in sizes]
    x = capped_simplex([N * p for p in P], lb, list(sizes), N)
    return round_exact(x, list(sizes), N)


def dbp_kept(X, centroids, labels, N, complexity_kind="dintra*dinter", temperature=0.5, balance=0.5,
             neighbors=20, mode="hard", seed=0) -> tuple[set[int], list[int]]:
    """Rows DBP keeps, and the quotas."""
    k, n = len(centroids), len(labels)
    sizes = [int(np.sum(np.asarray(labels) == j)) for j in range(k)]
    if N >= n:
        return set(range(n)), sizes
    if complexity_kind == "uniform":
        P = [1 / k] * k
    elif complexity_kind == "clustersize":
        P = [s / n for s in sizes]
    else:
        e = [math.exp(c / temperature) for c in complexity(X, centroids, labels, neighbors)]
        P = [v / sum(e) for v in e]
    q = dbp_quotas(P, sizes, N, balance)
    kept = set()
    for j in range(k):
        kept |= set(ordered_members(X, centroids, labels, j, mode, seed)[: q[j]])
    return kept, q
