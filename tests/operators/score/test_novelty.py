"""novelty: 1 - the largest (or mean) cosine similarity to the k nearest other rows, as brute force."""

import numpy as np
import pytest

from operators.score.novelty import Novelty, NoveltyParams, nearest_novelty

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
