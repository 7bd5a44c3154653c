"""SemDeDup's core against the straightforward reference (reference.py): same embeddings,
centroids and assignments give the same removed rows, for many k, eps, orders and seeds."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate_operators.prune.semdedup import scores
from tests.operators.prune import reference
from curate_operators.prune.embeddings import spill
from tests.operators.prune.data import batches, clustered, grid_dataset

# Around the grid's similarities (multiples of 1/16) and exactly on some (0.25: 1 - eps = 12/16).
EPS = st.sampled_from([1e-12, 1e-3, 0.01, 0.0625, 0.07, 0.125, 0.13, 0.25, 0.3, 0.5, 0.9, 0.999999])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), rows=st.integers(1, 60), k=st.integers(1, 12), groups=st.integers(1, 8),
       eps=EPS, order=st.sampled_from(["hard", "easy", "random"]), assign=st.sampled_from(["nearest", "random"]),
       block=st.sampled_from([1, 7, 64, 1 << 20]))
@example(seed=0, rows=40, k=1, groups=3, eps=0.01, order="hard", assign="nearest", block=1 << 20)  # one cluster
@example(seed=1, rows=5, k=12, groups=2, eps=0.13, order="hard", assign="random", block=1 << 20)  # 0-2 rows each
@example(seed=2, rows=30, k=3, groups=2, eps=1e-12, order="easy", assign="nearest", block=7)  # only exact copies
@example(seed=3, rows=30, k=3, groups=2, eps=0.999999, order="random", assign="nearest", block=1)  # almost all
@example(seed=4, rows=1, k=1, groups=1, eps=0.5, order="hard", assign="nearest", block=1)  # a single row
def test_removed_rows_equal_the_reference(seed, rows, k, groups, eps, order, assign, block):
    X, C, labels = grid_dataset(seed, rows, k, groups, assign)
    s = scores(X, C, labels, order=order, seed=seed, block=block)
    got = set(np.flatnonzero(s.removed(eps)).tolist())
    assert got == reference.semdedup_removed(X, C, labels, eps, order, seed)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), rows=st.integers(2, 80), k=st.integers(1, 6), dim=st.sampled_from([8, 33]),
       dtype=st.sampled_from([np.float16, np.float32]), order=st.sampled_from(["hard", "easy", "random"]))
def test_continuous_embeddings_agree_away_from_the_threshold(seed, rows, k, dim, dtype, order):
    """Gaussian data (float32 products vs float64): scores agree to 1e-5, so every decision
    whose reference score is not within 1e-5 of 1 - eps agrees."""
    X = clustered(seed, rows, dim, centers=3, spread=0.05, dtype=dtype)
    rng = np.random.default_rng(seed)
    C = clustered(seed + 1, k, dim, centers=k)
    labels = rng.integers(0, k, rows).astype(np.int32)
    s = scores(X, C, labels, order=order, seed=seed, block=64)
    ref = reference.semdedup_max_similarity(X, C, labels, order, seed)
    for row, value in ref.items():
        assert s.max_similarity[row] == pytest.approx(value, abs=1e-5)
    for eps in (0.001, 0.01, 0.05):
        clear = {r for r, v in ref.items() if abs(v - (1 - eps)) > 1e-5}
        got = set(np.flatnonzero(s.removed(eps)).tolist()) & clear
        assert got == {r for r in clear if ref[r] > 1 - eps}


def test_first_of_each_cluster_has_no_score_and_match_points_earlier():
    X, C, labels = grid_dataset(7, 50, 4, 3)
    s = scores(X, C, labels)
    for c in range(4):
        members = np.flatnonzero(labels == c)
        if len(members):
            assert (s.max_similarity[members] == -np.inf).sum() == 1
    has = s.match >= 0
    assert (labels[s.match[has]] == labels[has]).all()
    sims = np.einsum("ij,ij->i", X[has].astype(float), X[s.match[has]].astype(float))
    np.testing.assert_allclose(sims, s.max_similarity[has], atol=1e-6)


def test_a_spilled_store_read_in_small_groups_gives_the_same_scores(tmp_path):
    x = clustered(0, 5000, 24, centers=30, dtype=np.float16)
    x[4000:] = x[:1000]
    store = spill(batches(x, size=999), "_embedding", tmp_path, "s")
    C = clustered(1, 40, 24, centers=40)
    labels = np.argmax(x.astype(np.float32) @ C.T, axis=1).astype(np.int32)
    a = scores(x, C, labels)
    b = scores(store, C, labels, group_bytes=20_000)  # ~400 rows a group: many groups, big clusters alone
    np.testing.assert_array_equal(a.max_similarity, b.max_similarity)
    np.testing.assert_array_equal(a.match, b.match)
    assert not list(tmp_path.glob("group-*"))  # group files are gone once read


def test_exact_copies_keep_one_by_order_then_ord():
    X, C, labels = grid_dataset(3, 1, 1, 1)
    X = np.repeat(X, 5, axis=0)
    labels = np.zeros(5, np.int32)
    for order in ("hard", "easy"):  # equal distances: the lowest _ord stays
        assert scores(X, C, labels, order=order).removed(1e-6).tolist() == [False, True, True, True, True]


def test_a_large_cluster_is_computed_in_bounded_blocks(monkeypatch):
    """A 3000-row cluster with a 64k-value block budget: no product larger than the budget."""
    import curate_operators.prune.semdedup as mod

    X = clustered(0, 3000, 16, centers=1, spread=0.01)
    seen = []
    real_unit32 = mod.unit32

    class Watch(np.ndarray):
        def __matmul__(self, other):
            out = np.asarray(self) @ np.asarray(other)
            seen.append(out.size)
            return out

    monkeypatch.setattr(mod, "unit32", lambda x: real_unit32(x).view(Watch))
    s = scores(X, X[:1], np.zeros(3000, np.int32), block=1 << 16)
    assert max(seen) <= 1 << 16 and len(seen) > 1
    assert np.isinf(s.max_similarity).sum() == 1  # all but the cluster's first member were scored
