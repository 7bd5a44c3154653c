import numpy as np
from hypothesis import given, settings, strategies as st

from operators.dedup.store import RowStoreWriter, ranges
from operators.dedup.verify import containment, cutoffs, screened_containment

hashes = st.lists(st.integers(0, 2**64 - 1), max_size=40, unique=True).map(lambda v: np.sort(np.array(v, np.uint64)))


def write(tmp_path, rows, m=None, order=None):
    w = RowStoreWriter(tmp_path / "s.bin")
    order = order if order is not None else list(range(len(rows)))
    for o in order:  # rows arrive in any order
        r = rows[o] if m is None else rows[o][:m]
        w.append(np.array([o]), r, np.array([0, len(r)]))
    return w.close()


def test_ranges():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]


@settings(max_examples=30, deadline=None)
@given(st.lists(hashes, min_size=1, max_size=6), st.randoms())
def test_gather_round_trip(tmp_path_factory, rows, rnd):
    order = list(range(len(rows)))
    rnd.shuffle(order)
    store = write(tmp_path_factory.mktemp("s"), rows, order=order)
    ask = np.array([rnd.randrange(len(rows)) for _ in range(8)])
    values, offsets = store.gather(ask)
    for i, o in enumerate(ask):
        assert values[offsets[i] : offsets[i + 1]].tolist() == rows[o].tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(hashes.filter(len), min_size=2, max_size=5), st.sampled_from([None, 3, 8]))
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
@given(st.lists(st.integers(0, 2**64 - 1), min_size=20, max_size=200, unique=True), st.integers(0, 2**32), st.sampled_from([4, 16]))
def test_screening_keeps_contained_children_and_exact_values(tmp_path_factory, universe, seed, head):
    rnd = np.random.default_rng(seed)
    big = np.sort(np.array(universe, np.uint64))
    part = np.sort(rnd.choice(big, size=max(1, len(big) // 3), replace=False))
    other = np.sort(np.concatenate([part[: len(part) // 2], rnd.integers(0, 2**63, 30).astype(np.uint64)]))
    rows = [big, part, np.unique(other)]
    store = write(tmp_path_factory.mktemp("h"), rows)
    sizes = np.array([len(r) for r in rows])
    cut, head_cut = cutoffs(store, sizes), cutoffs(store, sizes, head)
    child, parent = np.array([1, 2, 2]), np.array([0, 0, 1])
    exact = containment(store, cut, child, parent)
    screened = screened_containment(store, cut, head_cut, child, parent, head, floor=0.5)
    assert screened[0] == exact[0] == 1.0  # a contained child is never screened out
    for e, s in zip(exact, screened):
        assert s == e or s < 0.5  # either verified exactly, or screened out below the floor
