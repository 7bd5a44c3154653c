"""Per-row lexical statistics equal straightforward, independent computations."""

import ast
import re
import zlib
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.score import text_stats
from curate_operators.score.code_ast import python_shape

words = st.lists(st.sampled_from(["a", "b", "c", "the", "cat", "Cat", "dog", "x1"]), max_size=80)
texts = st.lists(words.map(" ".join), min_size=1, max_size=6)


def mattr_reference(text: str, window: int) -> float:
    tokens = re.findall(r"\w+", text.lower())
    if not tokens:
        return 0.0
    w = min(window, len(tokens))
    ratios = [len(set(tokens[i:i + w])) / w for i in range(len(tokens) - w + 1)]
    return sum(ratios) / len(ratios)


@settings(max_examples=60, deadline=None)
@given(texts, st.integers(2, 12))
@example(["", "a a a a", "a b c d e f g h"], 3)
@example(["one"], 50)
def test_mattr_equals_a_sliding_window_count(batch, window):
    got = text_stats.mattr(pa.array(batch), window)
    assert np.allclose(got, [mattr_reference(t, window) for t in batch])


def test_mattr_of_nulls_is_zero():
    assert text_stats.mattr(pa.array([None, "a b"], pa.string()), 5).tolist() == [0.0, 1.0]


@settings(max_examples=30, deadline=None)
@given(texts)
@example(["", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "héllo wörld ✓"])
def test_compression_ratio_is_bytes_over_gzip_bytes(batch):
    def reference(text):
        raw = text.encode()
        if not raw:
            return 0.0
        z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: the gzip container
        return len(raw) / len(z.compress(raw) + z.flush())

    assert np.allclose(text_stats.compression_ratios(pa.array(batch)), [reference(t) for t in batch])


def test_sentences_and_words():
    batch = pa.array(["One. Two!  Three?", "no end here", "", "...", "Line one\nLine two.\n\n", "x\ty  z"])
    assert text_stats.sentence_counts(batch).tolist() == [3, 1, 0, 0, 2, 1]
    assert text_stats.word_counts(batch).tolist() == [len(t.split()) for t in batch.to_pylist()]


def ast_reference(source):
    def depth(node):
        return 1 + max((depth(c) for c in ast.iter_child_nodes(node)), default=0)

    tree = ast.parse(source)
    return depth(tree), sum(1 for _ in ast.walk(tree))


def test_ast_shape_equals_a_recursive_walk():
    for source in ["x = 1", "def f(a):\n    if a:\n        return [i * 2 for i in a]\n", "", "class A:\n    pass\n"]:
        assert python_shape(source) == ast_reference(source)


def test_ast_shape_of_code_that_does_not_parse_is_none():
    assert python_shape("def (:") is None
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000  # too deep for the parser: no crash
    assert python_shape(deep) is None or python_shape(deep)[0] > 10
