"""Dataset metrics equal the reference packages and straightforward counts on the same inputs."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.score import metrics

sentence = st.lists(st.sampled_from(["a", "b", "c", "the", "dog", "ran", "ran.", "A"]), max_size=30).map(" ".join)


def distinct_reference(texts, n):
    grams = [tuple(t.split()[i:i + n]) for t in texts for i in range(len(t.split()) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(sentence, max_size=8), st.integers(1, 4))
@example([], 1)
@example(["a  b\tc\n a b"], 2)
@example(["a b", "b c"], 3)
def test_distinct_n_equals_a_plain_count(texts, n):
    assert metrics.distinct_n(texts, n) == pytest.approx(distinct_reference(texts, n))


def test_vendi_equals_the_vendi_score_package():
    vendi_score = pytest.importorskip("vendi_score.vendi")
    rng = np.random.default_rng(0)
    for n, d in [(40, 8), (10, 32), (1, 4)]:  # d < n (Gram trick) and d > n
        x = rng.normal(size=(n, d))
        assert metrics.vendi(x) == pytest.approx(vendi_score.score_X(x), rel=1e-9)
        assert metrics.vendi(x) == pytest.approx(vendi_score.score_dual(x), rel=1e-9)
    same = np.ones((5, 3))  # identical rows: one effective item
    assert metrics.vendi(same) == pytest.approx(1.0)
    assert metrics.vendi(np.eye(6)) == pytest.approx(6.0)  # orthogonal rows: n items


def test_self_bleu_equals_sacrebleu_sentence_bleu_against_the_others():
    from sacrebleu.metrics import BLEU

    texts = ["the cat sat on the mat .", "the cat sat on the mat .", "a dog ran in the park today",
             "completely different words here", "the dog sat on a mat", "", "x"]
    bleu = BLEU(effective_order=True)
    expected = np.mean([bleu.sentence_score(t, texts[:i] + texts[i + 1:]).score for i, t in enumerate(texts)])
    assert metrics.self_bleu(texts) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(st.lists(sentence, min_size=2, max_size=7))
def test_self_bleu_equals_sacrebleu_on_random_samples(texts):
    from sacrebleu.metrics import BLEU

    bleu = BLEU(effective_order=True)
    expected = np.mean([bleu.sentence_score(t, texts[:i] + texts[i + 1:]).score for i, t in enumerate(texts)])
    assert metrics.self_bleu(texts) == pytest.approx(expected, abs=1e-9)


def test_mean_pairwise_distance_equals_the_brute_force_mean():
    x = np.random.default_rng(1).normal(size=(30, 5))
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = u @ u.T
    expected = 1 - (sims.sum() - np.trace(sims)) / (30 * 29)
    assert metrics.mean_pairwise_distance(x) == pytest.approx(expected)
    assert metrics.mean_pairwise_distance(x[:1]) == 0.0


def test_compression_ratio_of_repetitive_text_is_higher():
    assert metrics.compression_ratio(["same line"] * 200) > metrics.compression_ratio(
        [f"line {i} about {i * 7919 % 1000} things" for i in range(200)])
    assert metrics.compression_ratio([]) == 0.0


def test_cluster_entropy_of_balanced_clusters_is_log_k():
    pytest.importorskip("faiss")
    centers = np.eye(4, 16)
    x = np.repeat(centers, 25, axis=0) + np.random.default_rng(0).normal(scale=0.01, size=(100, 16))
    out = metrics.cluster_entropy(x, 4, seed=0)
    assert out["entropy"] == pytest.approx(np.log(4), rel=1e-6)
    assert out["normalized"] == pytest.approx(1.0)
    lopsided = np.concatenate([np.repeat(centers[:1], 97, axis=0), centers[1:]]) + 1e-3
    assert metrics.cluster_entropy(lopsided, 4, seed=0)["normalized"] < 0.2
