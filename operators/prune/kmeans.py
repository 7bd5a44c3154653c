"""Spherical k-means with faiss: trained on a seeded sample, then every row assigned in chunks.

Training cost is niter x sample x k x d, assignment n x k x d; the sample bounds the first
whatever the data size, and the chunks bound the memory of the second, which spreads over the
run's workers.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import numpy as np

from curate.ops import SERIAL, Parallel
from curate_operators.prune.embeddings import unit32

ASSIGN_CHUNK = 1 << 14
PIECE_CHUNKS = 8  # chunks per piece of a parallel assignment
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


def assign(embeddings, centroids: np.ndarray | Path, threads: int | None = None,
           parallel: Parallel = SERIAL, unit_centroids: bool = True) -> np.ndarray:
    """The nearest centroid (by cosine) of every row, as int32, streamed in chunks; runs of
    PIECE_CHUNKS chunks are pieces of `parallel` (an EmbeddingStore travels as its path; give
    many centroids as the path of their .npy under the workdir). Pieces search the same chunks
    as one process would, so the labels do not depend on how many run at once.
    `unit_centroids=False`: the centroid of the largest dot product instead (DataComp's argmax
    over centroids given as they are, whose norms may differ)."""
    n = embeddings.shape[0]
    starts = range(0, n, PIECE_CHUNKS * ASSIGN_CHUNK)
    stops = [min(n, start + PIECE_CHUNKS * ASSIGN_CHUNK) for start in starts]
    threads = parallel.threads or threads or available_cores()
    parts = parallel.map(partial(assign_rows, embeddings, centroids, threads, unit_centroids=unit_centroids),
                         starts, stops)
    return np.concatenate(parts) if parts else np.empty(0, np.int32)


def assign_rows(embeddings, centroids: np.ndarray | Path, threads: int, start: int, stop: int,
                unit_centroids: bool = True) -> np.ndarray:
    """One piece: the labels of rows start..stop (start at a chunk boundary)."""
    import faiss

    faiss.omp_set_num_threads(threads)
    c = np.load(centroids) if isinstance(centroids, (str, Path)) else centroids
    index = faiss.IndexFlatIP(c.shape[1])
    index.add(unit32(c) if unit_centroids else np.ascontiguousarray(c, dtype=np.float32))
    labels = np.empty(stop - start, dtype=np.int32)
    for at in range(start, stop, ASSIGN_CHUNK):
        _, nearest = index.search(unit32(embeddings[at:min(stop, at + ASSIGN_CHUNK)]), 1)
        labels[at - start:at - start + len(nearest)] = nearest[:, 0]
    return labels
