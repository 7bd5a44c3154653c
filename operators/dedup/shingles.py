"""Normalized text -> per-document sets of hashed shingles (word or character n-grams).

Vectorized over a whole batch: polars normalizes and tokenizes, every token is hashed once,
and n-gram hashes are combined with numpy over the flat token array, so there is no
per-row Python loop. The result is each row's *set* of shingle hashes, sorted, in one flat
uint64 array with row offsets (Arrow list layout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
import pyarrow as pa

# Distinct odd multipliers, one per position inside an n-gram, so "a b" and "b a" differ.
_POSITION_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
     0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
     0x2545F4914F6CDD1D, 0x9FB21C651E98DF25, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB,
     0x8EBC6AF09C88C6E3, 0x589965CC75374CC3, 0x1D8E4E27C47D124F, 0x5851F42D4C957F2D],
    dtype=np.uint64,
)
MAX_NGRAM = len(_POSITION_MULTIPLIERS)
# Shingle hashes keep 52 bits so that (row, hash) packs into one uint64 sort key; two
# distinct shingles of a pair collide with probability 2^-52.
HASH_BITS = 52
HASH_MASK = (1 << HASH_BITS) - 1
ROWS_PER_SORT = 1 << (64 - HASH_BITS)


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: spreads every input bit over the output (wrapping)."""
    x = x ^ (x >> np.uint64(33))
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@dataclass(frozen=True)
class ShingleSpec:
    """How text becomes shingles; both dedup operators and the benches share it."""

    kind: Literal["word", "char"] = "word"
    n: int = 5
    lowercase: bool = True
    seed: int = 0

    def __post_init__(self):
        if not 1 <= self.n <= MAX_NGRAM:
            raise ValueError(f"ngram must be in 1..{MAX_NGRAM}, got {self.n}")


@dataclass
class ShingleSets:
    """Per-row sorted unique shingle hashes: row i owns values[offsets[i]:offsets[i+1]]."""

    values: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len rows + 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def normalize(texts: pl.Series, spec: ShingleSpec) -> pl.Series:
    """Unicode NFKC, optional lowercase; whitespace is collapsed by tokenization (words) or here (chars)."""
    out = texts.fill_null("")
    # NFKC is costly and a no-op on ASCII: apply it to the other rows only.
    non_ascii = out.str.contains(r"[^\x00-\x7F]").arg_true()
    if len(non_ascii):
        out = out.scatter(non_ascii, out.gather(non_ascii).str.normalize("NFKC"))
    if spec.lowercase:
        out = out.str.to_lowercase()
    if spec.kind == "char":
        # Whitespace runs become one space so re-wrapped text shingles the same.
        out = out.str.replace_all(r"\s+", " ").str.strip_chars()
    return out


def tokens(texts: pl.Series, spec: ShingleSpec) -> pl.Series:
    """List of tokens per row: words (runs of \\w, so punctuation is dropped) or characters."""
    norm = normalize(texts, spec)
    if spec.kind == "word":
        return norm.str.extract_all(r"\w+")
    return norm.str.split("")


def shingle_sets(texts: pa.Array | pa.ChunkedArray | pl.Series, spec: ShingleSpec) -> ShingleSets:
    """Hash every n-gram of every row and reduce each row to its sorted set of hashes.

    A row with fewer than n tokens (but at least one) gets a single shingle of all its
    tokens, so short documents can still be matched; an empty row gets no shingles.
    """
    series = texts if isinstance(texts, pl.Series) else pl.Series(pa.chunked_array([texts]) if isinstance(texts, pa.Array) else texts)
    lists = tokens(series.cast(pl.String), spec)
    rows = len(lists)
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = lists.explode().drop_nulls()
    if len(flat) == 0:
        return ShingleSets(np.zeros(0, np.uint64), np.zeros(rows + 1, np.int64))
    tok = flat.hash(seed=spec.seed).to_numpy().astype(np.uint64, copy=False)
    n = spec.n
    row_of = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    row_start = np.zeros(rows, np.int64)
    np.cumsum(lengths[:-1], out=row_start[1:])
    pos = np.arange(len(tok), dtype=np.int64) - row_start[row_of]
    row_len = lengths[row_of]
    start = np.flatnonzero((pos + n <= row_len) | ((pos == 0) & (row_len < n)))
    owner = row_of[start]
    # Zero padding past the end; components past a short row's end are zeroed below.
    padded = np.concatenate((tok, np.zeros(n - 1, np.uint64)))
    acc = padded[start] * _POSITION_MULTIPLIERS[0]
    short = lengths[owner] < n
    for j in range(1, n):
        part = padded[start + j] * _POSITION_MULTIPLIERS[j]
        part[short & (lengths[owner] <= j)] = 0
        acc += part
    hashes = fmix64(acc ^ np.uint64(n)) >> np.uint64(64 - HASH_BITS)
    return _row_sets(owner, hashes, rows)


def _row_sets(owner: np.ndarray, hashes: np.ndarray, rows: int) -> ShingleSets:
    """Sort by (row, hash) and drop repeats, so each row holds a set.

    `owner` is ascending. Row and hash are packed into one uint64 key (ROW_BITS + HASH_BITS),
    so one flat numpy sort does it, ROWS_PER_SORT rows at a time.
    """
    values, counts = [], np.zeros(rows, np.int64)
    bounds = np.searchsorted(owner, np.arange(0, rows + ROWS_PER_SORT, ROWS_PER_SORT))
    for first_row, lo, hi in zip(range(0, rows, ROWS_PER_SORT), bounds[:-1], bounds[1:]):
        key = ((owner[lo:hi] - first_row).astype(np.uint64) << np.uint64(HASH_BITS)) | hashes[lo:hi]
        key.sort()
        fresh = np.ones(len(key), bool)
        fresh[1:] = key[1:] != key[:-1]
        key = key[fresh]
        counts += np.bincount((key >> np.uint64(HASH_BITS)).astype(np.int64) + first_row, minlength=rows)
        values.append(key & np.uint64(HASH_MASK))
    offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return ShingleSets(np.concatenate(values) if values else np.zeros(0, np.uint64), offsets)
