"""qdc_select: keep a subset of N rows that balances quality, diversity and complexity.

Each row's score is a weighted sum of its quality and complexity columns, each column first
turned into its percentile rank (so perplexities and word counts can be added; a negative
weight prefers low values, e.g. perplexity). Then (selection.py):
- method "threshold": Deita's greedy, generalised: best score first, a row is skipped when its
  cosine similarity to an already selected row is above `threshold`;
- method "facility_location": coverage of the embedding space plus `quality_weight` x score,
  maximised greedily.
The rows not selected go to the trace as `qdc_not_selected` (detail: their score and rank). The
manifest records Q (mean score of each quality column), C (of each complexity column) and D
(Vendi and mean pairwise cosine distance on a seeded sample) of the input and of the selection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curate.errors import CurateError
from curate.ops import SERIAL, FitState, Global, Parallel, Params, Verdict, reads_column
from curate_operators.prune.embeddings import UnitRows, spill
from curate_operators.score import metrics, selection


class QdcSelectParams(Params):
    size: int | None = Field(None, ge=1, description="Rows to keep (at most all); or give `fraction`.")
    fraction: float | None = Field(None, gt=0, le=1, description="Fraction of the rows to keep (rounded up).")
    embedding_column: str = reads_column("_embedding", "Embeddings (from embed) for the diversity side.")
    quality: dict[str, float] = reads_column({}, "Quality columns and their weights, e.g. "
                                                 "{quality_heuristic: 1, quality_perplexity: -1}.")
    complexity: dict[str, float] = reads_column({}, "Complexity columns and their weights.")
    method: Literal["threshold", "facility_location"] = Field("threshold", description="See the operator's doc.")
    threshold: float = Field(0.9, ge=-1, le=1, description="The most cosine similarity a selected row may have to "
                                                           "another selected row (both methods).")
    quality_weight: float = Field(1.0, ge=0, description="facility_location: weight of the mean score against the "
                                                         "coverage (both in [0, 1]; the score is a sum of weighted "
                                                         "percentile ranks).")
    coverage_sample: int = Field(2000, ge=1, description="facility_location: rows (seeded sample) whose coverage counts.")
    metrics_sample: int = Field(5000, ge=2, description="Rows (seeded sample) the D metrics use.")

    @model_validator(mode="after")
    def _check(self) -> "QdcSelectParams":
        if (self.size is None) == (self.fraction is None):
            raise ValueError("give exactly one of size and fraction")
        if not self.quality and not self.complexity:
            raise ValueError("give at least one quality or complexity column (with its weight)")
        if not any(self.quality.values()) and not any(self.complexity.values()):
            raise ValueError("every weight is 0: give at least one non-zero weight")
        return self


@dataclass
class Selection(FitState):
    path: str  # .npy: score rank of each selected row, -1 for rows not selected
    scores_path: str
    report: dict  # the manifest's summary: Q, D and C of the input and of the selection

    def files(self) -> list[str]:
        return [self.path, self.scores_path]

    def summary(self) -> dict:
        return self.report


def percentile_rank(values: np.ndarray) -> np.ndarray:
    """Rank in [0, 1] (ties share their mean rank); missing values rank lowest (0)."""
    from scipy.stats import rankdata

    out = np.zeros(len(values))
    ok = np.isfinite(values)
    if ok.sum() > 1:
        out[ok] = (rankdata(values[ok]) - 1) / (ok.sum() - 1)
    elif ok.sum() == 1:
        out[ok] = 1.0
    return out


class QdcSelect(Global):
    """Select N rows balancing quality and complexity (weighted score) with diversity (embeddings)."""

    name = "qdc_select"
    Params = QdcSelectParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Selection:
        p = self.params
        # Each quality or complexity column once, whichever weights name it.
        parts: dict[str, list[np.ndarray]] = {c: [] for c in [*p.quality, *p.complexity]}

        def observed():
            for batch in batches:
                for c, part in parts.items():
                    column = batch.column(c)
                    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
                        raise CurateError(f"{self.name}: column '{c}' must be numeric, it is {column.type}")
                    part.append(column.to_numpy(zero_copy_only=False).astype(np.float64))
                yield batch

        store = spill(observed(), p.embedding_column, workdir, self.name)
        n = store.rows
        values = {c: np.concatenate(part) if part else np.zeros(0) for c, part in parts.items()}
        score = np.zeros(n)
        for c, w in [*p.quality.items(), *p.complexity.items()]:
            score += w * percentile_rank(values[c])
        size = min(n, p.size if p.size is not None else int(np.ceil(p.fraction * n)))
        order = np.lexsort((np.arange(n), -score))  # best first; ties in input order
        x = UnitRows(store)  # read in pieces as the selection walks it
        budget = parallel.budget_gb(float("inf")) * 2**30
        filled = 0
        if n == 0 or size == 0:
            chosen = np.zeros(0, np.int64)
        elif p.method == "threshold":
            chosen, filled = selection.threshold_greedy(x, order, size, p.threshold, budget, workdir)
        else:
            chosen = selection.facility_location(x, score, size, p.quality_weight, p.coverage_sample, self.seed,
                                                 p.threshold, budget, workdir)
        rank = np.full(n, -1, np.int64)
        rank[order] = np.arange(n)
        selected = np.zeros(n, bool)
        selected[chosen] = True
        np.save(workdir / "selected.npy", selected)
        np.save(workdir / "scores.npy", np.stack([score, rank.astype(np.float64)]))
        summary = {"method": p.method, "rows": int(n), "selected": int(selected.sum()),
                   **({"threshold": p.threshold, "filled_below_threshold": int(filled)} if p.method == "threshold"
                      else {"quality_weight": p.quality_weight}),
                   "input": self._qdc(values, score, x, np.ones(n, bool)),
                   "selection": self._qdc(values, score, x, selected)}
        store.discard()
        return Selection(str(workdir / "selected.npy"), str(workdir / "scores.npy"), summary)

    def _qdc(self, values: dict[str, np.ndarray], score: np.ndarray, x: UnitRows, mask: np.ndarray) -> dict:
        p = self.params
        rows = np.flatnonzero(mask)
        rng = np.random.default_rng(self.seed)
        sample = np.sort(rng.choice(rows, min(len(rows), p.metrics_sample), replace=False)) if len(rows) else rows
        mean = lambda c: round(float(np.nanmean(values[c][rows])), 6) if len(rows) else None  # noqa: E731
        return {"rows": int(len(rows)),
                "Q": {c: mean(c) for c in p.quality},
                "C": {c: mean(c) for c in p.complexity},
                "D": {"vendi": round(metrics.vendi(x[sample]), 4),
                      "mean_pairwise_distance": round(metrics.mean_pairwise_distance(x[sample]), 6),
                      "sample": int(len(sample))},
                "score_mean": round(float(score[rows].mean()), 6) if len(rows) else None}

    def apply(self, batch: pa.RecordBatch, state: Selection) -> Verdict:
        ords = batch.column("_ord").to_numpy()
        keep = np.load(state.path, mmap_mode="r")[ords]
        score, rank = np.load(state.scores_path, mmap_mode="r")[:, ords]
        detail = pc.binary_join_element_wise(
            "score ", pc.cast(pa.array(np.round(score, 4)), pa.string()),
            ", rank ", pc.cast(pa.array(rank.astype(np.int64)), pa.string()), "")
        return Verdict(np.asarray(keep, bool), "qdc_not_selected", detail)
