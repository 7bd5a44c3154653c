"""Bulk measurement of Gopher's quality and repetition metrics for a whole batch of texts.

Nothing here loops over documents in Python. A batch is split once on whitespace into a flat
column of parts (words, and the empty parts between runs of spaces, which measure nothing);
per-document word statistics are sums over each document's run of parts. Only the n-gram
metrics need the words themselves: hashed to uint64 by polars (lines too), n-gram hashes are
built by shifting the flat hash array, duplicates are found with hash-based polars ops, and
per-document sums come from np.bincount.

Definitions (Rae et al. 2021, appendix A; where the paper is silent, the choice is noted):
- words are whitespace-separated tokens, exactly Python's `str.split()`;
- a stop word is present when it occurs as a whole word, in any case;
- lines are split on "\\n" and compared without surrounding whitespace; blank lines are
  separators, not lines (they count in no line fraction);
- a paragraph is a run of non-blank lines;
- a repeated line/paragraph is one equal to an earlier one in the document (the first
  occurrence is not counted); its character fractions are over all characters of the text;
- n-gram character fractions are over the characters of the words (whitespace belongs to
  no n-gram): the top repeated n-gram's count times its characters (0 when none repeats,
  so a short document of long words does not fail without repeating anything), and the characters covered by
  every occurrence of any n-gram that occurs more than once (overlaps counted once).

Words, lines and n-grams are compared by 64-bit hash (mixed with the document index); two
different n-grams of one document collide with probability ~2**-64, far below anything a
decision could notice.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import numpy as np
import polars as pl

# Every character Python's str.isspace() accepts, except the plain space itself.
_WHITESPACE = [
    "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680",
    *(chr(c) for c in range(0x2000, 0x200B)), "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
]
_BULLET_LINE = r"^[•●○◦▪■□‣⁃\-*]"
_ELLIPSES = ("...", "…")
_SEED = 0x5EED
# Odd 64-bit multipliers for polynomial hashing (they are invertible mod 2**64).
_P = np.uint64(0x9E3779B97F4A7C15)
_DOC = np.uint64(0xC2B2AE3D27D4EB4F)


@dataclass
class Words:
    """The words of a batch, flat and in document order."""

    doc: np.ndarray  # int64, index of the document each word is in (non-decreasing)
    hash: np.ndarray  # uint64
    chars: np.ndarray  # int64, length in characters


class Split:
    """A batch split into words exactly as Python's `str.split()` splits each text."""

    def __init__(self, text: pl.Series):
        parts = text.str.replace_many(_WHITESPACE, [" "] * len(_WHITESPACE)).str.split(" ")
        self.lengths = parts.list.len().to_numpy().astype(np.int64)  # at least 1: "" splits into [""]
        self.starts = np.cumsum(self.lengths) - self.lengths  # each document's first part
        self.parts = parts.explode()  # runs of spaces leave empty parts
        self.chars = self.parts.str.len_chars().to_numpy()  # uint32

    def per_doc(self, values: np.ndarray) -> np.ndarray:
        """Sum of an integer or boolean value of every part, per document."""
        return np.add.reduceat(values, self.starts, dtype=np.int64).astype(np.float64)

    def words(self, rows: np.ndarray | None = None) -> Words:
        """The words of the documents in `rows` (a boolean mask; all when None), hashed, with the
        index of their document among those rows."""
        rows = np.ones(len(self.lengths), bool) if rows is None else rows
        doc = np.repeat(np.cumsum(rows) - 1, self.lengths)
        keep = (self.chars > 0) & np.repeat(rows, self.lengths)
        return Words(doc=doc[keep], hash=self.parts.filter(pl.Series(keep)).hash(_SEED).to_numpy(),
                     chars=self.chars[keep].astype(np.int64))


def split_words(text: pl.Series) -> Words:
    return Split(text).words()


