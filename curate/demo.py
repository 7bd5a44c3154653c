"""A deterministic synthetic corpus for demos, tests and benchmarks (no downloads).

English-like documents (real function words plus a Zipf-distributed pseudo-word vocabulary, in
capitalised sentences and paragraphs) that pass the Gopher quality and repetition rules, with planted
defects named in the `planted` column so tests and benches can measure recall:

- `duplicate`: a byte-exact copy of an earlier row (one unplanted original per group);
- `duplicate_normalized`: a copy that differs only in case and whitespace (found after normalize_text);
- one low-quality kind per Gopher rule (LOW_QUALITY_KINDS), each built to break that rule only.

Every token of a chunk of documents is drawn at once with numpy and joined from pre-built surface
forms (demo_language.py), so a ~1 GB corpus takes minutes; files are independent and can be
written in parallel.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from curate.demo_language import good_lengths, languages
from curate.errors import CurateError

DUPLICATE = "duplicate"
DUPLICATE_NORMALIZED = "duplicate_normalized"
LOW_QUALITY_KINDS = (
    "too_short",
    "symbol_heavy",
    "bullet_spam",
    "ellipsis_lines",
    "repeated_lines",
    "repeated_paragraphs",
    "repeated_ngrams",
    "non_alpha",
    "no_stop_words",
    "long_words",
)
PLANTED_KINDS = (DUPLICATE, DUPLICATE_NORMALIZED) + LOW_QUALITY_KINDS

LOW_QUALITY_RATE = 0.10
# Rows that copy a "popular" document from a shared pool; the first copy of each is the unplanted
# original. With a pool of 2% of the corpus, 7% of rows referencing it leave ~5% duplicates.
POOL_REFERENCE_RATE = 0.07
POOL_FRACTION = 0.02
NORMALIZED_SHARE = 0.10  # of the duplicate copies, those that differ in case/whitespace

ROWS_PER_CHUNK = 4096  # rows generated and written together; fixed so output does not depend on workers
GZIP_LEVEL = 3  # fast enough to write ~100 MB/s of JSON per core, ~3x smaller than the text


# --- low-quality kinds: each breaks one Gopher rule, and has >= 60 words unless it is `too_short` ---


def _too_short(lang, rng, n):
    return lang.texts(rng, rng.integers(10, 45, n))


def _symbol_heavy(lang, rng, n):
    # A quarter of the words become hashtags: "#" per word > 0.1.
    return [_mark_words(t, rng, 0.25, lambda w: "#" + w) for t in lang.texts(rng, rng.integers(60, 400, n))]


def _non_alpha(lang, rng, n):
    # 40% of the words become numbers and symbols: < 80% of words contain a letter.
    junk = np.array(["1,024", "3.14", "2024", "%", "$99", "404", "||", "0x1f", "12:30", "+/-", "7", "==>"])
    return [
        _mark_words(t, rng, 0.4, lambda w: junk[rng.integers(len(junk))])
        for t in lang.texts(rng, rng.integers(60, 400, n))
    ]


def _mark_words(text: str, rng: np.random.Generator, share: float, change) -> str:
    words = text.split(" ")
    hit = rng.random(len(words)) < share
    return " ".join(change(w) if h else w for w, h in zip(words, hit.tolist()))


def _lines_docs(lang, rng, n, lines_range, words_range, make_doc):
    """Documents made of short lines: draws every line at once, then `make_doc(lines, rng)` per doc."""
    counts = rng.integers(*lines_range, n)
    lines = lang.texts(rng, rng.integers(*words_range, int(counts.sum())))
    bounds = np.concatenate(([0], np.cumsum(counts))).tolist()
    return [make_doc([ln.replace("\n\n", " ") for ln in lines[a:b]], rng) for a, b in zip(bounds, bounds[1:])]


def _bullet_spam(lang, rng, n):
    return _lines_docs(
        lang,
        rng,
        n,
        (20, 60),
        (4, 10),
        lambda lines, r: "\n".join(("• " if r.random() < 0.5 else "- ") + ln for ln in lines),
    )


def _ellipsis_lines(lang, rng, n):
    # Half the lines trail off: > 30% of lines end with "...", but only ~4% of words are ellipses.
    def doc(lines, r):
        cut = r.permutation(len(lines)) < len(lines) // 2
        return "\n".join(ln[:-1] + "..." if c else ln for ln, c in zip(lines, cut.tolist()))

    return _lines_docs(lang, rng, n, (20, 50), (8, 20), doc)


def _repeated_lines(lang, rng, n):
    def doc(lines, r):
        distinct = lines[: r.integers(3, 6)]
        return "\n".join(distinct[i] for i in r.integers(0, len(distinct), len(lines)))

    return _lines_docs(lang, rng, n, (20, 40), (10, 18), doc)


def _repeated_paragraphs(lang, rng, n):
    def doc(paragraphs, r):
        distinct = paragraphs[: r.integers(2, 4)]
        return "\n\n".join(distinct[i] for i in r.integers(0, len(distinct), r.integers(6, 11)))

    return _lines_docs(lang, rng, n, (3, 4), (30, 80), doc)


def _repeated_ngrams(lang, rng, n):
    # A three-word phrase after a quarter of the words: its 3-gram covers ~40% of the text (limit 18%).
    def spam(text, r):
        phrase = " ".join(lang.words[i] for i in lang.sample(r, 3))
        return _mark_words(text, r, 0.25, lambda w: f"{w} {phrase}")

    return [spam(t, rng) for t in lang.texts(rng, rng.integers(100, 500, n))]


def _no_stop_words(lang, rng, n):
    return lang.texts(rng, rng.integers(60, 400, n), avoid=lang.stop_ids)


def _long_words(lang, rng, n):
    return languages()[1].texts(rng, rng.integers(60, 400, n))


_LOW_QUALITY = {
    "too_short": _too_short,
    "symbol_heavy": _symbol_heavy,
    "bullet_spam": _bullet_spam,
    "ellipsis_lines": _ellipsis_lines,
    "repeated_lines": _repeated_lines,
    "repeated_paragraphs": _repeated_paragraphs,
    "repeated_ngrams": _repeated_ngrams,
    "non_alpha": _non_alpha,
    "no_stop_words": _no_stop_words,
    "long_words": _long_words,
}
assert tuple(_LOW_QUALITY) == LOW_QUALITY_KINDS


def _case_space_variant(text: str, rng: np.random.Generator) -> str:
    """The same document with some spaces doubled, padded, and maybe lower-cased.

    The random doubled spaces make two variants of one document (almost surely) differ from each other too,
    so they are duplicates only after normalization.
    """
    words = text.split(" ")
    seps = np.where(rng.random(len(words)) < 0.1, "  ", " ").tolist()
    text = " " + "".join(w + s for w, s in zip(words, seps)).rstrip(" ") + " \n"
    return text.lower() if rng.random() < 0.5 else text


# --- the corpus plan: which row is what, decided for the whole corpus before any file is written ---

_GOOD, _POOL_ORIGINAL, _POOL_DUPLICATE, _POOL_NORMALIZED = range(4)
_LOW_QUALITY_BASE = 4  # kind code of LOW_QUALITY_KINDS[i] is 4 + i

_DOMAINS = (
    "example.com",
    "news.example.org",
    "forum.example.net",
    "blog.example.io",
    "wiki.example.edu",
    "shop.example.co",
    "docs.example.dev",
    "mirror.example.info",
)
_SOURCES = ("web", "news", "forum", "blog", "wiki", "web", "docs", "web")


@dataclass
class _Plan:
    seed: int
    kind: np.ndarray  # int8 per row
    pool_id: np.ndarray  # int32 per row, -1 unless the row copies a pool document
    pool_texts: list[str]
    file_bounds: list[int]  # rows of file i are file_bounds[i]:file_bounds[i + 1]


def _plan(
    docs: int,
    files: int,
    seed: int,
    low_quality_rate: float = LOW_QUALITY_RATE,
    pool_reference_rate: float = POOL_REFERENCE_RATE,
    pool_fraction: float = POOL_FRACTION,
) -> _Plan:
    rng = np.random.default_rng([seed, 1])
    u = rng.random(docs)
    kind = np.full(docs, _GOOD, dtype=np.int8)
    low = (u >= pool_reference_rate) & (u < pool_reference_rate + low_quality_rate)
    kind[low] = _LOW_QUALITY_BASE + rng.integers(0, len(LOW_QUALITY_KINDS), int(low.sum()))
    refs = np.flatnonzero(u < pool_reference_rate)
    pool_size = max(1, round(docs * pool_fraction))
    pool_id = np.full(docs, -1, dtype=np.int32)
    pool_id[refs] = rng.integers(0, pool_size, refs.size)
    first = np.zeros(refs.size, dtype=bool)
    first[np.unique(pool_id[refs], return_index=True)[1]] = True
    normalized = rng.random(refs.size) < NORMALIZED_SHARE
    kind[refs] = np.where(first, _POOL_ORIGINAL, np.where(normalized, _POOL_NORMALIZED, _POOL_DUPLICATE))
    pool_rng = np.random.default_rng([seed, 2])
    pool_texts = languages()[0].texts(pool_rng, good_lengths(pool_rng, pool_size))
    bounds = np.linspace(0, docs, files + 1).round().astype(np.int64).tolist()
    return _Plan(seed, kind, pool_id, pool_texts, bounds)


def _chunk_rows(plan: _Plan, rng: np.random.Generator, rows: range) -> list[bytes]:
    """The JSON lines of `rows` (global row numbers)."""
    lang = languages()[0]
    kind = plan.kind[rows.start : rows.stop]
    texts: list[str | None] = [None] * len(rows)
    planted: list[str | None] = [None] * len(rows)
    good = np.flatnonzero(kind == _GOOD)
    for i, t in zip(good.tolist(), lang.texts(rng, good_lengths(rng, good.size))):
        texts[i] = t
    for code, name in enumerate(LOW_QUALITY_KINDS, start=_LOW_QUALITY_BASE):
        where = np.flatnonzero(kind == code).tolist()
        for i, t in zip(where, _LOW_QUALITY[name](lang, rng, len(where))):
            texts[i], planted[i] = t, name
    for i in np.flatnonzero((kind >= _POOL_ORIGINAL) & (kind <= _POOL_NORMALIZED)).tolist():
        k = kind[i]
        text = plan.pool_texts[plan.pool_id[rows.start + i]]
        if k == _POOL_NORMALIZED:
            text, planted[i] = _case_space_variant(text, rng), DUPLICATE_NORMALIZED
        elif k == _POOL_DUPLICATE:
            planted[i] = DUPLICATE
        texts[i] = text
    site = rng.integers(0, len(_DOMAINS), len(rows)).tolist()
    return [
        orjson.dumps(
            {
                "id": f"doc-{row:09d}",
                "text": texts[i],
                "url": f"https://{_DOMAINS[site[i]]}/p/{row:x}-{plan.seed}",
                "source": _SOURCES[site[i]],
                "planted": planted[i],
            }
        )
        + b"\n"
        for i, row in enumerate(rows)
    ]


def _write_file(plan: _Plan, index: int, path: Path) -> Path:
    rng = np.random.default_rng([plan.seed, 3, index])
    lo, hi = plan.file_bounds[index], plan.file_bounds[index + 1]
    tmp = path.with_name(path.name + ".tmp")
    # mtime=0 and no file name in the header: the bytes depend only on the content.
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, filename="", mtime=0) as out,
    ):
        for start in range(lo, hi, ROWS_PER_CHUNK):
            out.writelines(_chunk_rows(plan, rng, range(start, min(start + ROWS_PER_CHUNK, hi))))
    os.replace(tmp, path)
    return path


_FORKED_PLAN: _Plan | None = None  # the plan handed to forked workers without pickling it


def _write_file_forked(index: int, path: Path) -> Path:
    assert _FORKED_PLAN is not None  # set before the pool forks
    return _write_file(_FORKED_PLAN, index, path)


def generate(
    out_dir: str | Path,
    docs: int = 20_000,
    files: int = 8,
    seed: int = 0,
    workers: int = 1,
    low_quality_rate: float = LOW_QUALITY_RATE,
    pool_reference_rate: float = POOL_REFERENCE_RATE,
    pool_fraction: float = POOL_FRACTION,
) -> list[Path]:
    """Write `docs` rows over `files` files `out_dir/part-NNNN.jsonl.gz`; return their paths.

    Columns: id, text, url, source, planted (a PLANTED_KINDS value, or null for a good row).
    The same (docs, files, seed, rates) always gives byte-identical files, whatever `workers` is.
    The rates: the share of rows of a low-quality kind, the share of rows copying a document of
    the shared pool (the first copy of each is the unplanted original), and the pool's size as a
    share of the rows (smaller: each pooled document is copied more often).
    """
    if files < 1 or docs < files:
        raise CurateError(f"the demo corpus needs docs >= files >= 1, got docs={docs}, files={files}")
    if (
        min(low_quality_rate, pool_reference_rate) < 0
        or low_quality_rate + pool_reference_rate > 1
        or not 0 < pool_fraction <= 1
    ):
        raise CurateError(
            f"the demo corpus needs rates in [0, 1] adding up to at most 1 and a pool fraction in "
            f"(0, 1], got low_quality_rate={low_quality_rate}, pool_reference_rate="
            f"{pool_reference_rate}, pool_fraction={pool_fraction}"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = _plan(docs, files, seed, low_quality_rate, pool_reference_rate, pool_fraction)
    paths = [out / f"part-{i:04d}.jsonl.gz" for i in range(files)]
    if workers <= 1 or files == 1:
        return [_write_file(plan, i, p) for i, p in enumerate(paths)]
    global _FORKED_PLAN
    _FORKED_PLAN = plan
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, files)) as pool:
            return pool.starmap(_write_file_forked, enumerate(paths), chunksize=1)
    finally:
        _FORKED_PLAN = None


def clean_documents(n: int, seed: int) -> list[str]:
    """`n` documents as the corpus's good rows are made (the same language and lengths), none with
    a planted defect: clean held-out text of the corpus's distribution (for `curate ablate`)."""
    rng = np.random.default_rng([seed, 4])
    return languages()[0].texts(rng, good_lengths(rng, n))
