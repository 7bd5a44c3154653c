import os
from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from curate_operators.dedup import store as store_module
from curate_operators.dedup.store import RowStoreWriter, ranges
from curate_operators.dedup.verify import SAMPLE_DTYPE, UNCUT, containment, cutoffs, sample_values, screened_containment

# Sample values as the signature pass stores them (sorted 32-bit values).
hashes = st.lists(st.integers(0, 2**32 - 2), max_size=40, unique=True).map(lambda v: np.sort(np.array(v, SAMPLE_DTYPE)))


def write(tmp_path, rows, m=None, order=None):
    w = RowStoreWriter(tmp_path / "s.bin", SAMPLE_DTYPE)
    order = order if order is not None else list(range(len(rows)))
    for o in order:  # rows arrive in any order
        r = rows[o] if m is None else rows[o][:m]
        w.append(np.array([o]), r, np.array([0, len(r)]))
    return w.close()


def test_ranges():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]


@settings(max_examples=30, deadline=None)
@given(st.lists(hashes, min_size=1, max_size=6), st.randoms(), st.booleans(), st.booleans())
def test_gather_round_trip(tmp_path_factory, rows, rnd, kept, scattered):
    order = list(range(len(rows)))
    rnd.shuffle(order)
    store = write(tmp_path_factory.mktemp("s"), rows, order=order)
    store = store_module.RowStore(store.path, SAMPLE_DTYPE, scattered=scattered)
    ask = np.array([rnd.randrange(len(rows)) for _ in range(8)])
    with store.kept_mapped() if kept else nullcontext():
        values, offsets = store.gather(ask)
    for i, o in enumerate(ask):
        assert values[offsets[i] : offsets[i + 1]].tolist() == rows[o].tolist()


def test_the_screen_reads_the_samples_of_the_pairs_it_lets_through_only(tmp_path):
    """Every candidate pair reads the heads; the samples (a file the page cache may not hold) only
    for the pairs the screen does not reject."""
    evens, odds = np.arange(0, 400, 2, dtype=SAMPLE_DTYPE), np.arange(1, 400, 2, dtype=SAMPLE_DTYPE)
    rows = [evens, odds, evens[:100]]  # row 1 shares nothing with row 0; row 2 is in it
    (tmp_path / "s").mkdir(), (tmp_path / "h").mkdir()
    store, heads = write(tmp_path / "s", rows), write(tmp_path / "h", rows, m=16)
    asked = []
    gather = store.gather
    store.gather = lambda ords, head=None: asked.append(ords.tolist()) or gather(ords, head)
    sizes = np.array([len(r) for r in rows])
    got = screened_containment(store, heads, cutoffs(store, sizes), cutoffs(heads, sizes, 16),
                               np.array([1, 2]), np.array([0, 0]), floor=0.5)
    assert got[0] == 0.0 and got[1] == 1.0
    assert asked and all(1 not in ords for ords in asked)


def test_a_scattered_stores_maps_ask_for_the_pages_read_only(tmp_path):
    """MADV_RANDOM, seen as the map's `rr` flag in /proc/self/smaps."""
    plain = write(tmp_path, [np.arange(5000, dtype=SAMPLE_DTYPE)])

    def flags(store):
        with store.kept_mapped():
            lines = open("/proc/self/smaps").read().splitlines()
        at = next(i for i, line in enumerate(lines) if line.endswith(str(store.path)))
        return next(line for line in lines[at:] if line.startswith("VmFlags:")).split()

    assert "rr" not in flags(plain)
    assert "rr" in flags(store_module.RowStore(plain.path, SAMPLE_DTYPE, scattered=True))


def test_a_gather_reads_the_file_without_mapping_it(tmp_path, monkeypatch):
    """Outside kept_mapped no map of the file is made: a mapped page counts in the process's
    resident memory (the kernel maps whole page-cache folios around each row read)."""
    rows = [np.arange(i, i + i % 5, dtype=SAMPLE_DTYPE) for i in range(50)]
    store = write(tmp_path, rows)
    ask = np.array(list(range(49, -1, -1)) * 2 + list(range(50)))  # backwards, repeated, then in file order

    def no_map(*args, **kwargs):
        raise AssertionError("the file was mapped")

    monkeypatch.setattr(store_module.np, "memmap", no_map)
    values, offsets = store.gather(ask)
    for i, o in enumerate(ask):
        assert values[offsets[i] : offsets[i + 1]].tolist() == rows[o].tolist()


def test_rows_that_follow_on_are_read_at_once():
    starts, lengths = store_module._runs(np.array([0, 5, 7, 7, 20, 2]), np.array([5, 2, 0, 3, 3, 1]))
    assert (starts, lengths) == ([0, 20, 2], [10, 3, 1])


