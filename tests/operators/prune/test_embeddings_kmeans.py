"""The spilled embedding store (validation, memory mapping) and the seeded k-means."""

import numpy as np
import pyarrow as pa
import pytest

from curate.errors import CurateError
from curate_operators.prune import kmeans
from curate_operators.prune.embeddings import embedding_matrix, ids_at, spill
from tests.operators.prune.data import batches, clustered


def test_spill_keeps_dtype_order_and_ids(tmp_path):
    x = clustered(0, 2500, 24, centers=5, dtype=np.float16)
    store = spill(batches(x, size=700), "_embedding", tmp_path, "semantic_dedup", ids=True)
    assert store.shape == (2500, 24) and store.dtype == np.float16
    np.testing.assert_array_equal(store[:], x)
    np.testing.assert_array_equal(store[np.array([2499, 3, 700])], x[[2499, 3, 700]])
    assert ids_at(tmp_path, np.array([5, 2400])).to_pylist() == ["r5", "r2400"]
    store.discard()
    assert not (tmp_path / "embeddings.bin").exists()


def resident_kb(path) -> int:
    """Resident KB of this process's mapping of `path` (/proc/self/smaps)."""
    lines = open("/proc/self/smaps").read().split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.endswith(str(path)))
    return int(next(ln for ln in lines[at:] if ln.startswith("Rss:")).split()[1])


def test_store_hands_pages_back(tmp_path):
    x = clustered(0, 40000, 128, centers=5)  # 20 MB
    store = spill(batches(x, size=5000), "_embedding", tmp_path, "s")
    store.budget = 1 << 40
    np.testing.assert_array_equal(store[:], x)
    assert resident_kb(store.path) > 19000
    store.release()
    assert resident_kb(store.path) == 0
    store.budget = 4 << 20  # reads stay within the budget
    np.testing.assert_array_equal(store[:], x)
    assert resident_kb(store.path) <= 4096 + 2048  # + the folio a piece ends in
    rows = np.random.default_rng(0).choice(40000, 1000, replace=False)  # a scattered gather
    np.testing.assert_array_equal(store[rows], x[rows])
    assert resident_kb(store.path) <= 4096 + 2048


@pytest.mark.parametrize("column, problem", [
    (pa.array([[0.1, 0.2], [0.3, 0.4, 0.5]], pa.list_(pa.float32())), "size 3 at row 1 .* same size"),
    (pa.array([1.0, 2.0], pa.float32()), "fixed_size_list"),
    (pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, 4], pa.int32()), 2), "fixed_size_list"),
    (pa.FixedSizeListArray.from_arrays(pa.array([0.1, float("nan"), 0.3, 0.4], pa.float32()), 2), "NaN"),
    (pa.FixedSizeListArray.from_arrays(pa.array([0.1, None, 0.3, 0.4], pa.float16()), 2), "null"),
    (pa.array([[0.1, 0.2], None], pa.list_(pa.float32(), 2)), "null at row 1"),
])
def test_bad_embedding_columns_name_the_step_and_column(column, problem):
    batch = pa.record_batch({"_id": ["a", "b"], "_embedding": column})
    with pytest.raises(CurateError, match=rf"density_prune: column '_embedding'.*{problem}"):
        embedding_matrix(batch, "_embedding", "density_prune")


def test_a_list_of_floats_of_one_size_reads_as_its_fixed_size_list():
    listed = pa.record_batch({"_embedding": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32()))})
    fixed = pa.record_batch({"_embedding": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32(), 2))})
    np.testing.assert_array_equal(embedding_matrix(listed, "_embedding", "s"), embedding_matrix(fixed, "_embedding", "s"))
    sliced = pa.record_batch({"_embedding": pa.array([[9.0], [0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float64()))}).slice(1)
    np.testing.assert_allclose(embedding_matrix(sliced, "_embedding", "s"), [[0.1, 0.2], [0.3, 0.4]], rtol=1e-6)


def test_missing_column_and_changing_size_are_errors(tmp_path):
    with pytest.raises(CurateError, match="semantic_dedup: column 'emb' .* is not there"):
        spill(batches(clustered(0, 10, 4, 2)), "emb", tmp_path, "semantic_dedup")
    two = batches(clustered(0, 10, 4, 2), size=5)
    two[1] = batches(clustered(0, 10, 6, 2), size=5)[1]
    with pytest.raises(CurateError, match="size 6 at row 5 and of size 4"):
        spill(two, "_embedding", tmp_path, "semantic_dedup")


def test_kmeans_is_seeded_and_deterministic(tmp_path):
    x = clustered(0, 20000, 32, centers=30, dtype=np.float16)
    runs = [kmeans.train(x, 30, niter=10, seed=7, sample=5000, threads=2) for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_allclose(np.linalg.norm(runs[0], axis=1), 1, atol=1e-5)  # spherical
    other = kmeans.train(x, 30, niter=10, seed=8, sample=5000, threads=2)
    assert not np.array_equal(runs[0], other)
    labels = kmeans.assign(x, runs[0], threads=2)
    assert labels.dtype == np.int32 and labels.shape == (20000,)
    best = np.argmax(x.astype(np.float32) @ runs[0].T, axis=1)
    assert (labels == best).mean() > 0.999  # nearest by cosine (float rounding may split exact ties)


def test_one_cluster_and_as_many_clusters_as_rows():
    x = clustered(0, 50, 8, centers=3)
    assert kmeans.assign(x, kmeans.train(x, 1, niter=5, seed=0, sample=50)).tolist() == [0] * 50
    c = kmeans.train(x, 50, niter=5, seed=0, sample=50)
    assert c.shape == (50, 8)
    with pytest.raises(ValueError):
        kmeans.train(x, 51, niter=5, seed=0, sample=50)


def test_train_rows_default():
    assert kmeans.train_rows(1_000_000, 1000, None) == 50_000
    assert kmeans.train_rows(1_000_000, 5000, None) == 200_000
    assert kmeans.train_rows(30_000, 1000, None) == 30_000
    assert kmeans.train_rows(1_000_000, 1000, 123) == 123
