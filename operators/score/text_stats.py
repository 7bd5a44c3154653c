"""Per-row lexical statistics over a whole batch at once (no Python loop over words).

- MATTR (moving-average type-token ratio, Covington & McFall 2010): the mean, over every window
  of `window` consecutive tokens, of distinct tokens / window; a text shorter than the window
  gets its plain type-token ratio. Tokens are lowercased runs of word characters (\\w+).
  Computed from each token's previous occurrence: token j is new in the window starting at i
  exactly when its previous occurrence is before i, so j adds one to every window start in
  (prev_j, j] that is also a valid start containing j.
- compression ratio: UTF-8 bytes / gzip bytes (mtime 0, level 9); 0 for an empty text.
- sentences: runs of text holding a word character between terminators (. ! ? and newlines).
"""

from __future__ import annotations

import gzip

import numpy as np
import polars as pl

_SENTENCE = r"[^.!?\n]*\w[^.!?\n]*"
_TOKEN = r"\w+"


def _strings(texts) -> pl.Series:
    return pl.Series(pl.from_arrow(texts)).cast(pl.String).fill_null("")


def token_counts(texts) -> np.ndarray:
    return _strings(texts).str.count_matches(_TOKEN).to_numpy().astype(np.int64)


def word_counts(texts) -> np.ndarray:
    """Whitespace-separated words (Python's str.split())."""
    return _strings(texts).str.count_matches(r"\S+").to_numpy().astype(np.int64)


def sentence_counts(texts) -> np.ndarray:
    return _strings(texts).str.count_matches(_SENTENCE).to_numpy().astype(np.int64)


def compression_ratios(texts) -> np.ndarray:
    out = np.zeros(len(texts), np.float64)
    for i, text in enumerate(_strings(texts).to_list()):
        raw = text.encode()
        if raw:
            out[i] = len(raw) / len(gzip.compress(raw, compresslevel=9, mtime=0))
    return out


def mattr(texts, window: int = 50) -> np.ndarray:
    s = _strings(texts).str.to_lowercase()
    parts = s.str.extract_all(_TOKEN)
    lengths = parts.list.len().fill_null(0).to_numpy().astype(np.int64)
    n = len(s)
    out = np.zeros(n, np.float64)
    if lengths.sum() == 0:
        return out
    doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    flat = parts.explode().drop_nulls()
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pos = np.arange(len(flat), dtype=np.int64) - starts[doc]  # position within its text
    frame = pl.DataFrame({"doc": doc, "tok": flat, "pos": pos})
    prev = frame.select(pl.col("pos").shift(1).over(["doc", "tok"]).fill_null(-1)).to_series().to_numpy()
    length = lengths[doc]
    w = np.minimum(window, length)  # short texts: one window, the whole text
    last_start = length - w
    lo = np.maximum(np.maximum(prev + 1, pos - w + 1), 0)
    hi = np.minimum(pos, last_start)
    new_in = np.clip(hi - lo + 1, 0, None).astype(np.float64)
    windows = (lengths - np.minimum(window, lengths) + 1).astype(np.float64)
    total = np.bincount(doc, weights=new_in, minlength=n)
    has = lengths > 0
    out[has] = total[has] / (windows[has] * np.minimum(window, lengths[has]))
    return out
