"""minhash_dedup's bands and rows for a Jaccard threshold are datasketch's `_optimal_param`
choice (text-dedup uses it), computed here by its own loops over scipy's adaptive quadrature."""

import pytest
from hypothesis import example, given, settings, strategies as st

from curate_operators.dedup.jaccard_bands import optimal_bands


def datasketch_optimal_param(threshold: float, num_perm: int, fp_weight=0.5, fn_weight=0.5):
    from scipy.integrate import quad

    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = quad(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)[0]
            fn = quad(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)[0]
            if fp * fp_weight + fn * fn_weight < best:
                best, opt = fp * fp_weight + fn * fn_weight, (b, r)
    return opt


@settings(max_examples=15, deadline=None)
@given(st.floats(0.05, 0.97), st.integers(1, 48))
@example(0.8, 1)
@example(0.05, 48)
@example(0.97, 48)
def test_the_choice_is_datasketchs(threshold, num_perm):
    assert optimal_bands(threshold, num_perm) == datasketch_optimal_param(threshold, num_perm)


@pytest.mark.parametrize("threshold, num_perm, expected", [(0.7, 256, (25, 10)), (0.8, 112, (9, 12)),
                                                           (0.5, 128, (25, 5))])
def test_known_choices_at_the_usual_signature_sizes(threshold, num_perm, expected):
    # (25, 10): text-dedup's banding for its defaults (threshold 0.7, 256 permutations)
    assert optimal_bands(threshold, num_perm) == expected


def test_a_higher_threshold_takes_more_rows_per_band():
    rows = [optimal_bands(t, 112)[1] for t in (0.5, 0.6, 0.7, 0.8, 0.9)]
    assert rows == sorted(rows) and rows[0] < rows[-1]
