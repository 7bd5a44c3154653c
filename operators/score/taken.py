"""The vectors of the rows a selection has taken so far, and how similar new rows are to them:
in memory up to a budget, past it mostly in a file of the fit's work directory.

The rows are kept in the order taken, in tiles of TILE rows (faiss's BLAS database block,
nearest.TILE), as float32 (the unit vectors the selection computed, so they read back with the
same bits). Every search goes tile by tile: faiss's flat search of a database of many rows runs
one BLAS product per such tile, so the largest similarity to the taken rows has the same bits
whether they are one index, tiles in memory or tiles read back from the file. Past the memory
share, the whole tiles are appended to the file; only the last, partly filled one stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from curate_operators.score.nearest import TILE


class Taken:
    """Rows appended in order (`add`); `settle` moves whole tiles to `path` once those in memory
    take more than `budget` bytes (no `path`: all stay in memory)."""

    def __init__(self, d: int, budget: float, path: Path | None):
        self.d, self.path = d, path
        self.budget = budget if path is not None else np.inf
        if path is not None:
            path.unlink(missing_ok=True)  # a fit run again after a crash appends to a file of its own
        self.full: list[np.ndarray] = []  # whole tiles in memory, after the file's
        self.last = np.empty((TILE, d), np.float32)
        self.count = 0  # rows of `last` filled
        self.on_disk = 0  # rows in the file: whole tiles

    def __len__(self) -> int:
        return self.on_disk + TILE * len(self.full) + self.count

    def add(self, v: np.ndarray) -> None:
        at = 0
        while at < len(v):
            take = min(TILE - self.count, len(v) - at)
            self.last[self.count:self.count + take] = v[at:at + take]
            self.count += take
            at += take
            if self.count == TILE:
                self.full.append(self.last)
                self.last = np.empty((TILE, self.d), np.float32)
                self.count = 0

    def settle(self) -> None:
        if self.full and (len(self.full) + 1) * TILE * self.d * 4 > self.budget:
            with open(self.path, "ab") as f:
                for tile in self.full:
                    f.write(tile.tobytes())
            self.on_disk += TILE * len(self.full)
            self.full = []

    def in_memory(self) -> Iterator[np.ndarray]:
        yield from self.full
        if self.count:
            yield self.last[:self.count]

    def on_file(self, block_rows: int) -> Iterator[np.ndarray]:
        """The file's tiles, read a block of `block_rows` rows (whole tiles) at a time."""
        for at in range(0, self.on_disk, block_rows):
            rows = min(block_rows, self.on_disk - at)
            block = np.fromfile(self.path, np.float32, rows * self.d, offset=at * self.d * 4).reshape(rows, self.d)
            for t in range(0, rows, TILE):
                yield block[t:t + TILE]

    def discard(self) -> None:
        self.full, self.count = [], 0
        if self.on_disk:
            self.path.unlink()
            self.on_disk = 0


def largest(queries: np.ndarray, tiles, out: np.ndarray | None = None, stop_above: float = np.inf) -> np.ndarray:
    """Each query's largest inner product with the rows of `tiles` (faiss's flat search, one
    tile at a time), -inf where there are none; into `out` (then the largest of both). Once every
    query has one above `stop_above`, the other tiles cannot change what that decides: not searched."""
    import faiss

    out = np.full(len(queries), -np.inf, np.float32) if out is None else out
    for tile in tiles:
        if (out > stop_above).all():
            break
        sims, _ = faiss.knn(queries, tile, 1, metric=faiss.METRIC_INNER_PRODUCT)
        np.maximum(out, sims[:, 0], out=out)
    return out


def any_above(v: np.ndarray, tiles, threshold: float) -> bool:
    """Whether one row's inner product with a row of `tiles` is above `threshold` (numpy's
    matrix-vector product per tile; it stops at the first tile that has one)."""
    return any(float((tile @ v).max()) > threshold for tile in tiles)
