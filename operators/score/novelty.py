"""novelty: diversity_novelty = 1 - max cosine similarity to the row's k nearest neighbours.

A Global step: `fit` spills the embeddings (prune/embeddings.py) and searches every row's
k nearest other rows with faiss (inner product of unit vectors = cosine): exact (flat) up to
`exact_rows`, an IVF index with `nprobe` probed lists above. `reduce: mean` averages the k
similarities instead of taking the largest. A row alone in the dataset gets 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put
from curate.ops import SERIAL, Global, Parallel, Params, reads_column, writes_column
from operators.prune.embeddings import spill, unit32
from operators.prune.kmeans import ASSIGN_CHUNK, available_cores


class NoveltyParams(Params):
    embedding_column: str = reads_column("_embedding", "The embeddings (from embed).")
    k: int = Field(1, ge=1, le=1024, description="Neighbours per row.")
    reduce: Literal["max", "mean"] = Field("max", description="Over the k similarities: the largest, or their mean.")
    exact_rows: int = Field(200_000, ge=1, description="Up to this many rows the search is exact; above, IVF.")
    nprobe: int = Field(32, ge=1, description="IVF lists probed per query (above exact_rows).")
    output_column: str = writes_column("diversity_novelty", "Where the score goes.", min_length=1)


@dataclass
class NoveltyState:
    path: str

    def files(self) -> list[str]:
        return [self.path]

    def summary(self) -> dict:
        from operators.score.score_file import ScoreFile

        return ScoreFile.of_npy(self.path).describe()


class Novelty(Global):
    """Per-row novelty: 1 - cosine similarity to the nearest other rows (faiss k-NN on embeddings)."""

    name = "novelty"
    Params = NoveltyParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> NoveltyState:
        store = spill(batches, self.params.embedding_column, workdir, self.name)
        novelty = nearest_novelty(store[:], self.params, self.seed)
        store.discard()
        path = workdir / "novelty.npy"
        np.save(path, novelty)
        return NoveltyState(str(path))

    def apply(self, batch: pa.RecordBatch, state: NoveltyState) -> pa.RecordBatch:
        novelty = np.load(state.path, mmap_mode="r")
        return put(batch, self.params.output_column, np.asarray(novelty[batch.column("_ord").to_numpy()], np.float64))


def nearest_novelty(x: np.ndarray, p: NoveltyParams, seed: int) -> np.ndarray:
    import faiss

    faiss.omp_set_num_threads(available_cores())
    n = len(x)
    if n < 2:
        return np.ones(n, np.float32)
    x = unit32(x)
    d = x.shape[1]
    k = min(p.k, n - 1)
    if n <= p.exact_rows:
        index = faiss.IndexFlatIP(d)
    else:
        lists = int(4 * np.sqrt(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, lists, faiss.METRIC_INNER_PRODUCT)
        train = np.random.default_rng(seed).choice(n, min(n, 64 * lists), replace=False)
        index.train(x[np.sort(train)])
        index.nprobe = p.nprobe
    index.add(x)
    out = np.empty(n, np.float32)
    for start in range(0, n, ASSIGN_CHUNK):
        chunk = x[start:start + ASSIGN_CHUNK]
        sims, ids = index.search(chunk, k + 1)
        own = ids == np.arange(start, start + len(chunk))[:, None]
        # Drop the row itself (wherever ties put it), else the last of the k + 1.
        drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
        keep = np.ones_like(own)
        keep[np.arange(len(chunk)), drop] = False
        sims = np.where(ids >= 0, sims, np.nan)[keep].reshape(len(chunk), k)
        best = np.nanmax(sims, axis=1) if p.reduce == "max" else np.nanmean(sims, axis=1)
        out[start:start + len(chunk)] = 1.0 - np.clip(np.nan_to_num(best, nan=0.0), -1.0, 1.0)
    return out
