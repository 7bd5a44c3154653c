"""The hash backend: deterministic, duplicates identical, near duplicates close, no model."""

import numpy as np
import pyarrow as pa
import pytest

from curate_operators.embed import hashing
from curate_operators.embed.hashing import HashBackend


def unit(m):
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def words(rng, n):
    vocab = [f"w{i}x" for i in range(3000)]
    return " ".join(rng.choice(vocab, size=n))


def test_duplicates_identical_near_duplicates_close_unrelated_far():
    rng = np.random.default_rng(0)
    base = [words(rng, 300) for _ in range(20)]
    near = [b.replace(b.split()[5], "changed", 1) + " and a short tail" for b in base]
    texts = base + near + [b.upper().replace(" ", "  \n") for b in base]  # case and whitespace variants
    e = unit(HashBackend(dim=256, ngram=5).embed(pa.array(texts))[0])
    sim = e @ e.T
    idx = np.arange(20)
    assert np.allclose(sim[idx, idx + 40], 1.0, atol=1e-6)  # same text up to case and whitespace
    assert sim[idx, idx + 20].min() > 0.9  # near duplicates
    unrelated = sim[:20, :20][~np.eye(20, dtype=bool)]
    assert unrelated.max() < sim[idx, idx + 20].min() - 0.2


def test_same_input_same_bytes_whatever_the_chunking_and_slicing(monkeypatch):
    rng = np.random.default_rng(1)
    texts = [words(rng, int(k)) for k in rng.integers(0, 60, size=300)] + ["", "a", "ab", "éé", "日本語テキスト"]
    arr = pa.array(texts)
    full = HashBackend().embed(arr)[0]
    monkeypatch.setattr(hashing, "_CHUNK_BYTES", 97)  # many chunks, cut anywhere
    assert HashBackend().embed(arr)[0].tobytes() == full.tobytes()
    assert HashBackend().embed(pa.array(texts, pa.large_string()))[0].tobytes() == full.tobytes()
    assert HashBackend().embed(arr.slice(100, 50))[0].tobytes() == full[100:150].tobytes()
    chunked = pa.chunked_array([arr.slice(0, 10), arr.slice(10)])
    assert HashBackend().embed(chunked)[0].tobytes() == full.tobytes()


def test_short_texts_and_unicode():
    e = HashBackend(dim=64, ngram=5).embed(pa.array(["ab", "ab", "ba", "é", "abcdefgh"]))[0]
    assert np.array_equal(e[0], e[1]) and not np.array_equal(e[0], e[2])
    assert np.count_nonzero(e[0]) == 1 and np.count_nonzero(e[3]) == 1  # one n-gram: the whole text
    assert np.abs(e[4]).sum() == 4  # 8 bytes, 4 windows of 5


def test_parameters_change_the_space():
    arr = pa.array(["some text to embed"])
    assert HashBackend(dim=32).embed(arr)[0].shape == (1, 32)
    assert not np.array_equal(HashBackend(ngram=3).embed(arr)[0], HashBackend(ngram=4).embed(arr)[0])


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_inputs(n):
    assert HashBackend(dim=16).embed(pa.array(["x"] * n, pa.string()))[0].shape == (n, 16)
