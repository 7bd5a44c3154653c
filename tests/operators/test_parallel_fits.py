"""Global fits give the same result whether their pieces run one by one in the fit's process
(SERIAL) or on the local engine's worker processes (the executor the runner hands them), and
whatever the width they are told."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from curate.engine.rundir.layout import RunLayout
from curate.engine.local.engine import LocalExecutor
from curate.ops import SERIAL, Parallel, serial_map
from curate_operators.dedup import resolve
from curate_operators.dedup.containment import ContainmentDedup
from curate_operators.dedup.exact import ExactDedup
from curate_operators.dedup.minhash_dedup import MinhashDedup
from curate_operators.prune import kmeans, semdedup
from curate_operators.prune.density_prune import DensityPrune
from curate_operators.prune.embeddings import EmbeddingStore, spill
from curate_operators.prune.semantic_dedup import SemanticDedup
from tests.operators.prune.data import batches, clustered, grid_dataset

VOCAB = [f"w{i}" for i in range(300)]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """The runner's local executor with two worker processes, as a fit's Parallel."""
    executor = LocalExecutor(2, lambda *counts: None, RunLayout.at(tmp_path_factory.mktemp("run")))
    yield Parallel(executor.map, 2, threads=1)
    executor.close()


def corpus(seed: int, docs: int) -> list[str]:
    """Random documents, some of them near-copies, excerpts or re-cased copies of others."""
    rnd = random.Random(seed)
    texts: list[str] = []
    for _ in range(docs):
        if texts and rnd.random() < 0.5:
            words = rnd.choice(texts).split()
            i = rnd.randrange(len(words) + 1)
            words = {0: words[: i + 8], 1: words[:i] + ["edit"] + words[i + 1 :], 2: [w.upper() for w in words]}[
                rnd.randrange(3)]
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rnd.choice(VOCAB) for _ in range(rnd.randrange(0, 120))))
    return texts


def with_prepared(op, batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch as the runner hands it to `fit`: with the columns `prepare` made beside it."""
    for name, column in (op.prepare(batch) or {}).items():
        batch = batch.append_column(name, column)
    return batch


