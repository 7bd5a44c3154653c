"""Spherical k-means with faiss: trained on a seeded sample, then every row assigned in chunks.

Training cost is niter x sample x k x d, assignment n x k x d; the sample bounds the first
whatever the data size, and the chunks bound the memory of the second.
"""

from __future__ import annotations

import os

import numpy as np

from operators.prune.embeddings import unit32

ASSIGN_CHUNK = 1 << 14
# faiss's own advice: fewer than ~39 training points per centroid gives poor centroids.
MIN_TRAIN = 50_000
TRAIN_PER_CLUSTER = 40


def train_rows(rows: int, k: int, requested: int | None) -> int:
    """How many rows to train on: `requested`, else max(50k, 40 per cluster); at most all."""
    return min(rows, requested if requested else max(MIN_TRAIN, TRAIN_PER_CLUSTER * k))


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def train(embeddings, k: int, *, niter: int, seed: int, sample: int, threads: int | None = None) -> np.ndarray:
    """(k, d) float32 unit centroids of `embeddings` (an (n, d) array or EmbeddingStore), k <= n.

    The sample is a seeded choice of rows read in file order; faiss is seeded and told not to
    subsample again, so the same rows and seed give the same centroids.
    """
    import faiss

    faiss.omp_set_num_threads(threads or available_cores())
    n, d = embeddings.shape
    if not 1 <= k <= n:
        raise ValueError(f"k={k} needs 1..{n} rows")
    sample = max(k, min(sample, n))
    rows = np.sort(np.random.default_rng(seed % 2**32).choice(n, sample, replace=False)) if sample < n else slice(None)
    x = unit32(embeddings[rows])
    km = faiss.Kmeans(d, k, niter=niter, seed=seed % 2**31, spherical=True, verbose=False,
                      min_points_per_centroid=1, max_points_per_centroid=-(-sample // k) + 1)
    km.train(x)
    return np.ascontiguousarray(km.centroids, dtype=np.float32)


def assign(embeddings, centroids: np.ndarray, threads: int | None = None) -> np.ndarray:
    """The nearest centroid (by cosine) of every row, as int32, streamed in chunks."""
    import faiss

    faiss.omp_set_num_threads(threads or available_cores())
    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(unit32(centroids))
    n = embeddings.shape[0]
    labels = np.empty(n, dtype=np.int32)
    for start in range(0, n, ASSIGN_CHUNK):
        _, nearest = index.search(unit32(embeddings[start:start + ASSIGN_CHUNK]), 1)
        labels[start:start + ASSIGN_CHUNK] = nearest[:, 0]
    return labels
