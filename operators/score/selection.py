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

Both keep the vectors of the rows selected so far (taken.py): in memory within their share of
the fit's budget, past it in whole tiles in the work directory, to the same selection. Each
function's docstring says what else it holds.
"""

from __future__ import annotations

import heapq
from array import array
from pathlib import Path

import numpy as np

from curate_operators.score.nearest import TILE
from curate_operators.score.taken import Taken, any_above, largest

CHUNK = 1024


def threshold_greedy(x, order: np.ndarray, size: int, threshold: float, budget: float = np.inf,
                     workdir: Path | None = None) -> tuple[np.ndarray, int]:
    """(the chosen rows in the order taken, how many were filled in below the threshold).

    Memory: the taken rows' vectors (4 bytes a dimension) up to a quarter of `budget` bytes,
    then in `workdir` (taken.py; no `workdir`: all in memory); once some are there, the candidates come in windows of about
    a quarter of `budget`, each window's chunks searched against the file's tiles in one pass
    over it (a block of a quarter of `budget` at a time), and against the tiles still in memory
    chunk by chunk. The similarities are those one index of every taken row gives (taken.py),
    so the decisions do not depend on the budget. Besides: 8 bytes a row (the chosen rows'
    numbers, and at the end a mask of every row when some are filled in)."""
    n, d = x.shape
    share = budget / 4
    window = CHUNK * int(max(1, min(n // CHUNK + 1, share // (CHUNK * d * 4))))
    block = TILE * int(max(1, min(n // TILE + 1, share // (TILE * d * 4))))
    taken = Taken(d, share, workdir / "taken.f32" if workdir else None)
    chosen_rows: list[np.ndarray] = []
    start = 0
    while start < len(order) and len(taken) < size:
        # Nothing on file: chunk by chunk, as one index in memory would search.
        stop = min(len(order), start + (window if taken.on_disk else CHUNK))
        chunks = [order[s:s + CHUNK] for s in range(start, stop, CHUNK)]
        vectors = [np.ascontiguousarray(x[rows], np.float32) for rows in chunks]
        on_file = [np.full(len(v), -np.inf, np.float32) for v in vectors]
        for tile in taken.on_file(block):  # one pass over the file for the whole window
            for v, best in zip(vectors, on_file):
                largest(v, [tile], best, stop_above=threshold)
        for rows, v, best in zip(chunks, vectors, on_file):
            if len(taken) >= size:
                break
            ok = largest(v, taken.in_memory(), best, stop_above=threshold) <= threshold
            inner = v @ v.T
            chosen: list[int] = []
            for i in np.flatnonzero(ok):
                if len(taken) + len(chosen) >= size:
                    break
                if chosen and inner[i, chosen].max() > threshold:
                    continue
                chosen.append(int(i))
            if chosen:
                taken.add(v[chosen])
                chosen_rows.append(rows[chosen])
        taken.settle()
        start = stop
    taken.discard()
    out = np.concatenate(chosen_rows) if chosen_rows else np.zeros(0, np.int64)
    filled = max(0, size - len(out))
    if filled:  # every row was looked at: the best of those skipped complete the selection
        left = np.ones(n, bool)
        left[out] = False
        out = np.concatenate([out, order[left[order]][:filled]])  # in `order`'s order
    return out.astype(np.int64), filled


def facility_location(x, score: np.ndarray, size: int, weight: float, sample: int, seed: int,
                      threshold: float | None = None, budget: float = np.inf,
                      workdir: Path | None = None) -> np.ndarray:
    """The chosen rows in the order chosen.

    Memory: the sample of m = min(sample, n) target rows' vectors and their coverage (4 bytes a
    dimension and 4 bytes a target: bounded by `sample`, not by n); 16 bytes a row for the lazy
    queue (every row's first gain and the order of those), plus a heapq entry (about 100 bytes)
    for each row whose gain was looked at again; with `threshold`, the chosen rows' vectors up
    to half of `budget` bytes, then in `workdir` (taken.py; none: all in memory); the rows chosen
    and those skipped as near-copies (8 bytes each). Time: a gain is m products; the near-copy check of a
    row reads every chosen row (the tiles in memory first, the file only when those have none
    above the threshold), so it grows with size x rows looked at, past the budget from the file."""
    n, d = x.shape
    rng = np.random.default_rng(seed)
    targets = np.sort(rng.choice(n, min(sample, n), replace=False))
    t = np.ascontiguousarray(x[targets], np.float32)  # (m, d)
    m = len(t)
    cover = np.zeros(len(t), np.float32)  # current max(cos, 0) of each target to the chosen rows
    gains = np.empty(n)
    for start in range(0, n, CHUNK):
        v = np.ascontiguousarray(x[start:start + CHUNK], np.float32)
        gains[start:start + CHUNK] = np.maximum(v @ t.T, 0).sum(axis=1) / m + weight * score[start:start + CHUNK] / size
    queue = LazyQueue(gains)
    chosen = array("q")
    picked = Taken(d, budget / 2, workdir / "picked.f32" if workdir else None)
    skipped = array("q")
    while queue and len(chosen) < size:
        j = queue.pop()
        v = np.asarray(x[j], np.float32).ravel()
        sims = np.maximum(t @ v, 0)
        gain = float(np.maximum(sims - cover, 0).sum() / m + weight * score[j] / size)
        if queue and gain < queue.best() - 1e-9:
            queue.push(gain, j)  # stale: back in line with its true gain
        elif threshold is not None and chosen and (any_above(v, picked.in_memory(), threshold)
                                                   or any_above(v, picked.on_file(TILE), threshold)):
            skipped.append(j)  # a near-copy of a chosen row: its score alone would otherwise take it
        else:
            if threshold is not None:
                picked.add(v[None])
                picked.settle()
            chosen.append(j)
            np.maximum(cover, sims, out=cover)
    picked.discard()
    if len(chosen) < size:  # too few rows pass the threshold: the best skipped ones fill up
        rows = np.frombuffer(skipped, np.int64)
        best = rows[np.lexsort((rows, -score[rows]))]
        chosen.extend(best[:size - len(chosen)].tolist())
    return np.frombuffer(chosen, np.int64).copy()


class LazyQueue:
    """The rows by gain, largest first (ties: lower row first), popped as one heapq of
    (-gain, row) over every row would pop them: the first gains sorted once (16 bytes a row, not
    a Python tuple a row), the gains pushed back after a second look in a heapq, and each pop
    takes the better of the two heads."""

    def __init__(self, gains: np.ndarray):
        self.gains = gains
        self.order = np.lexsort((np.arange(len(gains)), -gains))
        self.next = 0  # in `order`
        self.again: list[tuple[float, int]] = []  # heapq of (-gain, row)

    def __bool__(self) -> bool:
        return self.next < len(self.order) or bool(self.again)

    def _head(self) -> tuple[float, int] | None:
        if self.next == len(self.order):
            return None
        j = int(self.order[self.next])
        return -float(self.gains[j]), j

    def _sorted_first(self) -> bool:
        head = self._head()
        return head is not None and (not self.again or head < self.again[0])

    def best(self) -> float:
        """The largest gain still queued."""
        return -(self._head() if self._sorted_first() else self.again[0])[0]

    def pop(self) -> int:
        if self._sorted_first():
            self.next += 1
            return int(self.order[self.next - 1])
        return heapq.heappop(self.again)[1]

    def push(self, gain: float, row: int) -> None:
        heapq.heappush(self.again, (-gain, row))
