"""DBP's core against the straightforward reference (reference.py): on the same embeddings,
centroids and assignments, the same quotas and kept rows, and exactly N of them, for many k,
N, temperatures, balances, variants and modes."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate_operators.prune.dbp import dbp
from tests.operators.prune import reference
from tests.operators.prune.data import clustered, grid_dataset

CASE = dict(seed=st.integers(0, 2**32), rows=st.integers(1, 70), k=st.integers(1, 12), groups=st.integers(1, 8),
            frac=st.floats(0, 1), temperature=st.sampled_from([0.05, 0.1, 0.5, 2.0]),
            balance=st.sampled_from([0.0, 0.25, 0.5, 1.0]), neighbors=st.sampled_from([1, 3, 20]),
            kind=st.sampled_from(["dintra*dinter", "uniform", "clustersize"]),
            mode=st.sampled_from(["hard", "easy", "random"]), assign=st.sampled_from(["nearest", "random"]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASE)
@example(seed=0, rows=50, k=1, groups=3, frac=0.3, temperature=0.5, balance=0.5, neighbors=20, kind="dintra*dinter",
         mode="hard", assign="nearest")  # one cluster
@example(seed=1, rows=9, k=8, groups=3, frac=0.5, temperature=0.5, balance=0.5, neighbors=20, kind="dintra*dinter",
         mode="hard", assign="random")  # clusters of 0-2 rows: complexity filled with the mean
@example(seed=2, rows=40, k=5, groups=4, frac=0.0, temperature=0.5, balance=0.0, neighbors=3, kind="dintra*dinter",
         mode="easy", assign="nearest")  # N = 1
@example(seed=3, rows=40, k=5, groups=4, frac=1.0, temperature=0.5, balance=0.5, neighbors=3, kind="uniform",
         mode="random", assign="nearest")  # N = rows
def test_kept_rows_equal_the_reference(seed, rows, k, groups, frac, temperature, balance, neighbors, kind, mode,
                                       assign):
    X, C, labels = grid_dataset(seed, rows, k, groups, assign)
    N = max(1, int(round(frac * rows)))
    r = dbp(X, C, labels, keep=N, complexity=kind, temperature=temperature, balance=balance, neighbors=neighbors,
            mode=mode, seed=seed)
    kept, q = reference.dbp_kept(X, C, labels, N, kind, temperature, balance, neighbors, mode, seed)
    assert r.keep.sum() == N
    assert r.quota.tolist() == q
    assert set(np.flatnonzero(r.keep).tolist()) == kept


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), rows=st.integers(10, 120), k=st.integers(2, 8), frac=st.floats(0.05, 0.95),
       temperature=st.sampled_from([0.01, 0.05, 0.5]), mode=st.sampled_from(["hard", "easy", "random"]))
def test_continuous_embeddings_equal_the_reference(seed, rows, k, frac, temperature, mode):
    X = clustered(seed, rows, 16, centers=4, spread=0.4, dtype=np.float16)
    C = clustered(seed + 1, k, 16, centers=k)
    labels = np.argmax(X.astype(float) @ C.T.astype(float), axis=1).astype(np.int32)
    N = max(1, int(frac * rows))
    r = dbp(X, C, labels, keep=N, temperature=temperature, mode=mode, seed=seed)
    kept, q = reference.dbp_kept(X, C, labels, N, "dintra*dinter", temperature, 0.5, 20, mode, seed)
    assert r.quota.tolist() == q
    assert set(np.flatnonzero(r.keep).tolist()) == kept


def test_complexity_table_matches_the_formulas():
    X, C, labels = grid_dataset(11, 60, 4, 4)
    r = dbp(X, C, labels, keep=20, neighbors=2)
    np.testing.assert_allclose(r.complexity, reference.complexity(X, C, labels, 2))
    assert r.size.tolist() == np.bincount(labels, minlength=4).tolist()
    np.testing.assert_allclose(r.weight.sum(), 1.0)


def test_more_complex_clusters_get_larger_shares():
    """A tight cluster and a diffuse one of the same size: the diffuse one keeps more."""
    tight = clustered(0, 500, 16, centers=1, spread=0.05)
    loose = clustered(1, 500, 16, centers=1, spread=1.0)
    X = np.vstack([tight, loose])
    C = np.vstack([tight.mean(0), loose.mean(0)])
    labels = np.repeat([0, 1], 500).astype(np.int32)
    r = dbp(X, C, labels, keep=300, temperature=0.05, balance=0.0)
    assert r.quota[1] > r.quota[0] and r.quota.sum() == 300
    uniform = dbp(X, C, labels, keep=300, complexity="uniform")
    assert uniform.quota.tolist() == [150, 150]


@pytest.mark.parametrize("mode", ["hard", "easy", "random"])
def test_quota_zero_keeps_nothing_in_every_mode(mode):
    X, C, labels = grid_dataset(5, 30, 3, 3)
    r = dbp(X, C, labels, keep=1, balance=0.0, mode=mode)  # N = 1: two of the three clusters get 0
    assert r.keep.sum() == 1
    for c in np.flatnonzero(r.quota == 0):
        assert not r.keep[labels == c].any()
