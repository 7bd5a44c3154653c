"""A planted corpus for selection tests and the bench: good varied rows, spam, near-duplicates.

Each row has a quality score (high for real rows, low for spam) and an embedding: topics are
orthogonal directions, near-duplicates are tiny perturbations of one good row, which (being
good) have top quality, so a top-quality-only pick is full of copies.
"""

from __future__ import annotations

import numpy as np


def planted(seed: int = 0, topics: int = 40, per_topic: int = 10, copies: int = 150, spam: int = 200, dim: int = 64):
    rng = np.random.default_rng(seed)
    centers = np.linalg.qr(rng.normal(size=(dim, dim)))[0][:topics]
    good = np.repeat(centers, per_topic, axis=0) + rng.normal(scale=0.35, size=(topics * per_topic, dim)) / np.sqrt(dim)
    good_q = rng.uniform(0.6, 0.9, len(good))
    dup = centers[0] + rng.normal(scale=0.01, size=(copies, dim)) / np.sqrt(dim)
    dup_q = rng.uniform(0.95, 1.0, copies)  # copies of one excellent document
    junk = rng.normal(size=(spam, dim))
    junk_q = rng.uniform(0.0, 0.3, spam)
    x = np.concatenate([good, dup, junk]).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.concatenate([good_q, dup_q, junk_q])
    kind = np.array(["good"] * len(good) + ["duplicate"] * copies + ["spam"] * spam)
    order = rng.permutation(len(q))
    return x[order], q[order], kind[order]
