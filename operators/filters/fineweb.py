"""fineweb_quality: the three rules FineWeb added to Gopher and C4 (Penedo et al. 2024), datatrove's defaults.

Over the non-blank lines (split on "\\n", kept as they are): the fraction ending in terminal
punctuation must be at least `min_line_punct_ratio`; the fraction of at most
`short_line_length` characters at most `max_short_line_ratio`; the characters of lines
repeating an earlier line, over the text's characters without newlines, at most
`max_dup_line_char_ratio`; and newlines per word at most `max_newline_word_ratio` (list-like
pages). A page without a non-blank line is removed as empty.

Terminal punctuation is every character with the Unicode Sentence_Terminal property: datatrove's
list up to the Unicode version (it has three Khmer signs more, and 14 newer characters fewer). Words are `\\w+` runs and single punctuation marks, which is how spaCy's
English tokenizer (datatrove's) splits most text; contractions ("it's") count one word more here.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import regex
from pydantic import Field

from curate.columns import put, text_values
from curate.ops import TEXT, Filter, Params, Result, Verdict

TERMINAL = regex.compile(r"\p{Sentence_Terminal}$")
WORD = regex.compile(r"\w+|[^\w\s]")
SCORE_PREFIX = "quality_fineweb_"
METRICS = ("line_punct_ratio", "short_line_ratio", "dup_line_char_ratio", "newline_word_ratio")


class FineWebQualityParams(Params):
    min_line_punct_ratio: float | None = Field(0.12, ge=0, le=1, description="Smallest fraction of lines ending in "
                                                                            "terminal punctuation; null: not checked.")
    line_punct_exclude_zero: bool = Field(False, description="Keep pages where no line ends in punctuation at all.")
    max_short_line_ratio: float | None = Field(0.67, ge=0, le=1, description="Largest fraction of short lines.")
    short_line_length: int = Field(30, ge=0, description="A line of at most this many characters is short.")
    max_dup_line_char_ratio: float | None = Field(0.01, ge=0, le=1, description="Largest fraction of characters in "
                                                                               "lines repeating an earlier line.")
    max_newline_word_ratio: float | None = Field(0.3, ge=0, description="Most newlines per word (list-like pages).")
    scores: bool = Field(False, description=f"Add the four ratios as {SCORE_PREFIX}<metric> columns.")


def measure(text: str, short_line_length: int) -> tuple[float, float, float, float] | None:
    """The four ratios of one page, or None when it has no non-blank line."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return None
    punct = sum(1 for line in lines if TERMINAL.search(line)) / len(lines)
    short = sum(1 for line in lines if len(line) <= short_line_length) / len(lines)
    seen, dup_chars = set(), 0
    for line in lines:
        if line in seen:
            dup_chars += len(line)
        seen.add(line)
    dup = dup_chars / max(1, len(text) - text.count("\n"))
    newlines = text.count("\n") / max(1, len(WORD.findall(text)))
    return punct, short, dup, newlines


class FineWebQuality(Filter):
    """Drops pages with few punctuated lines, many short lines, duplicated lines or list-like layout."""

    name = "fineweb_quality"
    Params = FineWebQualityParams
    requires = (TEXT,)

    def computed_provides(self) -> tuple[str, ...]:
        return tuple(SCORE_PREFIX + m for m in METRICS) if self.params.scores else ()

    def reason(self, ratios: tuple[float, float, float, float] | None) -> tuple[str, str] | None:
        """The first rule the page fails, as (reason, detail), or None."""
        p = self.params
        if ratios is None:
            return "fineweb_empty", "no non-blank line"
        punct, short, dup, newlines = ratios
        if p.min_line_punct_ratio is not None and punct < p.min_line_punct_ratio and not (
                punct == 0 and p.line_punct_exclude_zero):
            return "fineweb_line_punct_ratio", f"line_punct_ratio={punct:.4g} < {p.min_line_punct_ratio:g}"
        if p.max_short_line_ratio is not None and short > p.max_short_line_ratio:
            return "fineweb_short_line_ratio", f"short_line_ratio={short:.4g} > {p.max_short_line_ratio:g}"
        if p.max_dup_line_char_ratio is not None and dup > p.max_dup_line_char_ratio:
            return "fineweb_dup_line_char_ratio", f"dup_line_char_ratio={dup:.4g} > {p.max_dup_line_char_ratio:g}"
        if p.max_newline_word_ratio is not None and newlines > p.max_newline_word_ratio:
            return "fineweb_list_ratio", f"newline_word_ratio={newlines:.4g} > {p.max_newline_word_ratio:g}"
        return None

    def keep(self, batch: pa.RecordBatch):
        measured = [measure(t, self.params.short_line_length) for t in text_values(batch, self.text_column, self.name)]
        failed = [self.reason(r) for r in measured]
        verdict = Verdict(keep=np.array([f is None for f in failed], bool),
                          reason=pa.array([f and f[0] for f in failed], pa.string()),
                          detail=pa.array([f and f[1] for f in failed], pa.string()))
        if not self.params.scores:
            return verdict
        for i, metric in enumerate(METRICS):
            batch = put(batch, SCORE_PREFIX + metric, [None if r is None else r[i] for r in measured])
        return Result(batch, verdict)
