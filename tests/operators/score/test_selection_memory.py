"""qdc_select's selections in memory or past a tiny budget (taken rows spilled): the same rows."""

import heapq

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.ops import SERIAL, Parallel
from curate_operators.score import selection, taken
from curate_operators.score.nearest import TILE
from curate_operators.score.qdc_select import QdcSelect
from tests.operators.score.test_selection import batches

pytest.importorskip("faiss")

TINY = 1.0  # bytes: every whole tile of taken rows goes to the file


def rows(seed: int, n: int, d: int, copies: int) -> np.ndarray:
    """Random unit rows; the first `copies` near-copies of the last ones (the greedy below walks
    the rows backwards: their originals were taken long before, so they are in the file by then)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x[:copies] = x[n - copies:] + rng.normal(scale=0.05, size=(copies, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def at_a_similarity(x: np.ndarray, copies: int, seed: int) -> float:
    """The similarity of two rows (a row and its near-copy, where there are some) as faiss
    computes it: a threshold that ties with it exactly."""
    i, j = (0, len(x) - copies) if copies else np.random.default_rng(seed).integers(0, len(x), 2)
    return float(taken.largest(x[[i]], [x[[j]]])[0])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), ny=st.integers(0, 3 * TILE + 5), nq=st.integers(1, TILE))
@example(seed=0, ny=TILE, nq=19)  # below faiss's BLAS threshold (20 queries): its other kernel
@example(seed=1, ny=TILE + 1, nq=20)
@example(seed=2, ny=0, nq=3)
def test_tile_by_tile_search_has_the_bits_of_one_flat_index(seed, ny, nq):
    import faiss

    rng = np.random.default_rng(seed)
    y, q = rng.normal(size=(ny, 24)).astype(np.float32), rng.normal(size=(nq, 24)).astype(np.float32)
    index = faiss.IndexFlatIP(24)
    index.add(y)
    expected = index.search(q, 1)[0][:, 0] if ny else np.full(nq, -np.inf, np.float32)
    got = taken.largest(q, [y[t:t + TILE] for t in range(0, ny, TILE)])
    assert np.array_equal(got, expected)


def greedy(x, size, threshold, workdir=None):
    order = np.arange(len(x))[::-1].copy()  # not row order: the taken rows' order differs from x's
    budget = TINY if workdir else np.inf
    return selection.threshold_greedy(x, order, size, threshold, budget, workdir)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 3 * TILE), fraction=st.floats(0, 1), copies=st.integers(0, 300),
       threshold=st.one_of(st.floats(-0.2, 1.0), st.just("tie")))
@example(seed=0, n=1, fraction=1.0, copies=0, threshold=0.5)  # a single row
@example(seed=1, n=2 * TILE + 7, fraction=0.0, copies=0, threshold=0.5)  # size 0: nothing taken
@example(seed=2, n=2 * TILE + 7, fraction=1.0, copies=300, threshold="tie")  # size all: some filled in
@example(seed=3, n=3 * TILE, fraction=0.95, copies=300, threshold=0.9)  # copies found in the file
@example(seed=4, n=3 * TILE, fraction=0.9, copies=0, threshold=-0.2)  # one row taken, the rest filled in
def test_the_greedy_takes_the_same_rows_in_memory_or_spilled(tmp_path_factory, seed, n, fraction, copies, threshold):
    copies = min(copies, n // 2)
    x = rows(seed, n, 16, copies)
    threshold = at_a_similarity(x, copies, seed) if threshold == "tie" else threshold
    size = int(fraction * n)
    expected = greedy(x, size, threshold)
    workdir = tmp_path_factory.mktemp("greedy")
    got = greedy(x, size, threshold, workdir)
    assert np.array_equal(got[0], expected[0]) and got[1] == expected[1]
    assert len(got[0]) == size and not list(workdir.iterdir())  # the taken rows' file is gone


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 2 * TILE + 100), fraction=st.floats(0.01, 1),
       copies=st.integers(0, 300), threshold=st.one_of(st.floats(0.0, 1.0), st.just("tie")))
@example(seed=0, n=1, fraction=1.0, copies=0, threshold=0.5)
@example(seed=1, n=2 * TILE + 100, fraction=1.0, copies=300, threshold="tie")  # size all: near-copies fill in
@example(seed=2, n=2 * TILE + 100, fraction=0.9, copies=300, threshold=0.9)  # near-copies found in the file
def test_facility_location_chooses_the_same_rows_in_memory_or_spilled(tmp_path_factory, seed, n, fraction, copies,
                                                                        threshold):
    copies = min(copies, n // 2)
    x = rows(seed, n, 16, copies)
    threshold = at_a_similarity(x, copies, seed) if threshold == "tie" else threshold
    score = np.random.default_rng(seed).uniform(size=n)
    size = max(1, int(fraction * n))
    expected = selection.facility_location(x, score, size, 1.0, 40, seed, threshold)
    workdir = tmp_path_factory.mktemp("facility")
    got = selection.facility_location(x, score, size, 1.0, 40, seed, threshold, TINY, workdir)
    assert np.array_equal(got, expected) and len(got) == size and not list(workdir.iterdir())


def test_past_the_budget_the_taken_rows_held_are_a_window_not_the_selection(tmp_path, monkeypatch):
    x = rows(5, 4 * TILE, 16, 0)
    held, spilled = [], []
    real = taken.Taken.add

    def counted(self, v):
        real(self, v)
        held.append(TILE * len(self.full) + self.count)
        spilled.append(self.on_disk)

    monkeypatch.setattr(taken.Taken, "add", counted)
    chosen, _ = greedy(x, 3 * TILE, 0.99, tmp_path)
    assert max(spilled) >= 2 * TILE  # most of them went to the file ...
    assert max(held) < TILE + selection.CHUNK  # ... and at most a tile and a chunk stayed
    assert np.array_equal(chosen, greedy(x, 3 * TILE, 0.99)[0])


def test_a_taken_rows_file_left_by_a_crashed_fit_is_not_read(tmp_path):
    x = rows(6, 3 * TILE, 16, 300)
    (tmp_path / "taken.f32").write_bytes(np.ones((TILE, 16), np.float32).tobytes())  # above the threshold with many rows here
    assert np.array_equal(greedy(x, 3 * TILE - 10, 0.9, tmp_path)[0], greedy(x, 3 * TILE - 10, 0.9)[0])


@settings(max_examples=30, deadline=None)
@given(gains=st.lists(st.integers(0, 5), min_size=1, max_size=40), drops=st.lists(st.integers(0, 5), max_size=60))
@example(gains=[3, 3, 3], drops=[0, 0, 0])  # ties: the lower row first, pushed back or not
def test_the_lazy_queue_pops_as_one_heapq_of_every_row(gains, drops):
    """Pops, each row pushed back (while drops last) with a gain lower by the drop, as a heap would."""
    queue = selection.LazyQueue(np.asarray(gains, np.float64) / 2)
    heap = [(-g / 2, j) for j, g in enumerate(gains)]
    heapq.heapify(heap)
    drops = list(drops)
    while heap:
        assert queue and queue.best() == -heap[0][0]
        (g, j), row = heapq.heappop(heap), queue.pop()
        assert row == j
        if drops and heap:
            gain = -g - drops.pop() / 2
            heapq.heappush(heap, (-gain, j))
            queue.push(gain, row)
    assert not queue


@pytest.mark.parametrize("method", ["threshold", "facility_location"])
def test_qdc_select_past_a_tiny_memory_gb_selects_the_same_rows(tmp_path, monkeypatch, method):
    x = rows(4, 3 * TILE, 16, 300)
    q = np.random.default_rng(4).uniform(size=len(x))
    params = QdcSelect.Params(quality={"quality_score": 1.0}, fraction=0.8, method=method, threshold=0.9,
                              coverage_sample=200, metrics_sample=200)
    on_disk = []
    real = taken.Taken.settle

    def settle(self):
        real(self)
        on_disk.append(self.on_disk)

    monkeypatch.setattr(taken.Taken, "settle", settle)
    found = {}
    for name, parallel in [("memory", SERIAL), ("spilled", Parallel(memory_gb=1e-9))]:
        (tmp_path / name).mkdir()
        on_disk.clear()
        state = QdcSelect(params).fit(batches(x, q), tmp_path / name, parallel)
        found[name] = [np.load(f).tobytes() for f in state.files()]
        assert (max(on_disk) > 0) == (name == "spilled")  # the recipe's budget reaches the selection
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["scores.npy", "selected.npy"]
    assert found["spilled"] == found["memory"]
