"""The demo corpus: deterministic, well-formed, and its planted defects are what they claim to be."""

import collections
import gzip
import re

import orjson
import pyarrow.json as pjson
import pytest

from curate import demo, demo_language
from curate.errors import CurateError


def _rows(paths):
    return [orjson.loads(line) for p in paths for line in gzip.open(p)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    paths = demo.generate(tmp_path_factory.mktemp("demo"))  # the default 20k docs in 8 files
    return paths, _rows(paths)


def test_same_seed_gives_same_bytes_whatever_the_workers(tmp_path):
    a = demo.generate(tmp_path / "a", docs=1500, files=3, seed=7)
    b = demo.generate(tmp_path / "b", docs=1500, files=3, seed=7, workers=2)
    c = demo.generate(tmp_path / "c", docs=1500, files=3, seed=8)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert a[0].read_bytes() != c[0].read_bytes()
    assert not list((tmp_path / "a").glob("*.tmp"))


def test_rejects_more_files_than_docs(tmp_path):
    with pytest.raises(CurateError, match="docs >= files"):
        demo.generate(tmp_path, docs=3, files=4)


def test_files_rows_and_columns(corpus):
    paths, rows = corpus
    assert [p.name for p in paths] == [f"part-{i:04d}.jsonl.gz" for i in range(8)]
    assert len(rows) == 20_000
    assert len({r["id"] for r in rows}) == 20_000
    for r in rows:
        assert set(r) == {"id", "text", "url", "source", "planted"}
        assert isinstance(r["id"], str) and isinstance(r["text"], str) and r["text"]
        assert r["planted"] is None or r["planted"] in demo.PLANTED_KINDS
    table = pjson.read_json(paths[0])  # what the engine's reader will do
    assert table.num_rows == 2500 and str(table.schema.field("planted").type) == "string"


def test_planted_rates(corpus):
    _, rows = corpus
    counts = collections.Counter(r["planted"] for r in rows)
    assert set(demo.PLANTED_KINDS) <= set(counts)
    duplicates = counts[demo.DUPLICATE] + counts[demo.DUPLICATE_NORMALIZED]
    low_quality = sum(counts[k] for k in demo.LOW_QUALITY_KINDS)
    assert 0.04 < duplicates / len(rows) < 0.06
    assert 0.003 < counts[demo.DUPLICATE_NORMALIZED] / len(rows) < 0.01
    assert 0.09 < low_quality / len(rows) < 0.11


def _normalized(text):
    return " ".join(text.lower().split())


def test_exact_dedup_removes_exactly_the_planted_duplicates(corpus):
    _, rows = corpus
    by_text = collections.defaultdict(list)
    for r in rows:
        by_text[r["text"]].append(r["planted"])
    # Every group of equal texts is one unplanted original (the first) plus planted duplicates.
    for planted in by_text.values():
        assert planted[0] != demo.DUPLICATE
        assert all(p == demo.DUPLICATE for p in planted[1:])
    originals = {_normalized(r["text"]) for r in rows if r["planted"] is None}
    for r in rows:
        if r["planted"] == demo.DUPLICATE_NORMALIZED:
            assert len(by_text[r["text"]]) == 1  # not an exact copy of anything
            assert _normalized(r["text"]) in originals


# Gopher's rules, measured the simple way (whitespace words), to check each planted kind breaks its rule.
def _words(text):
    return text.split()


def _stop_words(text):
    return len(set(_words(text)) & set(demo_language.GOPHER_STOP_WORDS))


def _mean_word_len(text):
    words = _words(text)
    return sum(map(len, words)) / len(words)


def _dup_share(parts):
    return 1 - len(set(parts)) / len(parts)


def _top_3gram_char_share(text):
    w = _words(text)
    grams = collections.Counter(" ".join(w[i:i + 3]) for i in range(len(w) - 2))
    gram, count = grams.most_common(1)[0]
    return len(gram) * count / len(text)


def _lines(text):
    return text.splitlines()


BREAKS_ITS_RULE = {
    "too_short": lambda t: len(_words(t)) < 50,
    "symbol_heavy": lambda t: t.count("#") / len(_words(t)) > 0.1,
    "bullet_spam": lambda t: sum(ln.startswith(("•", "-")) for ln in _lines(t)) / len(_lines(t)) > 0.9,
    "ellipsis_lines": lambda t: sum(ln.endswith("...") for ln in _lines(t)) / len(_lines(t)) > 0.3,
    "repeated_lines": lambda t: _dup_share(re.split(r"\n+", t)) > 0.3,
    "repeated_paragraphs": lambda t: _dup_share(re.split(r"\n{2,}", t)) > 0.3,
    "repeated_ngrams": lambda t: _top_3gram_char_share(t) > 0.18,
    "non_alpha": lambda t: sum(any(c.isalpha() for c in w) for w in _words(t)) / len(_words(t)) < 0.8,
    "no_stop_words": lambda t: _stop_words(t) < 2,
    "long_words": lambda t: _mean_word_len(t) > 10,
}


def test_good_documents_pass_the_gopher_rules(corpus):
    _, rows = corpus
    good = [r["text"] for r in rows if r["planted"] is None]
    for text in good:
        assert 100 <= len(_words(text)) <= 3000
        assert _stop_words(text) >= 2
        assert 3 <= _mean_word_len(text) <= 10
    for text in good[::10]:  # the n-gram rules are slow to measure in Python: a tenth of the docs
        assert not any(rule(text) for rule in BREAKS_ITS_RULE.values())
    mean_bytes = sum(len(t) for t in good) / len(good)
    assert 2000 < mean_bytes < 4000


@pytest.mark.parametrize("kind", demo.LOW_QUALITY_KINDS)
def test_each_low_quality_kind_breaks_its_rule(corpus, kind):
    _, rows = corpus
    texts = [r["text"] for r in rows if r["planted"] == kind]
    assert texts and all(BREAKS_ITS_RULE[kind](t) for t in texts)
    if kind != "too_short":
        assert all(len(_words(t)) >= 50 for t in texts)


def test_curate_gopher_quality_removes_the_low_quality_rows_and_only_them(corpus):
    gopher = pytest.importorskip("curate_operators.filters.gopher")
    paths, _ = corpus
    table = pjson.read_json(paths[0])
    verdict = gopher.GopherQuality().keep(table.combine_chunks().to_batches()[0])
    planted = table.column("planted").to_pylist()
    removed = {p for p, keep in zip(planted, verdict.keep.tolist()) if not keep}
    kept = {p for p, keep in zip(planted, verdict.keep.tolist()) if keep}
    assert removed == set(demo.LOW_QUALITY_KINDS)
    assert None in kept and kept <= {None, demo.DUPLICATE, demo.DUPLICATE_NORMALIZED}
