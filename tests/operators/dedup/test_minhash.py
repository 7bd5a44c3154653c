from unittest.mock import patch

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.dedup import minhash
from curate_operators.dedup.minhash import EMPTY, band_keys, estimated_jaccard, permutations, signatures
from curate_operators.dedup.shingles import ShingleSets


def sets(*rows):
    values = np.concatenate([np.asarray(r, np.uint64) for r in rows]) if rows else np.zeros(0, np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    return ShingleSets(values, offsets)


def test_permutations_are_seeded_and_odd():
    a1, b1 = permutations(16, 3)
    a2, _ = permutations(16, 3)
    a3, _ = permutations(16, 4)
    assert np.array_equal(a1, a2) and not np.array_equal(a1, a3)
    assert np.all(a1 % np.uint64(2) == 1)


def test_equal_sets_equal_signatures_and_empty_rows():
    rng = np.random.default_rng(0)
    x = np.sort(rng.integers(0, 2**63, 50, dtype=np.int64).astype(np.uint64))
    sig = signatures(sets(x, [], x[::-1].copy()), *permutations(32, 0))
    assert np.array_equal(sig[0], sig[2])
    assert np.all(sig[1] == EMPTY)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=40), max_size=30), st.integers(1, 64))
@example(rows=[], block=1)  # no rows at all
@example(rows=[[], []], block=1)  # only empty rows
@example(rows=[[], [1, 2, 3], [], [7]], block=1)  # a row larger than a block is a block of its own
def test_signatures_are_each_rows_minimum_of_each_permutation_whatever_the_blocks(rows, block):
    """Rows are signed in blocks of about BLOCK_VALUES hashes (for the cache); every block size
    gives each row's own minimum of every permutation, as signing each row alone does."""
    a, b = permutations(8, 5)
    with patch.object(minhash, "BLOCK_VALUES", block):
        sig = signatures(sets(*rows), a, b)
    for row, got in zip(rows, sig):
        h = np.asarray(row, np.uint64)
        want = (h[:, None] * a + b).min(axis=0) if len(h) else np.full(len(a), EMPTY, np.uint64)
        assert np.array_equal(got, want)
    assert sig.shape == (len(rows), len(a))


def test_estimated_jaccard_tracks_true_jaccard():
    rng = np.random.default_rng(1)
    universe = rng.integers(0, 2**63, 3000, dtype=np.int64).astype(np.uint64)
    a, b = universe[:2000], universe[1000:]  # Jaccard = 1000 / 3000
    sig = signatures(sets(a, b), *permutations(512, 7))
    est = estimated_jaccard(sig[:1], sig[1:])[0]
    assert abs(est - 1 / 3) < 0.07  # ~3.5 standard deviations at k = 512


def test_band_keys():
    sig = np.arange(24, dtype=np.uint64).reshape(2, 12)
    one = band_keys(sig, 1, 12)  # one row a band: the values themselves, mixed one to one
    assert one.shape == sig.shape and len(np.unique(one)) == 24 and (one[sig > 0] > 2**40).all()
    k = band_keys(sig, 3, 4)
    assert k.shape == (2, 4) and len(np.unique(k)) == 8
    same = band_keys(np.vstack([sig[0], sig[0]]), 3, 4)
    assert np.array_equal(same[0], same[1])
