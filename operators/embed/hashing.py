"""hash backend: embeddings without a model, for offline quick runs and tests.

The text is lowercased and its whitespace collapsed; every window of `ngram` UTF-8 bytes is
hashed (FNV-1a, then the splitmix64 finaliser, fixed seed). The text's set of n-grams (each
distinct n-gram once, as a 0/1 vector) is then projected to `dim` dimensions by a fixed sparse
random projection (a count sketch: each n-gram adds +1 or -1, by one hash bit, to the coordinate
other bits pick). Inner products of the 0/1 vectors (shared n-grams) are preserved in
expectation, so cosine similarity tracks the n-gram overlap of two texts: exact duplicates get
identical vectors, near duplicates close ones, unrelated texts of one language low but positive
similarity (they share common n-grams). Texts shorter than `ngram` bytes count as one n-gram of
the whole text.

Everything is numpy over the Arrow string buffers (no per-row Python): the window hashes are
computed for every byte of a chunk at once from shifted views of its data buffer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate_operators.embed.backends import Backend

_SEED = np.uint64(0x9E3779B97F4A7C15)
_FNV_PRIME = np.uint64(0x100000001B3)
_CHUNK_BYTES = 2 << 20  # text bytes hashed at once (memory: ~40 bytes per text byte)
_CHUNK_ROWS = 1 << 20  # and at most this many rows (a row number takes 24 bits of the dedup key)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every output bit depends on every input bit."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def normalize_text(values: pa.Array) -> pa.Array:
    text = pc.utf8_lower(values)
    # Runs of whitespace become one space (matching lone plain spaces too would be 4x slower).
    text = pc.replace_substring_regex(text, r"\s\s+|[\t\n\r\f\v]", " ")
    text = pc.utf8_trim_whitespace(text)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    return text


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64, from 0) and the data bytes of a (possibly sliced) string array."""
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=width)[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    data = data[offsets[0]:offsets[-1]]
    return offsets - offsets[0], data


class HashBackend(Backend):
    def __init__(self, dim: int = 256, ngram: int = 5):
        self.dim = dim
        self.ngram = ngram

    def embed(self, items) -> tuple[np.ndarray, dict[int, str]]:
        if not isinstance(items, (pa.Array, pa.ChunkedArray)):
            items = pa.array(items, pa.string())
        text = normalize_text(items.fill_null(""))
        n = len(text)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out, {}
        sizes = pc.binary_length(text).to_numpy(zero_copy_only=False).astype(np.int64)
        ends = np.cumsum(sizes)
        lo = 0
        while lo < n:  # chunks of about _CHUNK_BYTES of text (at least one row)
            hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - sizes[lo] + _CHUNK_BYTES, side="right")))
            hi = min(hi, lo + _CHUNK_ROWS)
            out[lo:hi] = self.sketch(text.slice(lo, hi - lo))
            lo = hi
        return out, {}

    def sketch(self, arr: pa.Array) -> np.ndarray:
        offsets, data = _buffers(arr)
        m, n, dim = len(arr), self.ngram, self.dim
        starts, ends = offsets[:-1], offsets[1:]
        lengths = ends - starts
        size = len(data)
        padded = np.concatenate([data, np.zeros(n, np.uint8)]).astype(np.uint64)
        # The hash of the n-byte window starting at every byte of the chunk.
        h = np.full(size, _SEED, dtype=np.uint64)
        for j in range(n):
            h = (h ^ padded[j:j + size]) * _FNV_PRIME
        row = np.repeat(np.arange(m, dtype=np.int64), lengths)
        inside = np.arange(size, dtype=np.int64) + n <= ends[row]  # windows that end inside their text
        rows, hashes = [row[inside]], [_mix(h[inside])]
        short = np.flatnonzero(lengths < n)  # texts shorter than a window: one feature, the whole text
        if len(short):
            hs = np.full(len(short), _SEED, dtype=np.uint64)
            for j in range(n):
                byte = np.where(j < lengths[short], padded[np.minimum(starts[short] + j, size)], np.uint64(0))
                hs = (hs ^ byte) * _FNV_PRIME
            rows.append(short)
            hashes.append(_mix(hs))
        # Each distinct n-gram of a text counts once: key = row (high 24 bits) | hash (low 40 bits),
        # sorted and deduplicated.
        key = (np.concatenate(rows).astype(np.uint64) << np.uint64(40)) | (np.concatenate(hashes) >> np.uint64(24))
        key = np.sort(key)
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        row = (key >> np.uint64(40)).astype(np.int64)
        h = key & np.uint64((1 << 40) - 1)
        bucket = ((h >> np.uint64(8)) % np.uint64(dim)).astype(np.int64)
        sign = np.where((h & np.uint64(1)).astype(bool), 1.0, -1.0)
        sketch = np.bincount(row * dim + bucket, weights=sign, minlength=m * dim)
        return sketch.reshape(m, dim).astype(np.float32)
