"""Documents against the index: every window of every document looked up at once (numpy, no
per-window Python), then per (document, item) the number of the item's distinct n-grams found and
the first word where one starts; the rule decides which pairs count.

Rules (README "Decontamination"): with `min_overlap` None, GPT-3's: an item contaminates a
document holding any one of its n-grams. With `min_overlap` = f, the containment of the item in the
document, |S(item) ∩ S(doc)| / |S(item)| >= f (the Llama-style fraction, per item). An item shorter
than n words has one "n-gram", itself: found whole, its fraction is 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate_operators.decon.benchmarks import JOIN
from curate_operators.decon.index import Index
from curate_operators.decon.text import batch_words
from curate_operators.dedup.store import ranges


@dataclass
class Hits:
    """Windows of the batch's documents that are keys of the index, one row per (window, item)."""

    doc: np.ndarray
    item: np.ndarray
    key: np.ndarray
    start: np.ndarray  # first word of the window in its document
    length: np.ndarray  # words in the window


@dataclass
class Pairs:
    """(document, item) pairs that satisfy the rule."""

    doc: np.ndarray
    item: np.ndarray
    ngrams: np.ndarray  # distinct n-grams of the item found in the document
    first: np.ndarray  # the first word of the first window that matched


def joined(batch: pa.RecordBatch, columns: list[str]) -> pa.Array:
    """The checked text of each row: its columns joined in order (a null is empty)."""
    parts = [pc.cast(batch.column(c), pa.string()).fill_null("") for c in columns]
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, JOIN)


def find(texts: pa.Array, index: Index) -> Hits:
    words = batch_words(texts)
    found = []
    for k in (index.n, *index.short):
        starts, hashes = words.windows(k)
        which, pos = index.lookup(hashes)
        lo = np.asarray(index.starts[pos])
        count = np.asarray(index.starts[pos + 1]) - lo
        post = ranges(lo, count)
        start = np.repeat(starts[which], count)
        doc = np.searchsorted(words.offsets, start, side="right") - 1
        found.append((doc, np.asarray(index.postings[post]).astype(np.int64), np.repeat(pos, count),
                      start - words.offsets[doc], np.full(len(post), k, np.int64)))
    return Hits(*(np.concatenate(parts) for parts in zip(*found)))


def pairs(hits: Hits, index: Index, min_overlap: float | None) -> tuple[Pairs, np.ndarray]:
    """The pairs the rule accepts, sorted by (doc, item); and for each hit, whether its pair is one."""
    if not len(hits.doc):
        empty = np.zeros(0, np.int64)
        return Pairs(empty, empty, empty, empty), np.zeros(0, bool)
    order = np.lexsort((hits.start, hits.key, hits.item, hits.doc))
    doc, item, key, start = hits.doc[order], hits.item[order], hits.key[order], hits.start[order]
    new_pair = np.ones(len(doc), bool)
    new_pair[1:] = (doc[1:] != doc[:-1]) | (item[1:] != item[:-1])
    new_key = new_pair.copy()
    new_key[1:] |= key[1:] != key[:-1]
    pair_at = np.flatnonzero(new_pair)
    pair_of = np.cumsum(new_pair) - 1
    ngrams = np.bincount(pair_of, weights=new_key).astype(np.int64)
    first = np.full(len(pair_at), np.iinfo(np.int64).max)
    np.minimum.at(first, pair_of, start)
    p_doc, p_item = doc[pair_at], item[pair_at]
    if min_overlap is None:
        ok = ngrams >= 1
    else:  # containment of the item in the document; the small tolerance absorbs float rounding of f
        ok = ngrams >= np.ceil(min_overlap * index.item_ngrams[p_item] - 1e-9)
    accepted = np.empty(len(doc), bool)
    accepted[order] = ok[pair_of]
    return Pairs(p_doc[ok], p_item[ok], ngrams[ok], first[ok]), accepted


def best(p: Pairs, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per document: the index into `p` of the pair the trace names (the most n-grams, then the
    first match, then the item order), -1 for none; and how many items matched it."""
    chosen = np.full(docs, -1, np.int64)
    if len(p.doc):
        order = np.lexsort((p.item, p.first, -p.ngrams, p.doc))
        head = np.ones(len(order), bool)
        head[1:] = p.doc[order][1:] != p.doc[order][:-1]
        chosen[p.doc[order][head]] = order[head]
    return chosen, np.bincount(p.doc, minlength=docs)
