"""Synthetic corpus with planted containment cases, for the dedup benches.

Documents are Zipf-distributed words from a synthetic vocabulary, in sentences and
paragraphs. Besides unrelated base documents (some of which share boilerplate: a header
and/or a licence footer from a small pool), a fraction of documents is planted from a base
document:
  excerpt         a verbatim contiguous span of 20-90% of the source's words
  edited_excerpt  the same, with light edits: 1-3 words replaced, whitespace re-wrapped,
                  some words' case changed
  near_copy       the whole source with the same light edits
Each row records its kind and source id (the plan). What counts as contained is decided
by brute force (corpora/dedup_truth.py), not by the plan: an edited excerpt may fall below tau.

    python bench/corpora/dedup_corpus.py --docs 20000 --out bench/.data/dedup-20k
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PLANTED_KINDS = ("excerpt", "edited_excerpt", "near_copy")


class Writer:
    """Zipf words -> sentences -> paragraphs."""

    def __init__(self, rng: np.random.Generator, vocab_size: int = 30_000):
        self.rng = rng
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        lengths = rng.integers(2, 11, vocab_size)
        self.vocab = np.array(["".join(rng.choice(letters, n)) for n in lengths])
        weights = 1.0 / (np.arange(vocab_size) + 2.7) ** 1.05
        self.cdf = np.cumsum(weights / weights.sum())

    def words(self, n: int) -> list[str]:
        return self.vocab[np.searchsorted(self.cdf, self.rng.random(n))].tolist()

    def text(self, n_words: int) -> str:
        words = self.words(n_words)
        out, i = [], 0
        while i < len(words):
            k = int(self.rng.integers(6, 25))
            sentence = words[i : i + k]
            sentence[0] = sentence[0].capitalize()
            out.append(" ".join(sentence) + ".")
            if self.rng.random() < 0.15:
                out.append("\n\n")
            i += k
        return " ".join(out).replace(" \n\n ", "\n\n")


def light_edits(words: list[str], rng: np.random.Generator, writer: Writer) -> str:
    """1-3 substituted words, some case changes, re-wrapped whitespace."""
    words = list(words)
    for pos in rng.choice(len(words), size=min(len(words), int(rng.integers(1, 4))), replace=False):
        words[pos] = writer.words(1)[0]
    for pos in rng.choice(len(words), size=max(1, len(words) // 20), replace=False):
        words[pos] = words[pos].upper() if rng.random() < 0.5 else words[pos].title()
    seps = rng.choice([" ", "  ", "\n", " \t"], size=len(words) - 1, p=[0.85, 0.07, 0.05, 0.03])
    return "".join(w + s for w, s in zip(words, seps)) + words[-1]


def generate(docs: int, seed: int = 0, planted_fraction: float = 0.3, boilerplate_fraction: float = 0.25) -> pa.Table:
    rng = np.random.default_rng(seed)
    writer = Writer(rng)
    # Boilerplate pools grow with the corpus (more sites, more templates), so the number of
    # documents sharing one block, and with it the candidate pairs it causes, stays bounded.
    headers = [writer.text(int(rng.integers(15, 40))) for _ in range(max(10, docs // 2000))]
    licences = [writer.text(int(rng.integers(40, 150))) for _ in range(max(15, docs // 1300))]
    n_planted = int(docs * planted_fraction)
    n_base = docs - n_planted
    texts, kinds, sources = [], [], []
    for _ in range(n_base):
        body = writer.text(int(np.clip(rng.lognormal(np.log(200), 0.7), 20, 4000)))
        kind = "base"
        if rng.random() < boilerplate_fraction:
            kind = "boilerplate"
            if rng.random() < 0.6:
                body = headers[rng.integers(len(headers))] + "\n\n" + body
            if rng.random() < 0.7:
                body = body + "\n\n" + licences[rng.integers(len(licences))]
        texts.append(body)
        kinds.append(kind)
        sources.append(None)
    for _ in range(n_planted):
        src = int(rng.integers(n_base))
        kind = PLANTED_KINDS[int(rng.integers(len(PLANTED_KINDS)))]
        words = texts[src].split()
        if kind == "near_copy":
            text = light_edits(words, rng, writer)
        else:
            k = max(5, int(len(words) * rng.uniform(0.2, 0.9)))
            start = int(rng.integers(0, len(words) - k + 1))
            span = words[start : start + k]
            text = " ".join(span) if kind == "excerpt" else light_edits(span, rng, writer)
        texts.append(text)
        kinds.append(kind)
        sources.append(src)
    order = rng.permutation(docs)  # planted rows are not all at the end
    ids = np.array([f"doc-{i:08d}" for i in range(docs)])
    new_position = np.empty(docs, np.int64)
    new_position[order] = np.arange(docs)
    source_ids = [None if s is None else ids[new_position[s]] for s in sources]
    return pa.table({
        "id": pa.array(ids),
        "text": pa.array([texts[i] for i in order]),
        "kind": pa.array([kinds[i] for i in order]),
        "source_id": pa.array([source_ids[i] for i in order], pa.string()),
    })


def write(table: pa.Table, out: Path, shards: int = 8) -> None:
    out.mkdir(parents=True, exist_ok=True)
    step = -(-len(table) // shards)
    for i in range(shards):
        pq.write_table(table.slice(i * step, step), out / f"part-{i:05d}.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    write(generate(args.docs, args.seed), args.out, args.shards)


if __name__ == "__main__":
    main()
