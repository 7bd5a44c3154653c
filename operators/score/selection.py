"""The two selection algorithms of qdc_select, over unit embeddings and a per-row score.

- threshold greedy (Deita's recipe, generalised): rows in descending score; a row is taken
  unless its cosine similarity to a row already taken is above `threshold`. Chunks of
  candidates are checked against the taken rows with faiss, and among themselves with a small
  matrix, so the walk is not one search per row. If fewer than `size` rows pass, the best
  skipped rows fill the rest (counted in `filled`).
- facility location: greedily maximise  mean_i max_{j in S} max(cos(i, j), 0)  (coverage of a
  seeded sample of m rows i, in [0, 1]) + weight * sum_{j in S} score_j / size  (the mean score
  once S is full, in [0, 1] for scores in [0, 1]), so weight 1 gives both the same range; lazy
  evaluation (the gain of a candidate only shrinks as S grows, so a stale gain is an upper bound).
  Coverage alone gives a near-copy of a chosen row no gain, but its score still counts, so the
  same `threshold` as the greedy (when given) keeps copies out.
"""

from __future__ import annotations

import heapq

import numpy as np

CHUNK = 1024


def threshold_greedy(x, order: np.ndarray, size: int, threshold: float) -> tuple[np.ndarray, int]:
    """(the chosen rows in the order taken, how many were filled in below the threshold)."""
    import faiss

    d = x.shape[1]
    index = faiss.IndexFlatIP(d)
    taken: list[int] = []
    for start in range(0, len(order), CHUNK):
        if len(taken) >= size:
            break
        rows = order[start:start + CHUNK]
        v = np.ascontiguousarray(x[rows], np.float32)
        ok = np.ones(len(rows), bool)
        if index.ntotal:
            sims, _ = index.search(v, 1)
            ok &= sims[:, 0] <= threshold
        inner = v @ v.T
        chosen: list[int] = []
        for i in np.flatnonzero(ok):
            if len(taken) + len(chosen) >= size:
                break
            if chosen and inner[i, chosen].max() > threshold:
                continue
            chosen.append(int(i))
        if chosen:
            index.add(v[chosen])
            taken.extend(int(rows[i]) for i in chosen)
    filled = max(0, size - len(taken))
    if filled:  # every row was looked at: the best of those skipped complete the selection
        left = np.setdiff1d(order, taken, assume_unique=True)  # keeps `order`'s order
        taken.extend(left[:filled].tolist())
    return np.asarray(taken, np.int64), filled


def facility_location(x, score: np.ndarray, size: int, weight: float, sample: int, seed: int,
                      threshold: float | None = None) -> np.ndarray:
    n = len(score)
    rng = np.random.default_rng(seed)
    targets = np.sort(rng.choice(n, min(sample, n), replace=False))
    t = np.ascontiguousarray(x[targets], np.float32)  # (m, d)
    m = len(t)
    cover = np.zeros(len(t), np.float32)  # current max(cos, 0) of each target to the chosen rows
    heap = []
    for start in range(0, n, CHUNK):
        v = np.ascontiguousarray(x[start:start + CHUNK], np.float32)
        gains = np.maximum(v @ t.T, 0).sum(axis=1) / m + weight * score[start:start + CHUNK] / size
        heap.extend((-float(g), start + i) for i, g in enumerate(gains))
    heapq.heapify(heap)
    chosen: list[int] = []
    picked = np.zeros((size, x.shape[1]), np.float32)
    skipped: list[int] = []
    while heap and len(chosen) < size:
        _, j = heapq.heappop(heap)
        v = np.asarray(x[j], np.float32).ravel()
        sims = np.maximum(t @ v, 0)
        gain = float(np.maximum(sims - cover, 0).sum() / m + weight * score[j] / size)
        if heap and gain < -heap[0][0] - 1e-9:
            heapq.heappush(heap, (-gain, j))  # stale: back in line with its true gain
        elif threshold is not None and chosen and float((picked[:len(chosen)] @ v).max()) > threshold:
            skipped.append(j)  # a near-copy of a chosen row: its score alone would otherwise take it
        else:
            picked[len(chosen)] = v
            chosen.append(j)
            np.maximum(cover, sims, out=cover)
    if len(chosen) < size:  # too few rows pass the threshold: the best skipped ones fill up
        best = sorted(skipped, key=lambda r: (-score[r], r))
        chosen.extend(best[:size - len(chosen)])
    return np.asarray(chosen, np.int64)
