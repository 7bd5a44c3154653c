"""c4_quality: the line and page rules of C4 (Raffel et al. 2020, section 2.2), datatrove's defaults.

Line by line (lines are `str.splitlines()`, stripped), as in the C4 code and datatrove's
C4QualityFilter: a line with a word over `max_word_length` characters goes; Wikipedia-style
citations ("[1]", "[edit]", "[citation needed]") are removed; a line not ending in terminal
punctuation (. ? ! " ') or ending in "..." goes, as does one of fewer than `min_words_per_line`
words, one mentioning "javascript" and one with a cookie/terms-of-use phrase. A kept line with
"lorem ipsum" or a curly bracket removes the whole page; so does a page with fewer than
`min_sentences` sentences in its kept lines, or, with `bad_words`, any word of that list.
Kept pages keep only their kept lines (`rewrite_text`), as C4 did.

Sentences are counted by a regex (a run of . ! ? and CJK stops followed by a space or the end
of the line) where datatrove uses spaCy's sentencizer: what spaCy's tokenizer takes for an
abbreviation ("e.g. this", a single letter as in "... for a. Is") ends a sentence here. Documented in the bench (bench/sections/webfilters.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put, text_values
from curate.errors import RecipeError
from curate.ops import TEXT, Filter, Params, Result, Verdict, loaded

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
SENTENCE_END = re.compile(r"[.!?。！？]+[\"'”’)\]]*(?=\s|$)")
SCORE_PREFIX = "quality_c4_"


class C4QualityParams(Params):
    min_sentences: int | None = Field(5, ge=0, description="Fewest sentences in the kept lines; null: no minimum.")
    min_words_per_line: int | None = Field(3, ge=0, description="Lines with fewer words go; null: no minimum.")
    max_word_length: int | None = Field(1000, ge=1, description="Lines with a longer word go; null: no maximum.")
    remove_citations: bool = Field(True, description="Remove [1], [edit], [citation needed] from lines.")
    terminal_punctuation: bool = Field(True, description="Lines must end in . ? ! \" ' (and not in '...').")
    lorem_ipsum: bool = Field(True, description="Remove pages with 'lorem ipsum' in a kept line.")
    javascript: bool = Field(True, description="Remove lines mentioning 'javascript'.")
    curly_bracket: bool = Field(True, description="Remove pages with '{' in a kept line.")
    policy: bool = Field(True, description="Remove lines with cookie / terms-of-use / privacy-policy phrases.")
    bad_words: str | None = Field(
        None, description="A file of words (one a line, e.g. LDNOOBW's list): pages containing any, as a whole word "
                          "in any case, are removed. Optional, as in datatrove.")
    rewrite_text: bool = Field(True, description="Kept pages keep only their kept lines, as C4 did.")
    scores: bool = Field(False, description=f"Add {SCORE_PREFIX}sentences and {SCORE_PREFIX}kept_line_frac columns.")


class C4Quality(Filter):
    """Keeps C4's clean lines and drops pages that C4's rules reject."""

    name = "c4_quality"
    Params = C4QualityParams
    requires = (TEXT,)

    def computed_provides(self) -> tuple[str, ...]:
        return (SCORE_PREFIX + "sentences", SCORE_PREFIX + "kept_line_frac") if self.params.scores else ()

    @loaded
    def bad_words(self) -> frozenset[str]:
        if not self.params.bad_words:
            return frozenset()
        path = Path(self.params.bad_words)
        if not path.is_file():
            raise RecipeError("bad_words", f"c4_quality: bad word list {path} does not exist")
        return frozenset(w.strip().lower() for w in path.read_text().splitlines() if w.strip())

    def page(self, text: str) -> tuple[str | None, str, int, float]:
        """(the reason the page goes or None, its kept text, its sentence count, its kept line fraction)."""
        p = self.params
        kept, sentences, lines = [], 0, text.splitlines()
        for line in lines:
            line = line.strip()
            words = line.split()
            if p.max_word_length is not None and any(len(w) > p.max_word_length for w in words):
                continue
            if p.remove_citations:
                line = CITATION.sub("", line)
            if p.terminal_punctuation and (not line.endswith(END_PUNCTUATION) or line.endswith("...")):
                continue
            if p.min_words_per_line is not None and len(words) < p.min_words_per_line:
                continue
            lower = line.lower()
            if p.lorem_ipsum and "lorem ipsum" in lower:
                return "c4_lorem_ipsum", text, sentences, 0.0
            if p.javascript and "javascript" in lower:
                continue
            if p.curly_bracket and "{" in line:
                return "c4_curly_bracket", text, sentences, 0.0
            if p.policy and any(phrase in lower for phrase in POLICY_PHRASES):
                continue
            sentences += max(1, len(SENTENCE_END.findall(line)))
            kept.append(line)
        fraction = len(kept) / len(lines) if lines else 0.0
        if p.min_sentences is not None and sentences < p.min_sentences:
            return "c4_too_few_sentences", text, sentences, fraction
        if self.bad_words and not self.bad_words.isdisjoint(re.findall(r"\w+", text.lower())):
            return "c4_bad_words", text, sentences, fraction
        return None, "\n".join(kept).strip(), sentences, fraction

    def keep(self, batch: pa.RecordBatch):
        texts = text_values(batch, self.text_column, self.name)
        results = [self.page(t) for t in texts]
        reasons = [r[0] for r in results]
        keep = np.array([r is None for r in reasons], bool)
        details = [None if r is None else f"sentences={s}" if r == "c4_too_few_sentences" else None
                   for r, _, s, _ in results]
        verdict = Verdict(keep=keep, reason=pa.array(reasons, pa.string()), detail=pa.array(details, pa.string()))
        if self.params.rewrite_text:
            # Removed pages keep their original text, so the trace shows what was judged.
            column = batch.schema.get_field_index(self.text_column)
            original = batch.column(column).to_pylist()
            text = pa.array([o if r[0] else r[1] for o, r in zip(original, results)], batch.schema.field(column).type)
            batch = batch.set_column(column, self.text_column, text)
        if self.params.scores:
            batch = put(batch, SCORE_PREFIX + "sentences", [r[2] for r in results], pa.int64())
            batch = put(batch, SCORE_PREFIX + "kept_line_frac", [r[3] for r in results])
        return Result(batch, verdict) if self.params.rewrite_text or self.params.scores else verdict
