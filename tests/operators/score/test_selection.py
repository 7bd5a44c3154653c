"""qdc_select: on a planted corpus, higher quality than random and more diversity than top-quality."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.score import metrics, selection
from curate_operators.score.qdc_select import QdcSelect, percentile_rank
from tests.operators.score.planted import planted

pytest.importorskip("faiss")


def batches(x, q, rows=128):
    for start in range(0, len(q), rows):
        v = x[start:start + rows]
        yield pa.record_batch({
            "_id": pa.array([str(i) for i in range(start, start + len(v))]),
            "_ord": pa.array(np.arange(start, start + len(v), dtype=np.int64)),
            "_embedding": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), x.shape[1]),
            "quality_score": pa.array(q[start:start + rows]),
        })


def select(tmp_path, x, q, **params):
    op = QdcSelect(QdcSelect.Params(quality={"quality_score": 1.0}, **params))
    state = op.fit(batches(x, q), tmp_path)
    keep = np.concatenate([op.apply(b, state).keep for b in batches(x, q)])
    return keep, state


@pytest.mark.parametrize("method", ["threshold", "facility_location"])
def test_selection_beats_random_on_quality_and_top_quality_on_vendi(tmp_path, method):
    x, q, kind = planted()
    size = 200
    keep, state = select(tmp_path, x, q, size=size, method=method, threshold=0.95)
    assert keep.sum() == size
    random = np.random.default_rng(0).choice(len(q), size, replace=False)
    top = np.argsort(-q)[:size]
    assert q[keep].mean() > q[random].mean()
    assert metrics.vendi(x[keep]) > metrics.vendi(x[top])
    assert (kind[keep] == "spam").mean() < 0.05 < (kind == "spam").mean()  # spam is a quarter of the input
    summary = state.summary()
    assert summary["selection"]["Q"]["quality_score"] == pytest.approx(q[keep].mean(), abs=1e-6)
    assert summary["input"]["rows"] == len(q) and summary["selection"]["rows"] == size


@pytest.mark.parametrize("method", ["threshold", "facility_location"])
def test_selection_never_holds_two_rows_above_the_threshold(tmp_path, method):
    x, q, _ = planted(seed=3)
    keep, state = select(tmp_path, x, q, size=150, threshold=0.7, method=method, quality_weight=5.0)
    chosen = x[keep]
    sims = chosen @ chosen.T
    np.fill_diagonal(sims, -1)
    assert sims.max() <= 0.7 + 1e-6
    assert state.summary().get("filled_below_threshold", 0) == 0


def test_threshold_greedy_fills_up_when_too_few_rows_pass():
    x = np.tile(np.eye(3, 4, dtype=np.float32), (4, 1))  # 3 distinct directions, 4 copies each
    order = np.arange(12)
    chosen, filled = selection.threshold_greedy(x, order, 5, threshold=0.5)
    assert filled == 2 and len(chosen) == 5 and len(set(chosen.tolist())) == 5
    assert chosen[:3].tolist() == [0, 1, 2]  # one of each direction first, then the best skipped
    assert chosen[3:].tolist() == [3, 4]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**16))
@example(1, 0)
def test_selection_size_is_exact_and_deterministic(size, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(60, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    score = rng.uniform(size=60)
    order = np.argsort(-score, kind="stable")
    a, _ = selection.threshold_greedy(x, order, size, 0.5)
    b, _ = selection.threshold_greedy(x, order, size, 0.5)
    assert len(a) == size == len(set(a.tolist())) and (a == b).all()
    f = selection.facility_location(x, score, size, 1.0, 30, seed=1)
    assert len(f) == size == len(set(f.tolist()))


def test_lazy_facility_location_equals_the_plain_greedy():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 6)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    score = rng.uniform(size=40)
    lazy = selection.facility_location(x, score, 10, 2.0, sample=40, seed=0)
    cover, plain = np.zeros(40), []
    for _ in range(10):
        gains = [np.maximum(np.maximum(x @ x[j], 0) - cover, 0).sum() / 40 + 2.0 * score[j] / 10 if j not in plain else -1
                 for j in range(40)]
        j = int(np.argmax(gains))
        plain.append(j)
        cover = np.maximum(cover, np.maximum(x @ x[j], 0))
    assert lazy.tolist() == plain


def test_negative_weight_prefers_low_values_and_ranks_combine_scales():
    r = percentile_rank(np.array([10.0, 1000.0, 1.0, np.nan]))
    assert r.tolist() == [0.5, 1.0, 0.0, 0.0]


def test_not_selected_rows_carry_their_score_and_rank(tmp_path):
    x, q, _ = planted(topics=5, per_topic=4, copies=5, spam=5)
    op = QdcSelect(QdcSelect.Params(quality={"quality_score": 1.0}, fraction=0.5))
    state = op.fit(batches(x, q), tmp_path)
    verdict = op.apply(next(batches(x, q)), state)
    dropped = np.flatnonzero(~verdict.keep)
    assert verdict.reason == "qdc_not_selected"
    assert verdict.detail[int(dropped[0])].as_py().startswith("score ")


def test_params_need_a_size_and_a_weight():
    with pytest.raises(ValueError, match="exactly one of size and fraction"):
        QdcSelect.Params(quality={"q": 1})
    with pytest.raises(ValueError, match="at least one quality or complexity"):
        QdcSelect.Params(size=3)
    with pytest.raises(ValueError, match="every weight is 0"):
        QdcSelect.Params(size=3, quality={"q": 0})


@pytest.mark.parametrize("method", ["threshold", "facility_location"])
def test_selection_reads_the_embeddings_in_pieces_and_decides_as_in_memory(tmp_path, monkeypatch, method):
    """The fit never holds the (n, d) matrix: no read of the spilled embeddings takes more than a
    chunk of rows, and the rows chosen are those the whole matrix in memory gives."""
    from curate_operators.prune.embeddings import EmbeddingStore, unit32

    x, q, _ = planted(topics=40, per_topic=50, copies=20, spam=400, seed=2)
    assert len(q) > 2 * selection.CHUNK
    reads = []
    real = EmbeddingStore.__getitem__

    def counted(self, index):
        out = real(self, index)
        reads.append(len(out))
        return out

    monkeypatch.setattr(EmbeddingStore, "__getitem__", counted)
    keep, _ = select(tmp_path, x, q, fraction=0.3, method=method, threshold=0.9, coverage_sample=300,
                     metrics_sample=300)
    assert 0 < max(reads) <= selection.CHUNK
    u = unit32(x)
    score = percentile_rank(q.astype(np.float64))
    size = int(np.ceil(0.3 * len(q)))
    if method == "threshold":
        chosen, _ = selection.threshold_greedy(u, np.lexsort((np.arange(len(q)), -score)), size, 0.9)
    else:
        chosen = selection.facility_location(u, score, size, 1.0, 300, 0, 0.9)
    assert np.flatnonzero(keep).tolist() == sorted(chosen.tolist())
