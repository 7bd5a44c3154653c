"""Rows grouped by cluster and ordered within it: "hard" (farthest from the centroid first),
"easy" (nearest first) or "random" (a seeded hash of the row); ties go to the lower `_ord`.

"random" ranks rows by splitmix64(_ord + seed * golden), a pure function of the row, so the
choice does not depend on how clusters or batches are processed, and a test can recompute it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from curate_operators.prune.embeddings import unit64

Mode = Literal["hard", "easy", "random"]
_CHUNK = 1 << 13
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def centroid_distances(embeddings, centroids: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """1 - cos(x, c_label) per row, in float64 (rows and centroids normalised in float64)."""
    c = unit64(centroids)
    n = embeddings.shape[0]
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, _CHUNK):
        x = unit64(embeddings[start:start + _CHUNK])
        out[start:start + _CHUNK] = 1.0 - np.einsum("ij,ij->i", x, c[labels[start:start + _CHUNK]])
    return out


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 output function of uint64 states (arithmetic mod 2**64)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def random_keys(rows: np.ndarray, seed: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return splitmix64(rows.astype(np.uint64) + np.uint64(seed % 2**64) * _GOLDEN)


def cluster_order(labels: np.ndarray, dist: np.ndarray, mode: Mode, seed: int) -> np.ndarray:
    """Row indices sorted by cluster, then by `mode` within the cluster, then by row."""
    rows = np.arange(len(labels), dtype=np.int64)
    key = {"hard": lambda: -dist, "easy": lambda: dist, "random": lambda: random_keys(rows, seed)}[mode]()
    return np.lexsort((rows, key, labels))


def cluster_starts(labels: np.ndarray, k: int) -> np.ndarray:
    """starts[c]:starts[c + 1] is cluster c's slice of a cluster-sorted order."""
    return np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=k))]).astype(np.int64)
