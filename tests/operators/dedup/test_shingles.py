from hypothesis import given, settings, strategies as st
import numpy as np
import pyarrow as pa
import pytest

from curate_operators.dedup.shingles import ShingleSpec, shingle_sets
from tests.operators.dedup.helpers import word_shingles

words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "Éta", "x1"]), max_size=30)


def sets_of(texts, spec=ShingleSpec()):
    s = shingle_sets(pa.array(texts, pa.string()), spec)
    return [s.values[s.offsets[i] : s.offsets[i + 1]] for i in range(len(texts))]


def test_case_whitespace_and_punctuation_do_not_change_word_shingles():
    a, b = sets_of(["The quick brown fox jumps over", "the  QUICK,\nbrown fox... jumps   over!"])
    assert a.tolist() == b.tolist() and len(a) == 2


def test_short_empty_and_null_rows():
    short, empty, null = sets_of(["two words", "", None])
    assert len(short) == 1 and len(empty) == 0 and len(null) == 0


def test_word_order_matters():
    a, b = sets_of(["a b c d e", "e d c b a"])
    assert a.tolist() != b.tolist()


def test_char_shingles_collapse_whitespace():
    a, b = sets_of(["ab  cd", "AB cd"], ShingleSpec(kind="char", n=3))
    assert a.tolist() == b.tolist() and len(a) == 3  # "ab ", "b c", " cd"


def test_seed_changes_hashes():
    a, = sets_of(["one two three four five six"], ShingleSpec(seed=1))
    b, = sets_of(["one two three four five six"], ShingleSpec(seed=2))
    assert set(a.tolist()).isdisjoint(b.tolist())


def test_bad_ngram_is_rejected():
    with pytest.raises(ValueError):
        ShingleSpec(n=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(words, min_size=1, max_size=6), st.integers(1, 6))
def test_sets_match_reference_shingling(docs, n):
    texts = [" ".join(d) for d in docs]
    got = sets_of(texts, ShingleSpec(n=n))
    for text, hashes in zip(texts, got):
        assert len(hashes) == len(word_shingles(text, n))
        assert np.all(np.diff(hashes.astype(np.float64)) >= 0)  # sorted (uint64 compared as float is monotone)
        assert len(np.unique(hashes)) == len(hashes)


@settings(max_examples=40, deadline=None)
@given(st.lists(words, min_size=2, max_size=5))
def test_equal_shingle_sets_give_equal_hashes(docs):
    texts = [" ".join(d) for d in docs]
    got = sets_of(texts)
    for i in range(len(texts)):
        for j in range(len(texts)):
            same = word_shingles(texts[i]) == word_shingles(texts[j])
            assert same == (got[i].tolist() == got[j].tolist())
