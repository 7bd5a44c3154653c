"""What semantic_dedup and density_prune share: their embedding and k-means params, and a fit
that spills the embeddings, clusters them (the assignment in pieces of the fit's `parallel`
map) and hands the clusters to the subclass's `decide`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.errors import RecipeError
from curate.ops import SERIAL, Global, Parallel, Params, Result, Verdict, reads_column
from curate_operators.prune import kmeans
from curate_operators.prune.embeddings import EmbeddingStore, embedding_type_problem, spill
from curate_operators.prune.state import CLUSTER_COLUMN, DIST_COLUMN, PruneState, write_state


class ClusterParams(Params):
    embedding_column: str = reads_column("_embedding", "Column of L2-normalised embeddings "
                                         "(a fixed-size list of float16 or float32, or a list of floats of "
                                         "one size), e.g. from an embed step.")
    niter: int = Field(20, ge=1, le=1000, description="k-means iterations.")
    train_rows: int | None = Field(None, ge=1, description="Rows k-means trains on (a seeded sample; all rows are "
                                   "then assigned); default max(50000, 40 per cluster).")
    threads: int | None = Field(None, ge=1, description="faiss threads of k-means training (and of the assignment when the "
                                "fit is called outside a run; in a run each of its pieces has a core); default: the available cores.")
    columns: bool = Field(False, description=f"Add `{CLUSTER_COLUMN}` and `{DIST_COLUMN}` (1 - cosine to the "
                          "row's centroid) to the rows kept.")


@dataclass
class Decided:
    removed: np.ndarray  # rows (= _ord) removed, ascending
    detail: pa.Array  # a trace detail per removed row
    summary: dict  # JSON-able, for the manifest
    dist: np.ndarray  # per row: 1 - cos to its centroid


class _Clock:
    """Seconds per phase of a fit, for the summary (where the time of a large fit goes)."""

    def __init__(self):
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._last, 3)
        self._last = now


class ClusterStep(Global):
    """A Global deciding from spherical k-means clusters of an embedding column."""

    reason: ClassVar[str] = ""
    needs_ids: ClassVar[bool] = False  # spill `_id`s too, for details naming another row

    def computed_provides(self) -> tuple[str, ...]:
        return (CLUSTER_COLUMN, DIST_COLUMN) if self.params.columns else ()

    def check_schema(self, schema: pa.Schema) -> None:
        """An embedding column of a type that cannot hold embeddings is refused here, at validation,
        not at the fit after the stages before it ran."""
        column = self.params.embedding_column
        problem = embedding_type_problem(schema.field(column).type) if column in schema.names else None
        if problem:
            raise RecipeError("embedding_column", f"column '{column}' {problem}")

    def clusters(self, rows: int) -> int:
        raise NotImplementedError

    def decide(self, store: EmbeddingStore, centroids: np.ndarray, labels: np.ndarray, workdir: Path,
               parallel: Parallel) -> Decided:
        raise NotImplementedError

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> PruneState:
        p = self.params
        clock = _Clock()
        store = spill(batches, p.embedding_column, workdir, self.name, ids=self.needs_ids)
        n = store.rows
        if n == 0:
            store.discard()
            return write_state(workdir, self.reason, np.empty(0, np.int64), pa.array([], pa.string()), {"rows": 0})
        clock.lap("spill")
        k = min(self.clusters(n), n)
        sample = kmeans.train_rows(n, k, p.train_rows)
        centroids = kmeans.train(store, k, niter=p.niter, seed=self.seed, sample=sample, threads=p.threads)
        clock.lap("kmeans_train")
        np.save(workdir / "centroids.npy", centroids)  # read by the assignment's pieces
        labels = kmeans.assign(store, workdir / "centroids.npy", threads=p.threads, parallel=parallel)
        store.release()
        clock.lap("kmeans_assign")
        decided = self.decide(store, centroids, labels, workdir, parallel)
        store.discard()
        clock.lap("decide")
        summary = {"rows": n, "kept": n - len(decided.removed), "k": k, "train_rows": sample, "niter": p.niter,
                   **decided.summary, "seconds": clock.laps}
        rows = (labels, decided.dist) if p.columns else (None, None)
        return write_state(workdir, self.reason, decided.removed, decided.detail, summary, *rows)

    def apply(self, batch: pa.RecordBatch, state: PruneState) -> Verdict | Result:
        return state.apply(batch)
