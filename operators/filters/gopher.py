"""gopher_quality: the heuristic quality and repetition rules of Gopher (Rae et al. 2021).

Rules run in the paper's order; a removed row's reason names the first rule it fails
("gopher_word_count") and its detail the measured value and the bound ("word_count=12 < 50");
a removed row whose text is null (a record without it) or blank is `no_text` instead.
The cheap rules (word, symbol, line and line-repetition statistics) are measured for every
row; the n-gram repetition rules only for rows that passed all the others, unless `scores`
asks for every value of every row. See gopher_metrics for the exact definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl
import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from curate.columns import put, text_array
from curate.ops import TEXT, Filter, Params, Result, Verdict
from curate_operators.filters import gopher_metrics as gm

STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
SCORE_PREFIX = "quality_gopher_"


class GopherQualityParams(Params):
    min_words: int | None = Field(50, ge=0, description="Fewest words (whitespace-separated tokens); null: no minimum.")
    max_words: int | None = Field(100_000, ge=0, description="Most words; null: no maximum.")
    min_mean_word_length: float | None = Field(3, ge=0, description="Smallest mean word length in characters.")
    max_mean_word_length: float | None = Field(10, ge=0, description="Largest mean word length in characters.")
    max_symbol_word_ratio: float | None = Field(
        0.1, ge=0, description="Most '#' per word, and most ellipses ('...' or '…') per word (two rules, one bound).")
    max_bullet_line_frac: float | None = Field(
        0.9, ge=0, le=1, description="Largest fraction of non-blank lines starting with a bullet (•, -, *, ...).")
    max_ellipsis_line_frac: float | None = Field(0.3, ge=0, le=1, description="Largest fraction of non-blank lines ending with an ellipsis.")
    min_alpha_word_frac: float | None = Field(0.8, ge=0, le=1, description="Smallest fraction of words with an alphabetic character.")
    min_stop_words: int | None = Field(2, ge=0, description="Fewest distinct stop words present (whole words, any case).")
    stop_words: tuple[str, ...] = Field(STOP_WORDS, description="The stop words of min_stop_words.")
    max_dup_line_frac: float | None = Field(0.30, ge=0, le=1, description="Largest fraction of non-blank lines repeating an earlier line.")
    max_dup_para_frac: float | None = Field(0.30, ge=0, le=1, description="Largest fraction of paragraphs repeating an earlier one.")
    max_dup_line_char_frac: float | None = Field(
        0.20, ge=0, le=1, description="Largest fraction of the text's characters in lines repeating an earlier line.")
    max_dup_para_char_frac: float | None = Field(
        0.20, ge=0, le=1, description="Largest fraction of the text's characters in paragraphs repeating an earlier one.")
    max_top_ngram_char_frac: dict[int, float | None] = Field(
        {2: 0.20, 3: 0.18, 4: 0.16},
        description="n -> largest fraction of word characters in the most frequent n-gram (count x its characters); "
                    "an n left out or set to null is not checked.")
    max_dup_ngram_char_frac: dict[int, float | None] = Field(
        {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10},
        description="n -> largest fraction of word characters covered by n-grams occurring more than once; "
                    "an n left out or set to null is not checked.")
    scores: bool = Field(
        False, description=f"Add every measured value as a column {SCORE_PREFIX}<metric> (costs the n-gram "
                           "statistics of rows that an earlier rule already removed).")

    @field_validator("max_top_ngram_char_frac", "max_dup_ngram_char_frac")
    @classmethod
    def _n_in_range(cls, bounds: dict[int, float | None]) -> dict[int, float | None]:
        bad = [n for n in bounds if not 2 <= n <= 32]
        if bad:
            raise ValueError(f"n-gram sizes must be between 2 and 32, got {bad}")
        bad = [b for b in bounds.values() if b is not None and not 0 <= b <= 1]
        if bad:
            raise ValueError(f"fractions must be between 0 and 1, got {bad}")
        return bounds

    @model_validator(mode="after")
    def _min_not_above_max(self) -> "GopherQualityParams":
        # A minimum above its maximum removes every row: surely a typo, so refuse it.
        for low, high in (("min_words", "max_words"), ("min_mean_word_length", "max_mean_word_length")):
            a, b = getattr(self, low), getattr(self, high)
            if a is not None and b is not None and a > b:
                raise ValueError(f"{low} ({a}) > {high} ({b}) would remove every row")
        return self


@dataclass(frozen=True)
class Rule:
    metric: str
    bound: float
    is_min: bool  # True: the metric must be >= bound; False: <= bound

    def fails(self, values: np.ndarray) -> np.ndarray:
        return values < self.bound if self.is_min else values > self.bound  # NaN (not measured) never fails


def _rules(p: GopherQualityParams) -> list[Rule]:
    table = [
        ("word_count", p.min_words, True), ("word_count", p.max_words, False),
        ("mean_word_length", p.min_mean_word_length, True), ("mean_word_length", p.max_mean_word_length, False),
        ("hash_word_ratio", p.max_symbol_word_ratio, False), ("ellipsis_word_ratio", p.max_symbol_word_ratio, False),
        ("bullet_line_frac", p.max_bullet_line_frac, False), ("ellipsis_line_frac", p.max_ellipsis_line_frac, False),
        ("alpha_word_frac", p.min_alpha_word_frac, True), ("stop_words", p.min_stop_words, True),
        ("dup_line_frac", p.max_dup_line_frac, False), ("dup_para_frac", p.max_dup_para_frac, False),
        ("dup_line_char_frac", p.max_dup_line_char_frac, False), ("dup_para_char_frac", p.max_dup_para_char_frac, False),
        *((f"top_{n}gram_char_frac", b, False) for n, b in sorted(p.max_top_ngram_char_frac.items())),
        *((f"dup_{n}gram_char_frac", b, False) for n, b in sorted(p.max_dup_ngram_char_frac.items())),
    ]
    return [Rule(m, float(b), is_min) for m, b, is_min in table if b is not None]


def _measured_ns(bounds: dict[int, float | None], scores: bool) -> tuple[int, ...]:
    return tuple(sorted(n for n, b in bounds.items() if b is not None or scores))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


class GopherQuality(Filter):
    """Drops documents that fail any of Gopher's quality or repetition heuristics."""

    name = "gopher_quality"
    Params = GopherQualityParams
    requires = (TEXT,)

    @cached_property
    def rules(self) -> list[Rule]:
        return _rules(self.params)

    # The n of the n-gram metrics measured: those with a bound, or every one given when `scores` is on.
    @cached_property
    def top_ns(self) -> tuple[int, ...]:
        return _measured_ns(self.params.max_top_ngram_char_frac, self.params.scores)

    @cached_property
    def dup_ns(self) -> tuple[int, ...]:
        return _measured_ns(self.params.max_dup_ngram_char_frac, self.params.scores)

    def computed_provides(self) -> tuple[str, ...]:
        return tuple(SCORE_PREFIX + m for m in self._metric_names()) if self.params.scores else ()

    def _metric_names(self) -> list[str]:
        return ["word_count", "mean_word_length", "hash_word_ratio", "ellipsis_word_ratio", "bullet_line_frac",
                "ellipsis_line_frac", "alpha_word_frac", "stop_words", "dup_line_frac", "dup_para_frac",
                "dup_line_char_frac", "dup_para_char_frac", *(f"top_{n}gram_char_frac" for n in self.top_ns),
                *(f"dup_{n}gram_char_frac" for n in self.dup_ns)]

    def measure(self, texts: pa.Array | pa.ChunkedArray) -> dict[str, np.ndarray]:
        """Every metric for every row; n-gram metrics are NaN for rows already failing a cheap rule
        (all rows are measured when `scores` is on)."""
        text = pl.Series(pl.from_arrow(texts)).cast(pl.String).fill_null("")
        n = len(text)
        split = gm.Split(text)
        metrics = gm.word_metrics(text, split, self.params.stop_words) | gm.line_metrics(text)
        if not (self.top_ns or self.dup_ns):
            return metrics
        todo = np.ones(n, bool)
        if not self.params.scores:
            for rule in self.rules:
                if rule.metric in metrics:
                    todo &= ~rule.fails(metrics[rule.metric])
        rows = np.flatnonzero(todo)
        for metric, values in gm.ngram_metrics(split.words(todo), len(rows), self.top_ns, self.dup_ns).items():
            metrics[metric] = np.full(n, np.nan)
            metrics[metric][rows] = values
        return metrics

    def keep(self, batch: pa.RecordBatch):
        """The verdict; with `scores`, (the batch with the score columns, the verdict), which the
        engine accepts from a filter, so the kept rows carry their scores on."""
        metrics = self.measure(text_array(batch, self.text_column, self.name))
        n = batch.num_rows
        first_failed = np.full(n, -1)
        for i, rule in enumerate(self.rules):
            first_failed[(first_failed < 0) & rule.fails(metrics[rule.metric])] = i
        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        for row in np.flatnonzero(first_failed >= 0):  # only removed rows get strings
            rule = self.rules[first_failed[row]]
            reasons[row] = f"gopher_{rule.metric}"
            op = "<" if rule.is_min else ">"
            details[row] = f"{rule.metric}={_fmt(metrics[rule.metric][row])} {op} {_fmt(rule.bound)}"
        texts = batch.column(self.text_column)
        for row in np.flatnonzero(first_failed >= 0):  # no text to judge: its own reason, not a rule's
            value = texts[int(row)].as_py()
            if value is None or not value.strip():
                reasons[row] = "no_text"
                details[row] = "the text is null" if value is None else "the text is blank"
        verdict = Verdict(keep=first_failed < 0, reason=pa.array(reasons, pa.string()),
                          detail=pa.array(details, pa.string()))
        if not self.params.scores:
            return verdict
        for metric in self._metric_names():
            batch = put(batch, SCORE_PREFIX + metric, metrics[metric])
        return Result(batch, verdict)
