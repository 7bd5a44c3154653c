"""image_cluster_filter equals a brute-force transcription of DataComp's image-based filter
(apply_filter.py: threshold from a fraction, caption_filter, argmax of dot products to the pool
centroids, torch.isin of the target ids), written here and not shared with the operator, on
small random embeddings; the caption token count equals fastText's own tokenizer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from curate.errors import CurateError
from curate_operators.image.datacomp_caption import fasttext_token_counts
from curate_operators.image.image_cluster_filter import ImageClusterFilter, ImageClusterFilterParams

pytest.importorskip("faiss")
WORDS = ["a", "dog", "cat\n", "on", "the", "grass", "x", "photo of", "\tsky", "tree\r\n", ""]


def reference_keep(features, scores, texts, langs, centroids, targets, fraction, threshold):
    """load_uids_with_image_filter, transcribed: CLIP threshold (from a fraction: the descending
    scores' entry at int(N * f)), then caption_filter, then the nearest pool centroid of each
    sample must be the nearest centroid of some target embedding."""
    import fasttext

    n = len(features)
    keep = np.ones(n, dtype=bool)
    if fraction is not None:
        ordered = sorted(scores, reverse=True)
        threshold = ordered[min(int(n * fraction), n - 1)]
    if threshold is not None:
        keep &= np.array([s >= threshold for s in scores])
    caption = np.array([lang == "en" and len(t) > 5 and len(fasttext.tokenize(t)) > 1 for t, lang in zip(texts, langs)])
    keep &= caption
    target_ids = set(np.argmax(targets.astype(np.float64) @ centroids.astype(np.float64).T, axis=1).tolist())
    ids = np.argmax(features.astype(np.float64) @ centroids.astype(np.float64).T, axis=1)
    return keep & np.array([i in target_ids for i in ids])


def pool(seed: int, n: int, dim: int = 8):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, rng.integers(0, 4))) for _ in range(n)]
    langs = [rng.choice(["en", "en", "de"]) for _ in range(n)]
    scores = np.round(rng.uniform(0, 0.5, n), 2)  # rounded: ties at the threshold
    return x, texts, langs, scores


def batches(x, texts, langs, scores, size=7):
    out = []
    for start in range(0, len(x), size):
        part = x[start:start + size]
        out.append(pa.RecordBatch.from_pydict({
            "_embedding": pa.FixedSizeListArray.from_arrays(pa.array(part.ravel()), x.shape[1]),
            "caption": texts[start:start + size], "language": langs[start:start + size],
            "quality_clip_score": scores[start:start + size],
            "_ord": pa.array(np.arange(start, start + len(part)), pa.int64()),
            "_id": [f"r{i}" for i in range(start, start + len(part))]}))
    return out


def run(params: dict, data, workdir):
    op = ImageClusterFilter(ImageClusterFilterParams(**params), text_column="caption")
    state = op.fit(iter(batches(*data)), workdir)
    verdicts = [op.apply(b, state) for b in batches(*data)]
    return np.concatenate([v.keep for v in verdicts]), verdicts, state


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), k=st.integers(1, 12), targets=st.integers(1, 6),
       fraction=st.none() | st.floats(0.05, 1.0))
@example(seed=0, n=1, k=1, targets=1, fraction=1.0)
@example(seed=1, n=30, k=40, targets=3, fraction=None)  # more centroids than rows
def test_given_centroids_equal_the_reference(tmp_path_factory, seed, n, k, targets, fraction):
    """Centroids given as they are (norms differ: the argmax is of raw dot products)."""
    work = tmp_path_factory.mktemp("w")
    rng = np.random.default_rng(seed + 1)
    centroids = rng.normal(size=(k, 8)).astype(np.float32) * rng.uniform(0.5, 2.0, (k, 1)).astype(np.float32)
    target = rng.normal(size=(targets, 8)).astype(np.float32)
    np.save(work / "c.npy", centroids)
    np.save(work / "t.npy", target)
    data = pool(seed, n)
    keep, _, _ = run({"centroids": str(work / "c.npy"), "target_embeddings": str(work / "t.npy"),
                      "language_column": "language", "fraction": fraction}, data, work)
    x, texts, langs, scores = data
    assert keep.tolist() == reference_keep(x, scores, texts, langs, centroids, target, fraction, None).tolist()


def test_kmeans_centroids_then_the_reference_rule(tmp_path):
    """k-means on the pool (k capped at its rows), then the same rule on the centroids it found;
    targets given as Parquet; reasons in the reference's order."""
    data = pool(3, 80)
    x, texts, langs, scores = data
    target = x[:5] + 0.01  # near some pool rows, so some clusters are targets
    pq.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(target.ravel()), 8)}),
                   tmp_path / "t.parquet")
    keep, verdicts, state = run({"k": 6, "niter": 5, "target_embeddings": str(tmp_path / "t.parquet"),
                                 "target_column": "emb", "threshold": 0.2}, data, tmp_path)
    centroids = np.load(tmp_path / "centroids.npy")
    assert centroids.shape == (6, 8) and state.info["k"] == 6
    assert keep.tolist() == reference_keep(x, scores, texts, ["en"] * 80, centroids, target, None, 0.2).tolist()
    assert 0 < keep.sum() < 80
    reasons = [r for v in verdicts for r, k in zip(v.reason, v.keep) if not k]
    assert {"clip_score_low", "caption_rules", "image_cluster_not_target"} == set(reasons)
    assert state.info["rows_in_target_clusters"] >= keep.sum()
    few, _, _ = run({"k": 1000, "niter": 2, "target_embeddings": str(tmp_path / "t.parquet"), "target_column": "emb",
                     "caption_rules": False}, data, tmp_path)
    assert np.load(tmp_path / "centroids.npy").shape == (80, 8)  # capped at the rows


