"""Embeddings for the tests.

Grid vectors have 16 coordinates of +-1/4 and the rest 0: each has norm exactly 1 and every
dot product is an exact multiple of 1/16 in float16, float32 and float64 alike, whatever the
summation order. So the product (float32 matrix products) and the reference (float64 loops)
see the same similarities and distances, ties included (distances to a grid centroid tie
often, which exercises the tie rules), and a kept set can be compared exactly.
Near-duplicates come from small edits: a sign flip lowers the similarity by 1/8, moving a
coordinate by 1/16.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

DIM, NNZ = 32, 16


def grid_vector(rng: np.random.Generator) -> np.ndarray:
    v = np.zeros(DIM)
    v[rng.choice(DIM, NNZ, replace=False)] = rng.choice([-0.25, 0.25], NNZ)
    return v


def edit(rng: np.random.Generator, v: np.ndarray, steps: int) -> np.ndarray:
    v = v.copy()
    for _ in range(steps):
        on, off = np.flatnonzero(v), np.flatnonzero(v == 0)
        i = rng.choice(on)
        if rng.random() < 0.5:
            v[i] = -v[i]
        else:
            v[rng.choice(off)], v[i] = v[i], 0.0
    return v


def grid_dataset(seed: int, rows: int, k: int, groups: int, assign: str = "nearest"):
    """(X float16 (rows, DIM), centroids (k, DIM), labels): rows are edits (0-3 steps) of
    `groups` base vectors; centroids are grid vectors (some of them bases); labels are the
    nearest centroid (first on ties) or random (empty and tiny clusters included)."""
    rng = np.random.default_rng(seed)
    bases = [grid_vector(rng) for _ in range(max(1, groups))]
    X = np.array([edit(rng, bases[rng.integers(len(bases))], int(rng.choice(4, p=[.4, .3, .2, .1])))
                  for _ in range(rows)]).reshape(rows, DIM)
    centroids = np.array([bases[i] if i < len(bases) and rng.random() < 0.5 else grid_vector(rng) for i in range(k)])
    if assign == "nearest":
        labels = np.argmax(X @ centroids.T, axis=1).astype(np.int32)
    else:
        labels = rng.integers(0, k, rows).astype(np.int32)
    return X.astype(np.float16), centroids.astype(np.float32), labels


def clustered(seed: int, rows: int, dim: int, centers: int, spread: float = 0.3, dtype=np.float32) -> np.ndarray:
    """Gaussian blobs around random directions, L2-normalised."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, dim))
    x = c[rng.integers(0, centers, rows)] + spread * rng.normal(size=(rows, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype)


def embedding_array(x: np.ndarray) -> pa.FixedSizeListArray:
    kind = {np.dtype(np.float16): pa.float16(), np.dtype(np.float32): pa.float32()}[x.dtype]
    return pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), kind), x.shape[1])


def batches(x: np.ndarray, size: int = 1000, column: str = "_embedding", ids: list[str] | None = None):
    """Fit/apply batches: _id, the embedding column, _ord."""
    out = []
    for start in range(0, len(x), size):
        stop = min(len(x), start + size)
        out.append(pa.record_batch({
            "_id": ids[start:stop] if ids else [f"r{i}" for i in range(start, stop)],
            column: embedding_array(x[start:stop]),
            "_ord": pa.array(np.arange(start, stop, dtype=np.int64))}))
    return out