def test_a_scattered_stores_reads_ask_for_the_bytes_read_only(tmp_path, monkeypatch):
    """POSIX_FADV_RANDOM on the file a scattered store reads (no read-ahead around each row)."""
    advised = []
    monkeypatch.setattr(store_module.os, "posix_fadvise", lambda fd, at, n, advice: advised.append(advice))
    store = write(tmp_path, [np.arange(100, dtype=SAMPLE_DTYPE)] * 3)
    store.gather(np.array([2, 0]))
    assert advised == []
    store_module.RowStore(store.path, SAMPLE_DTYPE, scattered=True).gather(np.array([2, 0]))
    assert advised == [os.POSIX_FADV_RANDOM]


def test_a_truncated_store_is_an_error_naming_its_file(tmp_path):
    store = write(tmp_path, [np.arange(100, dtype=SAMPLE_DTYPE)] * 3)
    os.truncate(store.path, store.nbytes - 8)
    with pytest.raises(OSError, match="s.bin"):
        store.gather(np.array([2]))


def test_sample_values_keep_the_order_of_hashes():
    h = np.sort(np.random.default_rng(0).integers(0, 2**52, 1000, dtype=np.uint64))
    v = sample_values(h)
    assert v.dtype == SAMPLE_DTYPE and (np.diff(v.astype(np.int64)) >= 0).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(hashes, min_size=1, max_size=6), st.sampled_from([1, 3, 8]))
@example([np.array([], SAMPLE_DTYPE), np.array([5], SAMPLE_DTYPE)], 1)  # an empty row; a row exactly m long
def test_cutoffs_of_whole_samples_come_from_the_index_without_reading_the_file(tmp_path_factory, rows, m):
    """A cut sample's cut-off is its last kept value; the store's index holds it, so the file
    (larger than the page cache at ten million documents) is not read for it."""
    store = write(tmp_path_factory.mktemp("c"), rows, m=m)
    store.read = None  # any read of the file fails
    sizes = np.array([len(r) for r in rows])
    want = [int(r[m - 1]) if len(r) > m else int(UNCUT) for r in rows]
    assert cutoffs(store, sizes).tolist() == want


@settings(max_examples=40, deadline=None)
@given(st.lists(hashes.filter(len), min_size=2, max_size=5), st.sampled_from([None, 3, 8]))
# The child's own cut-off value is in its sample (values <= T): 1/3 here, 1/2 if it were left out.
@example([np.array([1, 2, 3, 4], SAMPLE_DTYPE), np.array([1, 4, 5, 6], SAMPLE_DTYPE)], 3)
# Both cut at the same value, which they share.
@example([np.array([7, 8, 9, 10], SAMPLE_DTYPE), np.array([1, 8, 9, 11], SAMPLE_DTYPE)], 3)
def test_containment_is_exact_on_the_common_sample(tmp_path_factory, rows, m):
    store = write(tmp_path_factory.mktemp("v"), rows, m=m)
    sizes = np.array([len(r) for r in rows])
    cut = cutoffs(store, sizes)
    pairs = [(a, b) for a in range(len(rows)) for b in range(len(rows)) if a != b]
    child = np.array([a for a, _ in pairs])
    parent = np.array([b for _, b in pairs])
    got = containment(store, cut, child, parent)
    for (a, b), c in zip(pairs, got):
        t = min(cut[a], cut[b])
        sa = {int(h) for h in rows[a] if h <= t}
        sb = {int(h) for h in rows[b] if h <= t}
        want = len(sa & sb) / len(sa) if sa else 0.0
        assert c == want
        if m is None:
            assert c == len(set(rows[a].tolist()) & set(rows[b].tolist())) / len(rows[a])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 2), min_size=20, max_size=200, unique=True), st.integers(0, 2**32), st.sampled_from([4, 16]))
def test_screening_keeps_contained_children_and_exact_values(tmp_path_factory, universe, seed, head):
    rnd = np.random.default_rng(seed)
    big = np.sort(np.array(universe, SAMPLE_DTYPE))
    part = np.sort(rnd.choice(big, size=max(1, len(big) // 3), replace=False))
    other = np.sort(np.concatenate([part[: len(part) // 2], rnd.integers(0, 2**32 - 1, 30).astype(SAMPLE_DTYPE)]))
    rows = [big, part, np.unique(other)]
    store = write(tmp_path_factory.mktemp("h"), rows)
    heads = write(tmp_path_factory.mktemp("heads"), rows, m=head)  # as the signature pass writes them
    sizes = np.array([len(r) for r in rows])
    cut, head_cut = cutoffs(store, sizes), cutoffs(heads, sizes, head)
    assert head_cut.tolist() == cutoffs(store, sizes, head).tolist()
    child, parent = np.array([1, 2, 2]), np.array([0, 0, 1])
    exact = containment(store, cut, child, parent)
    screened = screened_containment(store, heads, cut, head_cut, child, parent, floor=0.5)
    assert screened[0] == exact[0] == 1.0  # a contained child is never screened out
    for e, s in zip(exact, screened):
        assert s == e or s < 0.5  # either verified exactly, or screened out below the floor
