"""minhash_dedup: the Jaccard baseline removes near-copies, keeps one per cluster, misses excerpts."""

import json
import random

from curate_operators.dedup import minhash_dedup
from curate_operators.dedup.minhash_dedup import MinhashDedup
from tests.operators.dedup.helpers import run

VOCAB = [f"w{i}" for i in range(400)]


def doc(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    return [rnd.choice(VOCAB) for _ in range(n)]


def test_near_copies_go_excerpts_and_unrelated_stay(tmp_path):
    a = doc(1, 400)
    copy = a[:200] + ["edit"] + a[201:]
    excerpt = a[100:180]  # contained in a, but Jaccard ~0.2: the baseline keeps it
    texts = [" ".join(a), " ".join(copy).upper(), " ".join(excerpt), " ".join(doc(2, 300))]
    verdict, state = run(MinhashDedup(), texts, tmp_path)
    assert verdict.keep.tolist() == [True, False, True, True]
    detail = json.loads(verdict.detail[1].as_py())
    assert detail["duplicate_of"] == "id0000" and detail["jaccard_estimate"] > 0.8
    assert verdict.reason == "near_duplicate" and state.removed == 1


def test_cluster_keeps_the_preferred_member(tmp_path):
    a = doc(3, 300)
    variants = [" ".join(a[:i] + ["x"] + a[i + 1 :]) for i in (10, 150, 290)]
    texts = variants + [" ".join(doc(4, 300))]
    verdict, _ = run(MinhashDedup(MinhashDedup.Params(prefer="q")), texts, tmp_path, extra={"q": [0.2, 0.9, 0.5, 0.0]})
    assert verdict.keep.tolist() == [False, True, False, True]


def test_deterministic(tmp_path):
    texts = [" ".join(doc(s, 200)) for s in range(20)]
    texts += [t.upper() for t in texts[:8]]
    v1, _ = run(MinhashDedup(MinhashDedup.Params(workers=1)), texts, tmp_path / "a", batch_rows=3)
    v2, _ = run(MinhashDedup(MinhashDedup.Params(workers=2)), texts, tmp_path / "b", batch_rows=50)
    assert v1.keep.tolist() == v2.keep.tolist() and v1.detail.to_pylist() == v2.detail.to_pylist()
    assert (~v1.keep).sum() == 8 and v1.keep[:20].all()


def test_signatures_gathered_in_small_chunks_give_the_same_decisions(tmp_path, monkeypatch):
    """The Jaccard estimates of the trace are made a bounded chunk of duplicates at a time."""
    texts = [" ".join(doc(s, 200)) for s in range(20)]
    texts += [t.upper() for t in texts[:8]] + [t.lower() + " x" for t in texts[:5]]
    whole, _ = run(MinhashDedup(), texts, tmp_path / "a")
    monkeypatch.setattr(minhash_dedup, "SIGNATURE_CHUNK_BYTES", 3 * 112 * 8)  # 3 rows a chunk
    chunked, _ = run(MinhashDedup(), texts, tmp_path / "b")
    assert len(list((tmp_path / "b").rglob("jaccards/part-*.parquet"))) == 5  # 13 duplicates, 3 at a time
    assert chunked.keep.tolist() == whole.keep.tolist() and chunked.detail.to_pylist() == whole.detail.to_pylist()
    assert (~whole.keep).sum() == 13


def test_corpus_without_shingles(tmp_path):
    verdict, state = run(MinhashDedup(), ["", None, "  "], tmp_path)
    assert verdict.keep.all() and state.removed == 0


def test_docs_rows_are_one_file_of_bounded_row_groups_however_many_batches(tmp_path, monkeypatch):
    """The fit's docs rows (read by its duckdb joins in the driver) are one file, DOCS_GROUP_ROWS
    rows a row group, not a file or a row group per batch: duckdb holds state per file and per
    row group it reads, so the joins' memory grew with the batches (the shards of small inputs)."""
    import pyarrow.parquet as pq

    from curate_operators.dedup import signature_pass

    texts = [" ".join(doc(s, 200)) for s in range(20)]
    texts += [t.upper() for t in texts[:8]]
    whole, _ = run(MinhashDedup(), texts, tmp_path / "a", batch_rows=1)  # 28 batches
    docs = pq.ParquetFile(tmp_path / "a" / "docs.parquet")
    assert docs.metadata.num_row_groups == 1 and docs.metadata.num_rows == 28
    monkeypatch.setattr(signature_pass, "DOCS_GROUP_ROWS", 5)
    grouped, _ = run(MinhashDedup(), texts, tmp_path / "b", batch_rows=3)
    docs = pq.ParquetFile(tmp_path / "b" / "docs.parquet")
    sizes = [docs.metadata.row_group(i).num_rows for i in range(docs.metadata.num_row_groups)]
    assert sizes == [5, 5, 5, 5, 5, 3]
    assert docs.read().column("_ord").to_pylist() == list(range(28))  # in batch order
    assert not list(tmp_path.rglob("docs/*.parquet"))
    assert grouped.keep.tolist() == whole.keep.tolist() and grouped.detail.to_pylist() == whole.detail.to_pylist()
    assert (~whole.keep).sum() == 8
