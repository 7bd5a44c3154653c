"""Sub-batches: sorted by length inside the window, order restored, token budget, OOM halving."""

import numpy as np
import pytest

from curate.errors import CurateError
from curate_operators.embed.batching import Batcher


class FakeOOM(RuntimeError):
    pass


def identity_encode(seen):
    """An 'encoder' whose row for item i is [i, len(call)]; records each call's positions."""
    def encode(positions):
        seen.append(list(positions))
        return np.stack([positions.astype(np.float32), np.full(len(positions), len(positions), np.float32)], 1)
    return encode


def test_order_is_restored_and_buckets_hold_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 500, size=1000)
    seen = []
    out = Batcher(batch_size=64).run(lengths, identity_encode(seen))
    assert np.array_equal(out[:, 0], np.arange(1000))  # every row back at its position
    assert [len(c) for c in seen] == [64] * 15 + [40]
    # Longest first, and each call's lengths are a contiguous run of the sorted lengths.
    flat = [p for call in seen for p in call]
    assert list(lengths[flat]) == sorted(lengths, reverse=True)
    padded = sum(len(c) * lengths[c].max() for c in seen)
    unsorted = sum(64 * lengths[i:i + 64].max() for i in range(0, 1000, 64))
    assert padded < 0.6 * unsorted  # sorting cuts the padding


def test_ties_keep_input_order():
    seen = []
    Batcher(batch_size=3).run(np.zeros(7, dtype=np.int64), identity_encode(seen))
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]


def test_token_budget_limits_rows_times_longest():
    lengths = np.array([100] * 4 + [10] * 40)
    seen = []
    Batcher(batch_size=32, max_tokens=250).run(lengths, identity_encode(seen))
    assert [len(c) for c in seen] == [2, 2, 25, 15]
    assert all(len(c) * lengths[c].max() <= 250 for c in seen)
    seen = []
    Batcher(batch_size=8, max_tokens=50).run(np.array([400, 3]), identity_encode(seen))
    assert [len(c) for c in seen] == [1, 1]  # an item over the budget still goes, alone


def test_out_of_memory_halves_the_batch_and_retries():
    freed = []
    seen = []
    inner = identity_encode(seen)

    def encode(positions):
        if len(positions) > 5:
            raise FakeOOM("CUDA out of memory. Tried to allocate 2.00 GiB")
        return inner(positions)

    b = Batcher(batch_size=32, is_oom=lambda e: isinstance(e, FakeOOM), after_oom=lambda: freed.append(1))
    out = b.run(np.arange(40), encode)
    assert np.array_equal(out[:, 0], np.arange(40))
    assert b.cap == 4 and len(freed) == 3  # 32 -> 16 -> 8 -> 4, and the smaller cap stays
    assert all(len(c) <= 4 for c in seen) and sum(len(c) for c in seen) == 40


def test_out_of_memory_on_one_item_is_a_clear_error():
    def encode(positions):
        raise FakeOOM("out of memory")

    with pytest.raises(CurateError, match="out of GPU memory on a single item"):
        Batcher(batch_size=4, is_oom=lambda e: True).run(np.array([7, 7]), encode)


def test_other_errors_are_not_retried():
    calls = []

    def encode(positions):
        calls.append(1)
        raise ValueError("bad input")

    with pytest.raises(ValueError):
        Batcher(batch_size=4, is_oom=lambda e: isinstance(e, FakeOOM)).run(np.arange(8), encode)
    assert len(calls) == 1


def test_torch_oom_is_recognised():
    torch = pytest.importorskip("torch")
    from curate_operators.embed.backends import is_oom

    assert is_oom(torch.cuda.OutOfMemoryError("CUDA out of memory"))
    assert is_oom(RuntimeError("CUDA error: out of memory"))
    assert not is_oom(RuntimeError("shape mismatch"))
