"""Words of a batch for decontamination: the dedup shingles' normalisation and tokenisation
(Unicode NFKC, lower case, runs of \\w: punctuation and whitespace differences disappear), hashed,
with the hash of every k-word window of every document; and, for the few documents that match,
where each word lies in the original text.

Window hashes are polynomial over the word hashes (odd base, mod 2**64), from one prefix sum per
batch: the hash of any window, of any length, costs three array operations, so windows of every
length a benchmark needs come from the same prefix sums, linear in the batch's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from curate_operators.dedup.shingles import ShingleSpec, fmix64, normalize, tokens

# The one normalisation both sides share: the same as near-dedup's word shingles.
WORDS = ShingleSpec("word", 1, lowercase=True)
_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so invertible mod 2**64
_BASE_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))
_ASCII_WORD = re.compile(r"\w+", re.ASCII)
# Splitting a text before an ASCII character never changes its NFKC form (no composition takes an
# ASCII character as its second part, and an ASCII character is a starter that blocks reordering),
# so each piece can be normalised alone and its characters traced back.
_PIECE = re.compile(r"[\x00-\x7f][^\x00-\x7f]*|[^\x00-\x7f]+")


@dataclass
class BatchWords:
    """Every document's words, flat: document i owns hashes[offsets[i]:offsets[i+1]]."""

    hashes: np.ndarray  # uint64, one per word
    offsets: np.ndarray  # int64, documents + 1
    prefix: np.ndarray  # uint64, words + 1: sum of hashes[j] * BASE**j over j < i
    inverse: np.ndarray  # uint64, words: BASE**-i

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def windows(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(start word, hash) of every k-word window that lies inside one document."""
        doc = np.repeat(np.arange(len(self.offsets) - 1), self.lengths)
        starts = np.flatnonzero(np.arange(len(self.hashes)) + k <= self.offsets[1:][doc])
        return starts, window_hash(self.prefix, self.inverse, starts, k)


def window_hash(prefix: np.ndarray, inverse: np.ndarray, starts: np.ndarray, k: int) -> np.ndarray:
    """The hash of words [s, s+k) for each s: (P[s+k] - P[s]) * BASE**-s, mixed, with k mixed in."""
    with np.errstate(over="ignore"):
        raw = (prefix[starts + k] - prefix[starts]) * inverse[starts]
    return fmix64(raw ^ np.uint64(k))


def batch_words(texts: pa.Array | pa.ChunkedArray | pl.Series) -> BatchWords:
    series = texts if isinstance(texts, pl.Series) else pl.Series(pa.chunked_array([texts]) if isinstance(texts, pa.Array) else texts)
    lists = tokens(series.cast(pl.String), WORDS)
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = lists.explode().drop_nulls()
    hashes = flat.hash(seed=0).to_numpy().astype(np.uint64) if len(flat) else np.zeros(0, np.uint64)
    return BatchWords(hashes, offsets, *_prefix(hashes))


def _prefix(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(hashes)
    powers = np.full(n, _BASE, np.uint64)
    inverse = np.full(n, _BASE_INV, np.uint64)
    if n:
        powers[0] = inverse[0] = 1
    with np.errstate(over="ignore"):
        np.cumprod(powers, out=powers)  # wraps mod 2**64, as intended
        np.cumprod(inverse, out=inverse)
        prefix = np.zeros(n + 1, np.uint64)
        np.cumsum(hashes * powers, out=prefix[1:])
    return prefix, inverse


def word_spans(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in `text`'s characters of each word `batch_words` finds in it, in order.

    A word whose normalised characters come from a character that normalises to several (a
    ligature, a full-width form that NFKC splits) starts at that character's start and ends at its
    end, so a cut by these spans never leaves part of a matched word behind. Should the pieces'
    forms not add up to the whole text's (a context-dependent lower-casing such as a final sigma
    before ASCII), every word spans the whole text: redaction then removes all of it."""
    if text.isascii():  # NFKC and lower-casing keep every ASCII character where it is
        spans = [m.span() for m in _ASCII_WORD.finditer(text)]
        return _arrays(spans)
    words = tokens(pl.Series([text]), WORDS)[0].to_list() or []
    whole = _form(text)
    pieces = [m for m in _PIECE.finditer(text)]
    forms = normalize(pl.Series([m.group() for m in pieces], dtype=pl.String), WORDS).to_list()
    if "".join(forms) != whole:
        return np.zeros(len(words), np.int64), np.full(len(words), len(text), np.int64)
    # For each character of the normalised text, the original span of the piece character it comes from.
    starts, ends = [], []
    for m, form in zip(pieces, forms):
        piece = m.group()
        if len(form) == len(piece):
            starts.extend(range(m.start(), m.end()))
            ends.extend(range(m.start() + 1, m.end() + 1))
            continue
        first = 0  # the leading ASCII character keeps its place unless what follows composes with it
        if piece[0].isascii() and form[:1] == piece[0].lower() and _form(piece[1:]) == form[1:]:
            starts.append(m.start())
            ends.append(m.start() + 1)
            first = 1
        starts.extend([m.start() + first] * (len(form) - first))
        ends.extend([m.end()] * (len(form) - first))
    spans, at = [], 0
    for word in words:  # each word is the next run of word characters: its first occurrence from `at`
        begin = whole.index(word, at)
        at = begin + len(word)
        spans.append((starts[begin], ends[at - 1]))
    return _arrays(spans)


def _form(text: str) -> str:
    return normalize(pl.Series([text], dtype=pl.String), WORDS)[0]


def _arrays(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    a = np.array(spans, np.int64).reshape(-1, 2)
    return a[:, 0], a[:, 1]
