"""Shared helpers for the near-dedup tests: drive a Global operator, and a brute-force oracle."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pyarrow as pa


def run(op, texts: list[str], tmp_path, *, batch_rows: int = 7, extra: dict | None = None, ids: list[str] | None = None):
    """fit over small batches, then apply over the whole table; returns (verdict, state)."""
    ids = ids or [f"id{i:04d}" for i in range(len(texts))]
    cols = {"text": pa.array(texts, pa.string()), "_id": pa.array(ids), "_ord": pa.array(np.arange(len(texts), dtype=np.int64))}
    cols.update({k: pa.array(v) for k, v in (extra or {}).items()})
    table = pa.table(cols)
    state = op.fit(iter(table.to_batches(max_chunksize=batch_rows)), tmp_path)
    return op.apply(table.combine_chunks().to_batches()[0], state), state


def word_shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Independent reference shingling: NFKC, lowercase, \\w+ words, n-gram tuples."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text or "").lower())
    if not words:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def brute_force_removed(texts: list[str], ids: list[str], tau: float, n: int = 5) -> dict[int, float]:
    """Index -> best containment, for every doc a better-ranked doc contains at >= tau."""
    sets = [word_shingles(t, n) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (-len(sets[i]), ids[i]))
    rank = {i: r for r, i in enumerate(order)}
    out: dict[int, float] = {}
    for a in range(len(texts)):
        if not sets[a]:
            continue
        for b in range(len(texts)):
            if b != a and rank[b] < rank[a]:
                c = len(sets[a] & sets[b]) / len(sets[a])
                if c >= tau:
                    out[a] = max(out.get(a, 0.0), c)
    return out