def word_hashes(text: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(doc, hash) of split_words, for callers that need no more (distinct n-grams)."""
    words = split_words(text)
    return words.doc, words.hash


def _per_doc(doc: np.ndarray, n_docs: int, weights: np.ndarray | None = None) -> np.ndarray:
    return np.bincount(doc, weights=weights, minlength=n_docs).astype(np.float64)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, with 0 where den is 0 (nothing to measure means nothing found)."""
    return np.divide(num, den, out=np.zeros(len(num), np.float64), where=den > 0)


def _whole_word(word: str) -> str:
    r"""A stop word bounded by non-word characters or the text's ends. Beside a word character
    that bound is \b, which the regex engine finds much faster (ASCII ones: \w for sure)."""
    word_char = re.compile(r"[A-Za-z0-9_]")
    before = r"\b" if word_char.fullmatch(word[:1]) else r"(?:^|\W)"
    after = r"\b" if word_char.fullmatch(word[-1:]) else r"(?:\W|$)"
    return "(?i)" + before + re.escape(word) + after


def _has_letter(words: pl.Series) -> np.ndarray:
    r"""Which strings hold a letter (\p{L}): an ASCII one, found by a cheap search, or else any."""
    found = words.str.contains_any(list(string.ascii_letters)).to_numpy().copy()
    rest = np.flatnonzero(~found & (words.str.len_bytes().to_numpy() > 0))
    found[rest] = words.gather(rest).str.contains(r"\p{L}").to_numpy()
    return found


def word_metrics(text: pl.Series, split: Split, stop_words: tuple[str, ...]) -> dict[str, np.ndarray]:
    n = len(text)
    count = split.per_doc(split.chars > 0)
    hashes = text.str.count_matches("#", literal=True).to_numpy()
    ellipses = sum(text.str.count_matches(e, literal=True).to_numpy() for e in _ELLIPSES)
    # Stop words are matched as whole words, ignoring case ("The" is "the"); the bounds are
    # non-word characters rather than \b so that a stop word may end in punctuation ("c++").
    present = np.zeros(n)
    for word in stop_words:
        present += text.str.contains(_whole_word(word)).to_numpy()
    return {
        "word_count": count,
        "mean_word_length": _ratio(split.per_doc(split.chars), count),
        "hash_word_ratio": _ratio(hashes, count),
        "ellipsis_word_ratio": _ratio(ellipses, count),
        "alpha_word_frac": _ratio(split.per_doc(_has_letter(split.parts)), count),
        "stop_words": present,
    }


def _first_seen(key: np.ndarray) -> np.ndarray:
    return pl.Series(key, dtype=pl.UInt64).is_first_distinct().to_numpy()


def line_metrics(text: pl.Series) -> dict[str, np.ndarray]:
    """Bullet and ellipsis line fractions, and the duplicate line and paragraph fractions."""
    n = len(text)
    parts = text.str.split("\n")
    lines = parts.explode().str.strip_chars()
    doc = np.repeat(np.arange(n, dtype=np.int64), parts.list.len().to_numpy())
    chars = lines.str.len_chars().to_numpy().astype(np.int64)
    real = chars > 0
    bullet = lines.str.contains(_BULLET_LINE).to_numpy()
    ellipsis = np.logical_or.reduce([lines.str.ends_with(e).to_numpy() for e in _ELLIPSES])
    key = lines.hash(_SEED).to_numpy() + doc.astype(np.uint64) * _DOC
    n_lines = _per_doc(doc[real], n)
    text_chars = text.str.len_chars().to_numpy().astype(np.float64)

    dup_line = np.zeros(len(lines), bool)
    dup_line[real] = ~_first_seen(key[real])

    para_doc, para_key, para_chars = _paragraphs(doc, key, chars, real)
    dup_para = ~_first_seen(para_key)
    return {
        "bullet_line_frac": _ratio(_per_doc(doc, n, bullet & real), n_lines),
        "ellipsis_line_frac": _ratio(_per_doc(doc, n, ellipsis & real), n_lines),
        "dup_line_frac": _ratio(_per_doc(doc, n, dup_line), n_lines),
        "dup_para_frac": _ratio(_per_doc(para_doc, n, dup_para), _per_doc(para_doc, n)),
        "dup_line_char_frac": _ratio(_per_doc(doc, n, chars * dup_line), text_chars),
        "dup_para_char_frac": _ratio(_per_doc(para_doc, n, para_chars * dup_para), text_chars),
    }


def _paragraphs(doc: np.ndarray, key: np.ndarray, chars: np.ndarray, real: np.ndarray):
    """Group runs of non-blank lines into paragraphs: (doc, hash keyed by doc, characters)."""
    if not real.any():
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)
    prev_real = np.concatenate([[False], real[:-1]])
    new_doc = np.concatenate([[True], doc[1:] != doc[:-1]])
    starts_para = real & (~prev_real | new_doc)
    para = np.cumsum(starts_para)[real] - 1  # paragraph index of each non-blank line
    starts = np.flatnonzero(np.concatenate([[True], para[1:] != para[:-1]]))
    pos = np.arange(len(para)) - starts[para]  # line position within its paragraph
    powers = np.cumprod(np.full(int(pos.max()) + 1, _P, dtype=np.uint64))
    para_key = np.add.reduceat(key[real] * powers[pos], starts)
    lines_in = np.diff(np.append(starts, len(para)))
    para_chars = np.add.reduceat(chars[real], starts) + lines_in - 1  # joined by newlines
    return doc[real][starts], para_key, para_chars


