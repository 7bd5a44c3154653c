"""novelty: diversity_novelty = 1 - max cosine similarity to the row's k nearest neighbours.

A Global step: `fit` spills the embeddings (prune/embeddings.py) and searches every row's
k nearest other rows with faiss (inner product of unit vectors = cosine): exact (flat) up to
`exact_rows`, an IVF index with `nprobe` probed lists above. `reduce: mean` averages the k
similarities instead of taking the largest. A row alone in the dataset gets 1.

Where the index over every row (float32, with the copies made on the way) would not fit the
fit's share of the run's `memory_gb`, the same search runs in pieces from the spilled file
(nearest.py), to the same similarities and so the same scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put
from curate.ops import SERIAL, FitState, Global, Parallel, Params, reads_column, writes_column
from curate_operators.prune.embeddings import EmbeddingStore, UnitRows, spill, unit32
from curate_operators.prune.kmeans import available_cores
from curate_operators.score import nearest

# Bytes a row of the index in memory takes per dimension: the rows read, their float32 unit
# vectors and faiss's copy of them.
IN_MEMORY_BYTES = 3 * 4


class NoveltyParams(Params):
    embedding_column: str = reads_column("_embedding", "The embeddings (from embed).")
    k: int = Field(1, ge=1, le=1024, description="Neighbours per row.")
    reduce: Literal["max", "mean"] = Field("max", description="Over the k similarities: the largest, or their mean.")
    exact_rows: int = Field(200_000, ge=1, description="Up to this many rows the search is exact; above, IVF.")
    nprobe: int = Field(32, ge=1, description="IVF lists probed per query (above exact_rows).")
    output_column: str = writes_column("diversity_novelty", "Where the score goes.", min_length=1)


@dataclass
class NoveltyState(FitState):
    path: str

    def files(self) -> list[str]:
        return [self.path]

    def summary(self) -> dict:
        from curate_operators.score.score_file import ScoreFile

        return ScoreFile.of_npy(self.path).describe()


class Novelty(Global):
    """Per-row novelty: 1 - cosine similarity to the nearest other rows (faiss k-NN on embeddings)."""

    name = "novelty"
    Params = NoveltyParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> NoveltyState:
        store = spill(batches, self.params.embedding_column, workdir, self.name)
        budget = parallel.budget_gb(float("inf")) * 2**30
        novelty = nearest_novelty(store, self.params, self.seed, budget, workdir)
        store.discard()
        path = workdir / "novelty.npy"
        np.save(path, novelty)
        return NoveltyState(str(path))

    def apply(self, batch: pa.RecordBatch, state: NoveltyState) -> pa.RecordBatch:
        novelty = np.load(state.path, mmap_mode="r")
        return put(batch, self.params.output_column, np.asarray(novelty[batch.column("_ord").to_numpy()], np.float64))


def nearest_novelty(x: np.ndarray | EmbeddingStore, p: NoveltyParams, seed: int, budget: float = float("inf"),
                    workdir: Path | None = None) -> np.ndarray:
    """Each row's novelty; from an index of every row in memory where it fits `budget` bytes,
    else in pieces of about that size (then `x` is the spilled store, `workdir` its directory)."""
    import faiss

    faiss.omp_set_num_threads(available_cores())
    n = len(x)
    if n < 2:
        return np.ones(n, np.float32)
    d = x.shape[1]
    k = min(p.k, n - 1)
    exact = n <= p.exact_rows
    if IN_MEMORY_BYTES * n * d <= budget:
        found = nearest.in_memory(unit32(x[:]), k + 1, exact, p.nprobe, seed)
    elif exact:
        found = nearest.flat_in_blocks(UnitRows(x), k + 1, int(budget))
    else:
        found = nearest.ivf_in_groups(UnitRows(x), k + 1, p.nprobe, seed, int(budget), workdir)
    out = np.empty(n, np.float32)
    for start, sims, ids in found:
        out[start:start + len(sims)] = novelty_of(sims, ids, start, k, p.reduce)
    return out


def novelty_of(sims: np.ndarray, ids: np.ndarray, start: int, k: int, reduce: str) -> np.ndarray:
    """1 - the largest (or mean) similarity of rows start.. to their k nearest other rows, from
    their k + 1 nearest (the row itself among them, as a rule)."""
    own = ids == np.arange(start, start + len(ids))[:, None]
    # Drop the row itself (wherever ties put it), else the last of the k + 1.
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(own)
    keep[np.arange(len(ids)), drop] = False
    sims = np.where(ids >= 0, sims, np.nan)[keep].reshape(len(ids), k)
    best = np.nanmax(sims, axis=1) if reduce == "max" else np.nanmean(sims, axis=1)
    return 1.0 - np.clip(np.nan_to_num(best, nan=0.0), -1.0, 1.0)
