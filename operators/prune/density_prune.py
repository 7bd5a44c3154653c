"""density_prune: concept-complexity pruning (DBP, Abbas, Rusak et al. ICLR 2024) to exactly N rows.

Spherical k-means; each cluster's complexity d_intra x d_inter sets its share softmax(C / T) of
N, projected onto [lower bound, cluster size] with an exact total (quotas.py); within a cluster
the hardest (or easiest, or seeded random) rows fill the quota (dbp.py). Run semantic_dedup
first: the paper calls deduplication crucial, duplicates otherwise dominate clusters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curate.ops import Parallel
from curate_operators.prune.dbp import Complexity, dbp
from curate_operators.prune.embeddings import EmbeddingStore
from curate_operators.prune.order import Mode
from curate_operators.prune.step import ClusterParams, ClusterStep, Decided


class DensityPruneParams(ClusterParams):
    fraction: float | None = Field(None, gt=0, le=1, description="Keep this fraction of the rows (N = fraction x "
                                   "rows, rounded half up, at least 1). Give fraction or count.")
    count: int | None = Field(None, ge=1, description="Keep exactly this many rows (all of them if there are fewer).")
    k: int = Field(100, ge=1, description="Clusters (paper: 100 for DataComp Medium, 500 for LAION-DeDup-280M); "
                   "more than the rows is capped at the rows.")
    niter: int = Field(100, ge=1, le=1000, description="k-means iterations (the reference's default).")
    complexity: Complexity = Field("dintra*dinter", description="Cluster weights: 'dintra*dinter' (DBP: softmax of "
                                   "complexity / temperature), 'uniform' (SSP with cluster balance), "
                                   "'clustersize' (proportional to size).")
    temperature: float = Field(0.5, gt=0, description="Softmax temperature T of DBP's weights.")
    balance: float = Field(0.5, ge=0, le=1, description="Cluster balance b: every cluster keeps at least "
                           "min(floor(b N / k), size - 1) rows, and at least 1 of 2+ rows where N allows.")
    neighbors: int = Field(20, ge=1, description="l: d_inter averages over the l nearest other centroids (<= k - 1).")
    mode: Mode = Field("hard", description="Rows kept within a cluster: 'hard' (farthest from the centroid), "
                       "'easy' (nearest) or 'random' (seeded).")

    @model_validator(mode="after")
    def _one_target(self):
        if (self.fraction is None) == (self.count is None):
            raise ValueError("give exactly one of fraction or count")
        return self


def _floats(values: np.ndarray) -> list:
    return [None if not np.isfinite(v) else round(float(v), 6) for v in values]


class DensityPrune(ClusterStep):
    """Keep exactly N rows, more from complex concept clusters (DBP); or SSP / size-proportional."""

    name = "density_prune"
    Params = DensityPruneParams
    reason = "density_pruned"

    def clusters(self, rows: int) -> int:
        return self.params.k

    def target(self, rows: int) -> int:
        p = self.params
        return p.count if p.count is not None else max(1, int(np.floor(p.fraction * rows + 0.5)))

    def decide(self, store: EmbeddingStore, centroids: np.ndarray, labels: np.ndarray, workdir: Path,
               parallel: Parallel) -> Decided:
        p = self.params
        n = len(labels)
        keep = self.target(n)
        r = dbp(store, centroids, labels, keep=keep, complexity=p.complexity, temperature=p.temperature,
                balance=p.balance, neighbors=p.neighbors, mode=p.mode, seed=self.seed)
        removed = np.flatnonzero(~r.keep)
        per_cluster = pc.binary_join_element_wise(
            "cluster ", pc.cast(pa.array(np.arange(len(centroids))), pa.string()),
            ": complexity ", pc.cast(pa.array(np.round(r.complexity, 6)), pa.string()),
            ", quota ", pc.cast(pa.array(r.quota), pa.string()),
            " of ", pc.cast(pa.array(r.size), pa.string()), "")
        detail = per_cluster.take(pa.array(labels[removed]))
        kept = np.bincount(labels[r.keep], minlength=len(centroids))
        summary = {"target": keep, "complexity": p.complexity, "temperature": p.temperature, "balance": p.balance,
                   "neighbors": min(p.neighbors, len(centroids) - 1), "mode": p.mode,
                   "clusters": {"cluster": list(range(len(centroids))), "size": r.size.tolist(),
                                "d_intra": _floats(r.d_intra), "d_inter": _floats(r.d_inter),
                                "complexity": _floats(r.complexity), "weight": _floats(r.weight),
                                "quota": r.quota.tolist(), "kept": kept.tolist()}}
        return Decided(removed, detail, summary, r.dist)
