"""DataComp's caption rules of the image-based filter (mlfoundations/datacomp apply_filter.py,
`caption_filter`): an English caption (the fastText language-ID's top label, from a
`language_id` step's column), more than one token by fastText's own tokenizer, and more than 5
characters.

fastText's tokenizer (`fasttext.tokenize`, Dictionary::readWord) splits on the ASCII whitespace
` \\n\\r\\t\\v\\f` and NUL, and gives an end-of-sentence token `</s>` for every line break: so
"cat\\n" is two tokens and passes, a quirk of the reference kept here. Counted on Arrow with two
regex counts, no Python per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_WORD = r"[^ \n\r\t\v\f\x00]+"
MIN_TOKENS = 2  # len(fasttext.tokenize(text)) > 1
MIN_CHARS = 6  # len(text) > 5


def fasttext_token_counts(captions: pa.Array) -> np.ndarray:
    """len(fasttext.tokenize(c)) of every caption (0 for a null)."""
    words = pc.count_substring_regex(captions, _WORD)
    counts = pc.add(words, pc.count_substring(captions, "\n"))
    return pc.fill_null(counts, 0).to_numpy(zero_copy_only=False)


def caption_failures(captions: pa.Array, languages: pa.Array | None, language: str) -> tuple[np.ndarray, list]:
    """(failed mask, detail per row) of the caption rules; `languages` None: no English rule."""
    captions = captions.cast(pa.string())
    tokens = fasttext_token_counts(captions)
    chars = pc.fill_null(pc.utf8_length(captions), 0).to_numpy(zero_copy_only=False)
    failed = (tokens < MIN_TOKENS) | (chars < MIN_CHARS)
    details = [f"{t} fastText tokens, {c} characters" if f else None for f, t, c in zip(failed, tokens, chars)]
    if languages is not None:
        found = languages.cast(pa.string()).to_pylist()
        for i, code in enumerate(found):
            if code != language:
                failed[i] = True
                details[i] = f"language {code} is not {language}"
    return failed, details