def ngram_metrics(words: Words, n_docs: int, top_ns: tuple[int, ...], dup_ns: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Top n-gram character fractions for `top_ns` and duplicate ones for `dup_ns`.

    An n-gram can occur twice only where its first n-1 words and its last n-1 words do, so
    each n hashes and counts only the positions where both (n-1)-grams were duplicated:
    after the first few n, almost nothing is left.
    """
    out: dict[str, np.ndarray] = {}
    total = _per_doc(words.doc, n_docs, words.chars)
    cum_chars = np.concatenate([[0], np.cumsum(words.chars)])
    n_words = len(words.doc)
    # Start of every (n-1)-gram that occurs more than once, and its hash (for n=2: every word).
    pos, gram = np.arange(n_words), words.hash
    for n in range(2, max(top_ns + dup_ns, default=1) + 1):
        dup_before = np.zeros(n_words + 1, bool)
        dup_before[pos] = True
        inside = pos + n - 1 < n_words
        pos, gram = pos[inside], gram[inside]
        extend = dup_before[pos + 1] & (words.doc[pos] == words.doc[pos + n - 1])
        pos = pos[extend]
        gram = gram[extend] * _P + words.hash[pos + n - 1]
        key = gram + words.doc[pos].astype(np.uint64) * _DOC
        is_dup = pl.Series(key, dtype=pl.UInt64).is_duplicated().to_numpy()
        pos, gram, key = pos[is_dup], gram[is_dup], key[is_dup]
        gram_chars = cum_chars[pos + n] - cum_chars[pos]
        if n in top_ns:
            out[f"top_{n}gram_char_frac"] = _ratio(_top_gram_chars(words, cum_chars, n, pos, key, gram_chars, n_docs), total)
        if n in dup_ns:
            out[f"dup_{n}gram_char_frac"] = _ratio(_covered_chars(words.doc, cum_chars, n, pos, n_docs), total)
    return out


def _top_gram_chars(words: Words, cum_chars, n, dup_pos, dup_keys, dup_chars, n_docs) -> np.ndarray:
    """Per document: count x characters of its most frequent repeated n-gram (ties: the longest).

    An n-gram that occurs once is no repetition: a document with none repeated scores 0 (else
    a short document of long words would fail the rule without repeating anything)."""
    # Rank n-grams by (count, characters) packed into one integer.
    best = np.zeros(n_docs, np.int64)
    if len(dup_keys):
        counts = pl.DataFrame({"k": dup_keys}).select(pl.len().over("k")).to_series().to_numpy()
        best = _per_doc_max(words.doc[dup_pos], (counts.astype(np.int64) << 32) | dup_chars, n_docs)
    return ((best >> 32) * (best & 0xFFFFFFFF)).astype(np.float64)


def _covered_chars(doc: np.ndarray, cum_chars: np.ndarray, n: int, starts: np.ndarray, n_docs: int) -> np.ndarray:
    """Per document: characters of the words inside at least one n-gram starting at `starts`."""
    # With sorted starts, n-gram k adds the words up to the next start (or its own end, if
    # sooner); n-grams never cross documents, so the next start bounds nothing across them.
    ends = np.minimum(starts + n, np.append(starts[1:], np.iinfo(np.int64).max))
    return _per_doc(doc[starts], n_docs, cum_chars[ends] - cum_chars[starts])


def _per_doc_max(doc: np.ndarray, values: np.ndarray, n_docs: int) -> np.ndarray:
    """Maximum of `values` per document (0 for documents without values); `doc` is sorted."""
    best = np.zeros(n_docs, values.dtype)
    if len(values):
        starts = np.flatnonzero(np.concatenate([[True], doc[1:] != doc[:-1]]))
        best[doc[starts]] = np.maximum.reduceat(values, starts)
    return best
