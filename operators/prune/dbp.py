"""Density-based pruning's core (Abbas, Rusak et al., ICLR 2024), given embeddings, centroids and
assignments: per-cluster complexity, weights, quotas (quotas.py), and which rows fill them.

- d_intra_j: mean over members of 1 - cos(x, c_j);
- d_inter_j: mean over the l nearest other centroids of 1 - <c_j, c_i> (l capped at k - 1);
- complexity C_j = d_intra_j * d_inter_j; clusters of at most 2 rows (whose d_intra says
  nothing) get the mean C of the others;
- weights: "dintra*dinter" softmax(C / T); "uniform" 1/k (SSP with cluster balance);
  "clustersize" size_j / n (every cluster pruned by about the same fraction);
- cluster j keeps its first quota_j rows in the order of `mode` (order.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from curate_operators.prune.embeddings import unit64
from curate_operators.prune.order import Mode, centroid_distances, cluster_order, cluster_starts
from curate_operators.prune.quotas import quotas

Complexity = Literal["dintra*dinter", "uniform", "clustersize"]
_CENTROID_BLOCK = 256


@dataclass
class DbpResult:
    keep: np.ndarray  # bool per row
    dist: np.ndarray  # float64 per row: 1 - cos to its centroid
    labels: np.ndarray  # int32 per row
    size: np.ndarray  # per cluster
    d_intra: np.ndarray
    d_inter: np.ndarray
    complexity: np.ndarray  # after the small-cluster fill-in
    weight: np.ndarray  # P_j
    quota: np.ndarray


def inter_distances(centroids: np.ndarray, neighbors: int) -> np.ndarray:
    """d_inter per centroid, in blocks of centroids (k x k would not fit for large k); NaN if k = 1."""
    c = unit64(centroids)
    k = len(c)
    l = min(neighbors, k - 1)
    if l < 1:
        return np.full(k, np.nan)
    out = np.empty(k)
    for start in range(0, k, _CENTROID_BLOCK):
        sim = c[start:start + _CENTROID_BLOCK] @ c.T
        sim[np.arange(len(sim)), np.arange(start, start + len(sim))] = -np.inf  # not itself
        nearest = -np.partition(-sim, l - 1, axis=1)[:, :l]
        out[start:start + len(sim)] = (1.0 - nearest).mean(axis=1)
    return out


def complexities(dist: np.ndarray, labels: np.ndarray, centroids: np.ndarray, neighbors: int):
    """(size, d_intra, d_inter, C) per cluster."""
    k = len(centroids)
    size = np.bincount(labels, minlength=k)
    d_intra = np.bincount(labels, weights=dist, minlength=k) / np.maximum(size, 1)
    d_inter = inter_distances(centroids, neighbors)
    c = d_intra * d_inter
    valid = (size > 2) & np.isfinite(c)
    c = np.where(valid, c, c[valid].mean() if valid.any() else 0.0)
    return size, d_intra, d_inter, c


def weights(kind: Complexity, c: np.ndarray, size: np.ndarray, temperature: float) -> np.ndarray:
    if kind == "uniform":
        return np.full(len(c), 1.0 / len(c))
    if kind == "clustersize":
        return size / size.sum()
    z = np.exp((c - c.max()) / temperature)
    return z / z.sum()


def dbp(embeddings, centroids: np.ndarray, labels: np.ndarray, *, keep: int, complexity: Complexity = "dintra*dinter",
        temperature: float = 0.5, balance: float = 0.5, neighbors: int = 20, mode: Mode = "hard",
        seed: int = 0) -> DbpResult:
    """Which rows DBP keeps (exactly min(keep, n) of them)."""
    dist = centroid_distances(embeddings, centroids, labels)
    size, d_intra, d_inter, c = complexities(dist, labels, centroids, neighbors)
    p = weights(complexity, c, size, temperature)
    quota = quotas(p, size, keep, balance)
    order = cluster_order(labels, dist, mode, seed)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels)) - cluster_starts(labels, len(centroids))[labels[order]]
    return DbpResult(rank < quota[labels], dist, labels, size, d_intra, d_inter, c, p, quota)
