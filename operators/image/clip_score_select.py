"""clip_score_select: keep the rows whose score reaches DataComp's threshold, from a fraction of the
whole dataset (mlfoundations/datacomp `baselines/apply_filter.py`).

With a fraction f of N rows: the scores sorted in descending order, threshold = sorted[int(N * f)]
(0-based; the last score when int(N * f) == N), then keep score >= threshold: int(N * f) + 1 rows,
more with ties, as the reference does. With `threshold` instead: keep score >= threshold. Rows
whose score is null are dropped (trace `clip_score_low`, detail "no score").
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curate.ops import SERIAL, Global, Parallel, Params, Value, Verdict, reads_column


class ClipScoreSelectParams(Params):
    fraction: float | None = Field(None, gt=0, le=1, description="Target fraction (DataComp: 0.3 with L/14).")
    threshold: float | None = Field(None, ge=-1, le=1, description="Or a fixed threshold (DataComp: 0.3 with B/32).")
    score_column: str = reads_column("quality_clip_score", "The score (from clip_score, or DataComp's metadata "
                                                           "clip_l14_similarity_score).")

    @model_validator(mode="after")
    def _one(self) -> "ClipScoreSelectParams":
        if (self.fraction is None) == (self.threshold is None):
            raise ValueError("give exactly one of fraction and threshold")
        return self


def threshold_from_fraction(scores: np.ndarray, fraction: float) -> float:
    """DataComp's rule: the descending sort's entry at int(N * fraction)."""
    ordered = np.sort(scores)[::-1]
    return float(ordered[min(int(len(ordered) * fraction), len(ordered) - 1)])


class ClipScoreSelect(Global):
    """Keep rows with score >= a threshold, fixed or from a fraction of the whole dataset (DataComp)."""

    name = "clip_score_select"
    Params = ClipScoreSelectParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Value:
        """Value(the threshold), or Value(None) where no row has a score (every row goes)."""
        if self.params.threshold is not None:
            return Value(self.params.threshold)
        parts = [pc.drop_null(b.column(self.params.score_column)).to_numpy(zero_copy_only=False) for b in batches]
        scores = np.concatenate(parts) if parts else np.empty(0)
        return Value(threshold_from_fraction(scores.astype(np.float64), self.params.fraction) if len(scores) else None)

    def apply(self, batch: pa.RecordBatch, state: Value) -> Verdict:
        threshold = state.value
        column = batch.column(self.params.score_column)
        scores = column.to_numpy(zero_copy_only=False).astype(np.float64)
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
        keep = valid & (scores >= threshold) if threshold is not None else np.zeros(len(scores), dtype=bool)
        details = [None if k else ("no score" if not v else f"score {s:.4f} < threshold {threshold:.4f}")
                   for k, v, s in zip(keep, valid, scores)]
        return Verdict(keep, "clip_score_low", details)