def fit_decisions(op, texts: list[str], batch_rows: int, workdir: Path, parallel: Parallel):
    """The fit's decisions: (_ord, detail) rows, sorted by _ord, and the removed count."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    table = pa.table({"text": texts, "_id": [f"d{i:04d}" for i in range(len(texts))],
                      "_ord": pa.array(np.arange(len(texts), dtype=np.int64))})
    batches = [with_prepared(op, b) for b in table.to_batches(max_chunksize=batch_rows)]
    state = op.fit(iter(batches), workdir, parallel)
    return pq.read_table(state.path).to_pylist(), state.removed


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), docs=st.integers(1, 60), batch_rows=st.integers(1, 25),
       op=st.sampled_from([ContainmentDedup, MinhashDedup]))
@example(seed=0, docs=1, batch_rows=1, op=ContainmentDedup)  # one piece
@example(seed=1, docs=60, batch_rows=1, op=MinhashDedup)  # a piece per row
def test_near_dedup_fit_is_the_same_on_worker_processes(pool, tmp_path, seed, docs, batch_rows, op):
    texts = corpus(seed, docs)
    expected = fit_decisions(op(), texts, batch_rows, tmp_path / "serial", SERIAL)
    assert fit_decisions(op(), texts, batch_rows, tmp_path / "pool", pool) == expected
    # A width that does not match the workers only changes how much is handed over at a time.
    assert fit_decisions(op(), texts, batch_rows, tmp_path / "wide", Parallel(serial_map, 3)) == expected


SPILL = 1e-9  # GB: a budget so small that every fit takes its on-disk path


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), docs=st.integers(1, 60), batch_rows=st.integers(1, 25),
       op=st.sampled_from([ContainmentDedup, MinhashDedup, ExactDedup]))
@example(seed=0, docs=1, batch_rows=1, op=MinhashDedup)  # one row: no edge to spill
@example(seed=1, docs=60, batch_rows=7, op=MinhashDedup)  # chains of near-copies
@example(seed=2, docs=60, batch_rows=60, op=ContainmentDedup)
def test_near_dedup_fit_is_the_same_in_memory_or_spilled(pool, tmp_path, seed, docs, batch_rows, op):
    texts = corpus(seed, docs)
    expected = fit_decisions(op(), texts, batch_rows, tmp_path / "memory", SERIAL)
    assert fit_decisions(op(), texts, batch_rows, tmp_path / "spilled", Parallel(memory_gb=SPILL)) == expected
    spilled_on_workers = Parallel(pool.map, pool.width, pool.threads, memory_gb=SPILL)
    assert fit_decisions(op(), texts, batch_rows, tmp_path / "both", spilled_on_workers) == expected


def test_minhash_past_its_budget_finds_components_on_disk(tmp_path, monkeypatch):
    """The budget decides: past it, the in-memory union-find is not used at all."""
    texts = corpus(3, 40)
    expected = fit_decisions(MinhashDedup(), texts, 9, tmp_path / "memory", SERIAL)

    def refused(*args):
        raise AssertionError("union_find over every row, past the budget")

    monkeypatch.setattr(resolve, "union_find", refused)
    assert fit_decisions(MinhashDedup(), texts, 9, tmp_path / "spilled", Parallel(memory_gb=SPILL)) == expected


def test_budget_is_shared_between_the_pieces_and_the_fit():
    assert Parallel(width=3, memory_gb=8).budget_gb(4.0) == 2.0
    assert Parallel(width=1, memory_gb=8).budget_gb(1.0) == 1.0  # the fit's own parameter, when smaller
    assert SERIAL.budget_gb(1.5) == 1.5  # no budget: the parameter


def test_near_dedup_pieces_find_the_duplicates(pool, tmp_path):
    """The pieces do real work: duplicates found on the workers are the planted ones."""
    a = " ".join(random.Random(5).choice(VOCAB) for _ in range(200))
    texts = [a, a.upper(), a[: len(a) // 2], " ".join(random.Random(6).choice(VOCAB) for _ in range(200))]
    rows, removed = fit_decisions(ContainmentDedup(), texts, 1, tmp_path, pool)
    assert [r["_ord"] for r in rows] == [1, 2] and removed == 2


def store_of(x: np.ndarray, workdir: Path) -> EmbeddingStore:
    workdir.mkdir(parents=True, exist_ok=True)
    return spill(batches(x, size=500), "_embedding", workdir, "test")


def test_kmeans_assignment_is_the_same_in_pieces(pool, tmp_path, monkeypatch):
    monkeypatch.setattr(kmeans, "PIECE_CHUNKS", 1)  # a piece per chunk: 3 pieces, the last one short
    x = clustered(0, 2 * kmeans.ASSIGN_CHUNK + 123, 8, 6)
    store = store_of(x, tmp_path)
    centroids = kmeans.train(store, 6, niter=5, seed=0, sample=2000)
    np.save(tmp_path / "centroids.npy", centroids)
    expected = kmeans.assign(x, centroids)
    assert len(expected) == len(x)
    assert np.array_equal(kmeans.assign(store, tmp_path / "centroids.npy", parallel=pool), expected)


@pytest.mark.parametrize("group_bytes", [1, 4096, 1 << 30])  # a group per cluster, a few, one
def test_semdedup_scores_are_the_same_in_pieces(pool, tmp_path, group_bytes):
    x, centroids, labels = grid_dataset(3, 900, 12, 40)
    store = store_of(x, tmp_path)
    expected = semdedup.scores(x, centroids, labels, group_bytes=group_bytes)
    got = semdedup.scores(store, centroids, labels, group_bytes=group_bytes, parallel=pool)
    assert np.array_equal(got.max_similarity, expected.max_similarity)
    assert np.array_equal(got.match, expected.match)
    assert (expected.match >= 0).sum() > 800  # every cluster of 2+ rows scored
    assert not list(tmp_path.glob("group-*.bin"))  # the group files are gone


def test_semdedup_similarities_do_not_depend_on_the_blas_threads(tmp_path):
    """OpenBLAS's float32 products differ in the last bits with its thread count: a fit in the
    run's process (all cores) and its pieces on workers (one core each) must still agree."""
    from threadpoolctl import threadpool_limits

    x = clustered(1, 3000, 16, 1, spread=0.05)  # one cluster: products large enough for threads
    details = []
    for threads in (1, 2):
        (tmp_path / str(threads)).mkdir()
        with threadpool_limits(threads, user_api="blas"):
            state = SemanticDedup(SemanticDedup.Params(k=1, eps=0.05)).fit(batches(x, size=400),
                                                                           tmp_path / str(threads), SERIAL)
        details.append(pq.read_table(state.decisions.path).to_pylist())
    assert details[0] == details[1] and details[0]


@pytest.mark.parametrize("op", [SemanticDedup(SemanticDedup.Params(k=7, eps=0.05)),
                                DensityPrune(DensityPrune.Params(k=7, fraction=0.5, columns=True))])
def test_prune_fit_is_the_same_on_worker_processes(pool, tmp_path, op):
    x = clustered(1, 3000, 16, 7, spread=0.05)
    states = []
    for name, parallel in (("serial", SERIAL), ("pool", pool)):
        (tmp_path / name).mkdir()
        state = op.fit(batches(x, size=400), tmp_path / name, parallel)
        state.info.pop("seconds")
        states.append((pq.read_table(state.decisions.path).to_pylist(), state.info,
                       np.load(tmp_path / name / "labels.npy").tolist() if state.rows_dir else None))
    assert states[0] == states[1]
    assert 0 < len(states[0][0]) < len(x)
