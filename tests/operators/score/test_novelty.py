"""novelty: 1 - the largest (or mean) cosine similarity to the k nearest other rows, as brute force."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.ops import SERIAL, Parallel
from curate_operators.score import nearest
from curate_operators.score.novelty import Novelty, NoveltyParams, nearest_novelty

SPILL = 1e-9  # GB: a budget so small that every fit takes its on-disk path

pytest.importorskip("faiss")


def brute(x, k, reduce):
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = u @ u.T
    np.fill_diagonal(sims, -np.inf)
    top = -np.sort(-sims, axis=1)[:, :k]
    return 1 - (top.max(axis=1) if reduce == "max" else top.mean(axis=1))


@pytest.mark.parametrize("k,reduce", [(1, "max"), (5, "mean"), (3, "max")])
def test_exact_novelty_equals_brute_force(k, reduce):
    x = np.random.default_rng(k).normal(size=(300, 16)).astype(np.float32)
    x[7] = x[3]  # an exact copy: novelty 0 for both, whatever order ties come in
    got = nearest_novelty(x, NoveltyParams(k=k, reduce=reduce), seed=0)
    assert np.allclose(got, brute(x, k, reduce), atol=1e-5)
    if reduce == "max":
        assert got[3] == pytest.approx(0, abs=1e-5) and got[7] == pytest.approx(0, abs=1e-5)


def test_ivf_novelty_is_close_to_exact_above_exact_rows():
    x = np.random.default_rng(0).normal(size=(2000, 8)).astype(np.float32)
    approx = nearest_novelty(x, NoveltyParams(exact_rows=100, nprobe=64), seed=0)
    assert np.abs(approx - brute(x, 1, "max")).mean() < 0.01


def test_a_single_row_is_fully_novel(tmp_path):
    assert nearest_novelty(np.ones((1, 4), np.float32), NoveltyParams(), 0).tolist() == [1.0]
    assert Novelty().provides == ("diversity_novelty",)


def test_a_fit_over_no_rows_is_empty(tmp_path):
    state = Novelty(Novelty.Params()).fit(iter([]), tmp_path)  # every row removed before the step
    assert len(np.load(state.path)) == 0


def embedded(x: np.ndarray, rows: int = 97):
    """x as the fit's batches: _id, _ord and the embedding column."""
    import pyarrow as pa

    for start in range(0, len(x), rows):
        v = x[start:start + rows]
        yield pa.record_batch({"_id": pa.array([f"r{i}" for i in range(start, start + len(v))]),
                               "_ord": pa.array(np.arange(start, start + len(v), dtype=np.int64)),
                               "_embedding": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), x.shape[1])})


def fitted(workdir, x, params, parallel):
    workdir.mkdir(exist_ok=True)
    state = Novelty(params).fit(embedded(x), workdir, parallel)
    return np.load(state.path)


def points(seed: int, n: int, d: int, copies: int) -> np.ndarray:
    """Random rows in float16, the first `copies` of them repeated (ties at similarity 1)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float16)
    x[n - copies:] = x[:copies]
    return x


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 400), k=st.integers(1, 6), reduce=st.sampled_from(["max", "mean"]),
       exact=st.booleans(), copies=st.integers(0, 20))
@example(seed=0, n=1, k=1, reduce="max", exact=True, copies=0)
@example(seed=1, n=2, k=5, reduce="mean", exact=False, copies=1)  # k capped at n - 1; IVF of two rows
@example(seed=2, n=400, k=3, reduce="mean", exact=False, copies=20)  # copies tie at similarity 1
def test_novelty_is_the_same_in_memory_or_spilled(tmp_path_factory, seed, n, k, reduce, exact, copies):
    x = points(seed, n, 8, min(copies, n // 2))
    params = Novelty.Params(k=k, reduce=reduce, exact_rows=n if exact else 1, nprobe=3)
    expected = fitted(tmp_path_factory.mktemp("memory"), x, params, SERIAL)
    spilled = tmp_path_factory.mktemp("spilled")
    assert np.array_equal(fitted(spilled, x, params, Parallel(memory_gb=SPILL)), expected)
    assert [p.name for p in spilled.iterdir()] == ["novelty.npy"]  # the pieces' files are gone


def test_exact_blocks_of_whole_faiss_tiles_give_the_same_bits(tmp_path):
    """Over several blocks: a similarity computed on another BLAS tile could differ in its last bits."""
    x = points(3, 2 * nearest.TILE + 300, 384, 0)
    params = Novelty.Params(k=1)
    assert np.array_equal(fitted(tmp_path / "s", x, params, Parallel(memory_gb=SPILL)),
                          fitted(tmp_path / "m", x, params, SERIAL))


@pytest.mark.parametrize("exact_rows", [10_000, 10])  # flat, IVF
def test_past_its_budget_novelty_never_builds_the_whole_index(tmp_path, monkeypatch, exact_rows):
    x = points(4, 300, 8, 5)
    params = Novelty.Params(k=2, exact_rows=exact_rows)
    expected = fitted(tmp_path / "m", x, params, SERIAL)

    def refused(*args):
        raise AssertionError("an index of every row, past the budget")

    monkeypatch.setattr(nearest, "in_memory", refused)
    assert np.array_equal(fitted(tmp_path / "s", x, params, Parallel(memory_gb=SPILL)), expected)


def test_groups_of_several_lists_gathered_across_batches_give_the_same_scores(tmp_path, monkeypatch):
    """IVF in groups of a few lists each, every group's rows gathered from several batches of x."""
    x = points(5, 400, 8, 10)
    params = Novelty.Params(k=3, exact_rows=1, nprobe=4)
    expected = fitted(tmp_path / "m", x, params, SERIAL)
    monkeypatch.setattr(nearest, "ADD_BATCH", 37)
    group_bytes = 120 * 3 * (4 * 8 + 8)  # about 120 rows a group (nearest.ivf_in_groups)
    assert np.array_equal(fitted(tmp_path / "s", x, params, Parallel(memory_gb=2 * group_bytes / 2**30)), expected)
