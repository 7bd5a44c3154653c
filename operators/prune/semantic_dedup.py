"""semantic_dedup: SemDeDup (Abbas et al. 2023) on an embedding column.

Spherical k-means, then within each cluster a row goes when its cosine similarity to an earlier
member (in the `order`: "hard" = farthest from the centroid first, so the kept copy of a group
is its hardest) is above 1 - eps (semdedup.py). The manifest summary lists the rows each of
`eps_report` would keep, from the same pass, so eps can be chosen from one run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator

from curate.ops import Parallel
from curate_operators.prune import semdedup
from curate_operators.prune.embeddings import EmbeddingStore, ids_at
from curate_operators.prune.order import Mode
from curate_operators.prune.step import ClusterParams, ClusterStep, Decided

MAX_DEFAULT_K = 50_000  # the SemDeDup paper's k for LAION-440M
EPS_REPORT = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3]


class SemanticDedupParams(ClusterParams):
    eps: float = Field(0.01, gt=0, lt=1, description="A row goes if its cosine similarity to an earlier row of "
                       "its cluster is > 1 - eps.")
    eps_report: list[float] = Field(EPS_REPORT, description="eps values whose kept rows the manifest reports "
                                    "(eps itself is always included).")
    k: int | None = Field(None, ge=1, description=f"Clusters; default rows / 1000 (at least 1, at most "
                          f"{MAX_DEFAULT_K}); more than the rows is capped at the rows.")
    order: Mode = Field("hard", description="Order within a cluster; the first of each duplicate group stays: "
                        "'hard' (farthest from the centroid first), 'easy' (nearest first) or 'random' (seeded).")

    @field_validator("eps_report")
    @classmethod
    def _in_range(cls, values: list[float]) -> list[float]:
        if any(not 0 < v < 1 for v in values):
            raise ValueError("every eps must be in (0, 1)")
        return values


def default_k(rows: int) -> int:
    return max(1, min(rows // 1000, MAX_DEFAULT_K))


class SemanticDedup(ClusterStep):
    """Remove semantic near-duplicates (SemDeDup): per k-means cluster, rows above a cosine similarity."""

    name = "semantic_dedup"
    Params = SemanticDedupParams
    reason = "semantic_duplicate"
    needs_ids = True

    def clusters(self, rows: int) -> int:
        return self.params.k or default_k(rows)

    def decide(self, store: EmbeddingStore, centroids: np.ndarray, labels: np.ndarray, workdir: Path,
               parallel: Parallel) -> Decided:
        p = self.params
        s = semdedup.scores(store, centroids, labels, order=p.order, seed=self.seed, parallel=parallel)
        removed = np.flatnonzero(s.removed(p.eps))
        similarity = pc.cast(pa.array(np.round(s.max_similarity[removed].astype(np.float64), 6)), pa.string())
        detail = pc.binary_join_element_wise(
            "similarity ", similarity, " to ", ids_at(workdir, s.match[removed]),
            " (cluster ", pc.cast(pa.array(labels[removed]), pa.string()), ")", "")
        n = len(labels)
        sizes = np.bincount(labels, minlength=len(centroids))
        kept = {str(e): int(n - s.removed(e).sum()) for e in sorted(set(p.eps_report) | {p.eps})}
        summary = {"eps": p.eps, "order": p.order,
                   "kept_by_eps": kept, "kept_fraction_by_eps": {e: round(v / n, 6) for e, v in kept.items()},
                   "cluster_size": {"min": int(sizes.min()), "median": float(np.median(sizes)),
                                    "max": int(sizes.max())}}
        return Decided(removed, detail, summary, s.dist)
