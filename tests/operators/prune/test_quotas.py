"""DBP quotas: exact total, bounds, and the projection's optimality, against the reference's
exact breakpoint solution."""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.prune.quotas import lower_bounds, project, quotas
from tests.operators.prune import reference

SIZES = st.lists(st.integers(0, 50), min_size=1, max_size=30).filter(lambda s: sum(s) > 0)


@settings(max_examples=300, deadline=None)
@given(sizes=SIZES, raw=st.lists(st.floats(0, 1), min_size=30, max_size=30), frac=st.floats(0, 1),
       balance=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
@example(sizes=[10], raw=[1.0] * 30, frac=0.5, balance=0.5)  # one cluster
@example(sizes=[1, 2, 1, 2], raw=[1.0] * 30, frac=0.0, balance=0.5)  # N = 1, tiny clusters
@example(sizes=[3, 3, 3, 3], raw=[1.0] * 30, frac=0.5, balance=0.0)  # equal remainders: ties by index
@example(sizes=[5, 0, 7], raw=[0.0, 1.0, 0.0] + [0.0] * 27, frac=1.0, balance=0.5)  # N = rows; weight on an empty one
def test_quotas_sum_to_n_within_bounds_and_equal_the_reference(sizes, raw, frac, balance):
    sizes = np.array(sizes)
    n = int(sizes.sum())
    N = max(1, int(round(frac * n)))
    w = np.array(raw[: len(sizes)]) + 1e-3
    P = w / w.sum()
    q = quotas(P, sizes, N, balance)
    assert q.sum() == N
    assert (q >= 0).all() and (q <= sizes).all()
    if N < n:
        assert (q >= lower_bounds(sizes, N, balance)).all()
    assert q.tolist() == reference.dbp_quotas(P.tolist(), sizes.tolist(), N, balance)


@settings(max_examples=200, deadline=None)
@given(sizes=SIZES, raw=st.lists(st.floats(0, 1), min_size=30, max_size=30), frac=st.floats(0.01, 0.99))
def test_projection_matches_the_exact_breakpoint_solution(sizes, raw, frac):
    sizes = np.array(sizes, dtype=float)
    N = max(1, int(frac * sizes.sum()))
    w = np.array(raw[: len(sizes)]) + 1e-3
    target = N * w / w.sum()
    lb = np.zeros_like(sizes)
    x = project(target, lb, sizes, N)
    assert abs(x.sum() - N) < 1e-6
    np.testing.assert_allclose(x, reference.capped_simplex(target.tolist(), lb.tolist(), sizes.tolist(), N), atol=1e-7)


def test_lower_bounds_follow_the_spec_and_stay_feasible():
    sizes = np.array([100, 100, 1, 2, 0])
    assert lower_bounds(sizes, 100, 0.5).tolist() == [10, 10, 0, 1, 0]  # floor(0.5 * 100 / 5) = 10, size - 1
    assert lower_bounds(sizes, 100, 0.0).tolist() == [1, 1, 0, 1, 0]  # b = 0: at least one row of 2+
    assert lower_bounds(sizes, 2, 0.0).tolist() == [0, 0, 0, 0, 0]  # N = 2 < three clusters of 2+: plain formula


def test_all_rows_or_more_keeps_every_cluster_whole():
    assert quotas(np.array([0.9, 0.1]), np.array([3, 4]), 7, 0.5).tolist() == [3, 4]
    assert quotas(np.array([0.9, 0.1]), np.array([3, 4]), 100, 0.5).tolist() == [3, 4]


def test_the_largest_remainder_gets_the_last_row():
    # N * P = [1.5, 1.2, 1.3] (no bound binds): floors 1, 1, 1; one row left, to the .5.
    q = quotas(np.array([0.375, 0.3, 0.325]), np.array([10, 10, 10]), 4, 0.0)
    assert q.tolist() == [2, 1, 1]
