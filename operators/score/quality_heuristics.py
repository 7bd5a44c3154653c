"""quality_heuristics: Gopher's heuristic quality measurements as score columns, removing nothing.

The metrics are gopher_quality's (operators/filters/gopher_metrics.py, measured by the same
code), written as `quality_<metric>` for every row, plus `quality_heuristic`: the fraction of
Gopher's rules (at gopher_quality's bounds, or those given in `rules`) that the row passes, a
single number in [0, 1] that qdc_select can weigh. By default only the cheap metrics and rules
(word, symbol, line and duplicate-line ones); the n-gram ones are opt-in (`metrics`, `ngram_rules`).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
from pydantic import Field, field_validator

from curate.columns import put, text_array
from curate.ops import TEXT, Map, Params
from curate_operators.filters.gopher import GopherQuality, GopherQualityParams, _rules

CHEAP = ("word_count", "mean_word_length", "hash_word_ratio", "ellipsis_word_ratio", "bullet_line_frac",
         "ellipsis_line_frac", "alpha_word_frac", "stop_words", "dup_line_frac", "dup_para_frac",
         "dup_line_char_frac", "dup_para_char_frac")
NGRAM = re.compile(r"(top|dup)_([2-9]|10)gram_char_frac")


class QualityHeuristicsParams(Params):
    metrics: list[str] = Field(
        list(CHEAP),
        description="Gopher metrics to write as quality_<metric> columns (see `curate ops gopher_quality`); "
                    "the n-gram ones, top_<n>gram_char_frac and dup_<n>gram_char_frac, cost about four times as much as "
                    "all the others together.")
    ngram_rules: bool = Field(False, description="Count Gopher's n-gram repetition rules in quality_heuristic too "
                                                 "(measures the n-grams of every row: about five times the cost).")

    @field_validator("metrics")
    @classmethod
    def _known(cls, metrics: list[str]) -> list[str]:
        unknown = [m for m in metrics if m not in CHEAP and not NGRAM.fullmatch(m)]
        if unknown:
            raise ValueError(f"unknown Gopher metric(s) {', '.join(unknown)}; known: {', '.join(CHEAP)}, "
                             "top_<n>gram_char_frac, dup_<n>gram_char_frac (n from 2 to 10)")
        return metrics

    combined: bool = Field(True, description="Also write quality_heuristic: the fraction of Gopher's rules passed.")
    rules: GopherQualityParams = Field(
        GopherQualityParams(), description="Bounds of the rules behind quality_heuristic (gopher_quality's "
                                           "parameters; its defaults are the paper's).")


class QualityHeuristics(Map):
    """Gopher heuristic quality metrics as quality_* columns, and the fraction of its (cheap) rules passed."""

    name = "quality_heuristics"
    Params = QualityHeuristicsParams
    requires = (TEXT,)

    def __init__(self, params=None, *, seed: int = 0, text_column: str = "text"):
        super().__init__(params, seed=seed, text_column=text_column)
        p = self.params
        rules = [r for r in (_rules(p.rules) if p.combined else []) if p.ngram_rules or not NGRAM.fullmatch(r.metric)]
        grams = [NGRAM.fullmatch(m) for m in [*p.metrics, *(r.metric for r in rules)]]
        top = {int(g[2]) for g in grams if g and g[1] == "top"}
        dup = {int(g[2]) for g in grams if g and g[1] == "dup"}
        # gopher_quality measures every metric of every row when `scores` is on.
        self.gopher = GopherQuality(GopherQualityParams(
            scores=True, stop_words=p.rules.stop_words,
            max_top_ngram_char_frac={n: None for n in sorted(top)},
            max_dup_ngram_char_frac={n: None for n in sorted(dup)}), text_column=text_column)
        self.rules = rules

    def computed_provides(self) -> tuple[str, ...]:
        p = self.params
        return tuple(f"quality_{m}" for m in p.metrics) + (("quality_heuristic",) if p.combined else ())

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        metrics = self.gopher.measure(text_array(batch, self.text_column, self.name))
        for metric in self.params.metrics:
            batch = put(batch, f"quality_{metric}", metrics[metric])
        if self.rules:
            passed = sum((~rule.fails(metrics[rule.metric])).astype(np.float64) for rule in self.rules)
            batch = put(batch, "quality_heuristic", passed / len(self.rules))
        return batch