@given(st.text(alphabet=st.sampled_from(list("ab é\n\r\t\x0b\x0c\x00\u00a0\u2003")), max_size=20))
@example("cat\n")  # a line break is fastText's </s> token: two tokens
@example("a\u00a0b")  # a no-break space does not split
def test_token_count_equals_fasttext(text):
    fasttext = pytest.importorskip("fasttext")
    assert fasttext_token_counts(pa.array([text])).tolist() == [len(fasttext.tokenize(text))]


def test_bad_targets_and_centroids_are_clear_errors(tmp_path):
    data = pool(0, 10)
    np.save(tmp_path / "t3.npy", np.ones((2, 3), np.float32))
    with pytest.raises(CurateError, match=r"t3.npy: need an \(n, 8\) array"):
        run({"target_embeddings": str(tmp_path / "t3.npy")}, data, tmp_path)
    np.save(tmp_path / "t.npy", np.ones((2, 8), np.float32))
    np.save(tmp_path / "c.npy", np.ones((4, 5), np.float32))
    with pytest.raises(CurateError, match=r"centroids .*c.npy: need a finite \(k, 8\) array"):
        run({"target_embeddings": str(tmp_path / "t.npy"), "centroids": str(tmp_path / "c.npy")}, data, tmp_path)
    pq.write_table(pa.table({"other": [1, 2]}), tmp_path / "t.parquet")
    with pytest.raises(CurateError, match=r"t.parquet: no column '_embedding' \(target_column\)"):
        run({"target_embeddings": str(tmp_path / "t.parquet")}, data, tmp_path)
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(CurateError, match=r"junk.npy: cannot read it"):
        run({"target_embeddings": str(tmp_path / "junk.npy")}, data, tmp_path)


def test_empty_pool_keeps_nothing_and_fails_nothing(tmp_path):
    np.save(tmp_path / "t.npy", np.ones((2, 8), np.float32))
    op = ImageClusterFilter(ImageClusterFilterParams(target_embeddings=str(tmp_path / "t.npy"), fraction=0.3))
    state = op.fit(iter([]), tmp_path)
    assert state.info == {"rows": 0} and state.threshold is None
