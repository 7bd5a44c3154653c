"""One exact n-gram index over every benchmark, built once per run into a directory of .npy files
that each worker memory-maps (the pages are shared between the processes of a machine).

  keys.npy      uint64, sorted distinct hashes of every item's n-grams (and of every item shorter
                than n words, whole), 8 bytes each
  postings.npy  int32, the items holding each key, keys' postings in key order; starts.npy (int64,
                keys + 1) delimits them
  bitmap.npy    uint8, a bit per slot of the hashes' top bits: most windows of a document miss it,
                so only a few go on to the binary search in keys
  items.npy     int64 per item: its benchmark and its number of distinct n-grams (0: no words)
  meta.json     n, the lengths of the short items, benchmark names, item ids per benchmark

Hashes are 64-bit (text.window_hash): two different n-grams collide with probability 2**-64.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from curate_operators.decon import benchmarks as bm
from curate_operators.decon.text import BatchWords, batch_words, window_hash

# Items hashed at once while building (bounds the build's memory, whatever a benchmark's size).
BUILD_ITEMS = 20_000
# Bitmap bits per key, as a power of two at least this many: a miss passes it with chance <= 1/8.
BITS_PER_KEY = 8


@dataclass(frozen=True)
class Index:
    n: int
    short: tuple[int, ...]  # lengths (< n) of the items matched whole
    names: tuple[str, ...]  # benchmark names
    ids: tuple[tuple[str, ...], ...]  # item ids per benchmark
    keys: np.ndarray
    starts: np.ndarray
    postings: np.ndarray
    bitmap: np.ndarray
    shift: np.uint64  # 64 - log2(bitmap bits)
    item_bench: np.ndarray
    item_ngrams: np.ndarray

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of `hashes` are keys, their key positions)."""
        slot = hashes >> self.shift
        maybe = np.flatnonzero((self.bitmap[slot >> np.uint64(3)] >> (slot & np.uint64(7)).astype(np.uint8)) & 1)
        if not len(maybe) or not len(self.keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(self.keys, hashes[maybe]), len(self.keys) - 1)
        hit = self.keys[pos] == hashes[maybe]
        return maybe[hit], pos[hit]

    def item_label(self, item: int) -> tuple[str, str]:
        b = int(self.item_bench[item])
        first = int(np.searchsorted(self.item_bench, b))
        return self.names[b], self.ids[b][item - first]


def build(benches: list[bm.Benchmark], n: int, directory: Path) -> dict:
    """Read every benchmark, hash its items' n-grams, write the index under `directory`; what the
    report says of each benchmark (its items and n-grams)."""
    directory.mkdir(parents=True, exist_ok=True)
    pair_hashes, pair_items, item_bench, item_ngrams, ids, info = [], [], [], [], [], []
    short: set[int] = set()
    first_item = 0
    for b, bench in enumerate(benches):
        items = bm.read(bench, f"benchmarks[{b}]")
        ids.append(items.ids)
        ngrams = 0
        for lo in range(0, len(items.texts), BUILD_ITEMS):
            words = batch_words(pl.Series(items.texts[lo:lo + BUILD_ITEMS], dtype=pl.String))
            h, owner, lengths = item_hashes(words, n)
            short.update(int(x) for x in np.unique(lengths[(lengths > 0) & (lengths < n)]))
            h, owner = _distinct_pairs(h, owner)
            counts = np.bincount(owner, minlength=len(lengths))
            pair_hashes.append(h)
            pair_items.append(owner + first_item + lo)
            item_ngrams.append(counts)
            ngrams += int(counts.sum())
        item_bench.append(np.full(len(items.texts), b, np.int64))
        info.append({"benchmark": bench.name, "items": len(items.texts), "ngrams": ngrams})
        first_item += len(items.texts)
    hashes = np.concatenate(pair_hashes) if pair_hashes else np.zeros(0, np.uint64)
    owners = np.concatenate(pair_items).astype(np.int32) if pair_items else np.zeros(0, np.int32)
    order = np.lexsort((owners, hashes))
    hashes, owners = hashes[order], owners[order]
    fresh = np.ones(len(hashes), bool)
    fresh[1:] = hashes[1:] != hashes[:-1]
    keys = hashes[fresh]
    starts = np.append(np.flatnonzero(fresh), len(hashes)).astype(np.int64)
    bits = max(16, int(np.ceil(np.log2(max(len(keys), 1) * BITS_PER_KEY))))
    bitmap = np.zeros(1 << (bits - 3), np.uint8)
    slot = keys >> np.uint64(64 - bits)
    np.bitwise_or.at(bitmap, (slot >> np.uint64(3)).astype(np.int64), (1 << (slot & np.uint64(7))).astype(np.uint8))
    for name, array in {"keys": keys, "starts": starts, "postings": owners, "bitmap": bitmap,
                        "items": np.stack([np.concatenate(item_bench) if item_bench else np.zeros(0, np.int64),
                                           np.concatenate(item_ngrams) if item_ngrams else np.zeros(0, np.int64)])}.items():
        np.save(directory / f"{name}.npy", array)
    meta = {"n": n, "short": sorted(short), "bits": bits, "names": [b.name for b in benches], "ids": ids}
    (directory / "meta.json").write_text(json.dumps(meta))
    return {"benchmarks": info, "keys": int(len(keys)), "bytes": int(sum(a.nbytes for a in (keys, starts, owners, bitmap)))}


def item_hashes(words: BatchWords, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hash, item) of each item's n-grams, and of each item shorter than n words (but not empty)
    as a whole; the items' lengths in words."""
    lengths = words.lengths
    starts, hashes = words.windows(n)
    owner = np.searchsorted(words.offsets, starts, side="right") - 1
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    whole = np.concatenate([_whole(words, short[lengths[short] == k], k) for k in np.unique(lengths[short])]) \
        if len(short) else np.zeros(0, np.uint64)
    short_sorted = np.concatenate([short[lengths[short] == k] for k in np.unique(lengths[short])]) \
        if len(short) else np.zeros(0, np.int64)
    return np.concatenate([hashes, whole]), np.concatenate([owner, short_sorted]).astype(np.int64), lengths


def _whole(words: BatchWords, items: np.ndarray, k: int) -> np.ndarray:
    return window_hash(words.prefix, words.inverse, words.offsets[items], int(k))


def _distinct_pairs(h: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((h, owner))
    h, owner = h[order], owner[order]
    fresh = np.ones(len(h), bool)
    fresh[1:] = (h[1:] != h[:-1]) | (owner[1:] != owner[:-1])
    return h[fresh], owner[fresh]


@lru_cache(maxsize=2)
def load(directory: str) -> Index:
    """The index under `directory`, memory-mapped; once per process."""
    d = Path(directory)
    meta = json.loads((d / "meta.json").read_text())
    arrays = {name: np.load(d / f"{name}.npy", mmap_mode="r") for name in ("keys", "starts", "postings", "bitmap", "items")}
    return Index(meta["n"], tuple(meta["short"]), tuple(meta["names"]), tuple(tuple(i) for i in meta["ids"]),
                 arrays["keys"], arrays["starts"], arrays["postings"], arrays["bitmap"],
                 np.uint64(64 - meta["bits"]), np.asarray(arrays["items"][0]), np.asarray(arrays["items"][1]))
