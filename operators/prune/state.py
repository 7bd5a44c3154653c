"""What a pruning fit hands to apply (and to the manifest): the rows removed, a summary, and
optionally each row's cluster and distance to its centroid.

The removed rows are a Decisions file (curate/fit_state.py: Parquet (_ord, detail)
read per batch by _ord range); the per-row arrays are .npy files memory-mapped by apply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.columns import put
from curate.fit_state import ROW_GROUP_ROWS
from curate.ops import Decisions, FitState, Result, Verdict

CLUSTER_COLUMN = "_cluster"
DIST_COLUMN = "prune_dist_to_centroid"


@dataclass
class PruneState(FitState):
    decisions: Decisions
    info: dict  # JSON-able: what the manifest shows for the step
    rows_dir: str | None = None  # labels.npy and dist.npy, when the step adds columns

    def summary(self) -> dict:
        """The step's report for manifest.json (kept fraction per eps, per-cluster table, ...)."""
        return self.info

    def files(self) -> list[str]:
        rows = [str(Path(self.rows_dir) / name) for name in ("labels.npy", "dist.npy")] if self.rows_dir else []
        return self.decisions.files() + rows

    def apply(self, batch: pa.RecordBatch) -> Verdict | Result:
        verdict = self.decisions.verdict(batch)
        if self.rows_dir is None:
            return verdict
        ords = batch.column("_ord").to_numpy()
        labels = np.load(Path(self.rows_dir) / "labels.npy", mmap_mode="r")[ords]
        dist = np.load(Path(self.rows_dir) / "dist.npy", mmap_mode="r")[ords]
        batch = put(batch, CLUSTER_COLUMN, pa.array(labels))  # replaced if an earlier pruning step wrote them
        return Result(put(batch, DIST_COLUMN, pa.array(dist)), verdict)


def write_state(workdir: Path, reason: str, removed: np.ndarray, detail: pa.Array, info: dict,
                labels: np.ndarray | None = None, dist: np.ndarray | None = None) -> PruneState:
    """Write the decisions (removed rows ascending), summary.json and, given labels and dist,
    the per-row arrays; return the state."""
    path = workdir / "removed.parquet"
    pq.write_table(pa.table({"_ord": pa.array(removed, pa.int64()), "detail": detail}), path,
                   row_group_size=ROW_GROUP_ROWS)
    (workdir / "summary.json").write_text(json.dumps(info, indent=1))
    rows_dir = None
    if labels is not None:
        np.save(workdir / "labels.npy", labels.astype(np.int32))
        np.save(workdir / "dist.npy", dist.astype(np.float32))
        rows_dir = str(workdir)
    return PruneState(Decisions(str(path), reason=reason, removed=len(removed)), info, rows_dir)
