import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from curate_operators.dedup.lsh import ContainmentPlan, JaccardPlan, miss_probability, size_partition


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([32, 64, 128, 256]), st.floats(0.5, 0.95), st.sampled_from([0.01, 0.05]), st.sampled_from([1.2, 1.41, 2.0]))
def test_banding_meets_the_miss_target_within_the_budget(k, tau, miss, ratio):
    plan = ContainmentPlan(k, tau, miss, ratio)
    for gap in range(8):
        r, b, hits = plan.gap_banding[gap]
        assert r * b <= k and (hits == 1 or r == 1)
        s = plan.worst_jaccard(0, gap)
        if (r, b, hits) != (1, k, 1):  # (1, k, 1) is the fallback when nothing meets the target
            assert miss_probability(s, r, b, hits) <= miss
            # One more row per band would need too many permutations for the target.
            if r + 1 <= k:
                better = [bb for bb in range(1, k // (r + 1) + 1) if miss_probability(s, r + 1, bb) <= miss]
                assert not better
        if r == 1:  # two shared bands wherever the target can be met so, with the fewest bands that do
            twice = [bb for bb in range(1, k + 1) if miss_probability(s, 1, bb, 2) <= miss]
            assert (hits, b) == ((2, twice[0]) if twice else (1, b))


def test_the_chance_of_fewer_than_two_shared_bands_is_binomial():
    s, b = 0.1, 40
    assert miss_probability(s, 1, b, 2) == pytest.approx(sum(
        math.comb(b, i) * s**i * (1 - s) ** (b - i) for i in range(2)))


def test_worse_ratios_get_fewer_rows_per_band():
    plan = ContainmentPlan(128, 0.8, 0.01, 2.0)
    rows = [plan.gap_banding[g][0] for g in range(6)]
    assert rows == sorted(rows, reverse=True) and rows[0] >= 2 and rows[-1] == 1


def test_needs_cover_both_roles():
    plan = ContainmentPlan(128, 0.8, 0.01, 2.0)
    for part in (0, 5, plan.max_partition):
        needs = plan.needs(part)
        for gap in range(plan.max_partition + 1):
            if part + gap <= plan.max_partition or part - gap >= 0:
                r, b, _ = plan.gap_banding[gap]
                assert needs[r] >= b


def test_size_partition_is_geometric():
    assert size_partition(np.array([1, 2, 3, 4, 7, 8, 1024]), 2.0).tolist() == [0, 1, 1, 2, 2, 3, 10]


def test_bucket_rows_shape():
    plan = JaccardPlan(bands=4, rows=2)
    sig = np.arange(16, dtype=np.uint64).reshape(2, 8)
    t = plan.bucket_rows(np.array([10, 11]), sig)
    assert t.num_rows == 8 and t.column("ord").to_pylist() == [10] * 4 + [11] * 4
    with pytest.raises(ValueError):
        JaccardPlan(bands=5, rows=2).bucket_rows(np.array([0, 1]), sig)
