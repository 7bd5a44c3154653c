"""Run-level dataset metrics: KMV distinct counts against exact ones, the bottom-k sample, and
merging that gives the same summary whatever the split of the rows into tasks."""

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings, strategies as st

from curate.errors import InputError
from curate_operators.score import metrics
from curate_operators.score.run_metrics import NGRAMS, Side, Sketch, smallest_distinct


def corpus(n: int, seed: int = 0, vocab: int = 40) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(f"w{j}" for j in rng.integers(0, vocab, rng.integers(0, 30))) for _ in range(n)]


def batch(texts: list[str], ids: list[str] | None = None, embeddings: np.ndarray | None = None) -> pa.RecordBatch:
    columns = {"_id": pa.array(ids or [f"r{i}" for i in range(len(texts))], pa.string()),
               "text": pa.array(texts, pa.string())}
    if embeddings is not None:
        columns["_embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(embeddings.ravel(), pa.float32()),
                                                                  embeddings.shape[1])
    return pa.RecordBatch.from_pydict(columns)


def side(sample: int = 50, sketch: int = 64, seed: int = 0) -> Side:
    return Side(sample=sample, sketch=sketch, seed=seed, text_column="text", embedding_column="_embedding")


def exact_ngrams(texts: list[str], n: int) -> tuple[int, int]:
    grams = [tuple(w[i:i + n]) for t in texts for w in [t.split()] for i in range(len(w) - n + 1)]
    return len(set(grams)), len(grams)


def figures(s: Side) -> dict:
    return s.measure(clusters=3, bleu_sample=10)


@given(st.lists(st.integers(0, 300), max_size=400), st.integers(1, 40))
@example([], 1)
@example([5, 5, 5, 5], 1)
@example(list(range(100)), 16)
def test_smallest_distinct_is_the_k_smallest_of_the_set(values, k):
    v = np.array(values, np.uint64)
    assert smallest_distinct(v, k).tolist() == sorted(set(values))[:k]


def test_the_sketch_counts_exactly_up_to_k_distinct_ngrams():
    texts = corpus(60, vocab=12)
    s = side(sketch=4096)
    s.observe(batch(texts))
    out = figures(s)
    for n in NGRAMS:
        distinct, total = exact_ngrams(texts, n)
        assert distinct < 4096
        assert out["ngrams"][str(n)] == total
        assert out["distinct_ngrams"][str(n)] == distinct
        assert out[f"distinct_{n}"] == pytest.approx(metrics.distinct_n(texts, n), abs=1e-6)


@pytest.mark.parametrize("k", [64, 256, 1024])
def test_the_sketch_estimate_is_within_its_error_bound(k):
    """Over 40 sets of random hashes, far more than k distinct each, the RMS relative error stays
    near the bound 1/sqrt(k - 2); a sketch that kept the wrong values would miss by far more."""
    rng = np.random.default_rng(k)
    errors = []
    for _ in range(40):
        distinct = int(rng.integers(20 * k, 60 * k))
        values = rng.integers(0, 2**63, distinct, dtype=np.uint64)
        sketch = Sketch(k)
        for part in np.array_split(np.concatenate([values, values[:distinct // 3]]), 5):  # repeats too
            sketch.add(part)
        errors.append(sketch.estimate() / distinct - 1)
    bound = 1 / np.sqrt(k - 2)
    assert np.sqrt(np.mean(np.square(errors))) < 1.5 * bound
    assert abs(np.mean(errors)) < 0.5 * bound  # unbiased


def test_distinct_n_of_real_ngrams_is_within_the_bound():
    """Text n-grams (polynomial hashes of word hashes, then mixed) behave as the random hashes do."""
    texts = corpus(3000, seed=1, vocab=400)
    s = side(sketch=512)
    for part in range(0, 3000, 700):
        s.observe(batch(texts[part:part + 700], [f"r{i}" for i in range(part, min(part + 700, 3000))]))
    out = figures(s)
    for n in NGRAMS:
        distinct, total = exact_ngrams(texts, n)
        assert out["ngrams"][str(n)] == total
        if n == 1:  # 400 words: fewer than k, counted exactly
            assert out["distinct_ngrams"]["1"] == distinct == 400
        else:
            assert distinct > 4 * 512
            assert abs(out["distinct_ngrams"][str(n)] / distinct - 1) < 4 / np.sqrt(510)


def one_pass(texts: list[str], ids: list[str], embeddings=None) -> Side:
    s = side(sample=20, sketch=32)
    s.observe(batch(texts, ids, embeddings))
    return s


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a b c", "a b", "c d e f", "", "x y z w v", "b c d"]) | st.text(" ab", max_size=12),
                min_size=0, max_size=60),
       st.lists(st.integers(1, 10), min_size=1, max_size=8), st.data())
@example(texts=[], cuts=[1], data=None)
@example(texts=["a b c d e"] * 3, cuts=[1, 1, 1], data=None)
def test_merged_summaries_do_not_depend_on_the_split_into_tasks(texts, cuts, data):
    ids = [f"id{i % 25}" for i in range(len(texts))]  # some _ids repeat: ties are settled by text
    whole = one_pass(texts, ids)
    tasks, start = [], 0
    for c in cuts * (len(texts) // max(sum(cuts), 1) + 1):
        if start >= len(texts):
            break
        tasks.append(one_pass(texts[start:start + c], ids[start:start + c]))
        start += c
    if data is not None:  # tasks finish in any order
        tasks = data.draw(st.permutations(tasks))
    merged = side(sample=20, sketch=32)
    for t in tasks:
        merged.merge(pickle.loads(pickle.dumps(t)))  # as the runner reads them from the task's file
    assert figures(merged) == figures(whole)
    assert all((merged.sketches[n].values == whole.sketches[n].values).all() for n in NGRAMS)
    assert (merged.sample or pa.table({})).equals(whole.sample or pa.table({}))


def test_the_sample_is_the_bottom_k_by_id_hash_so_input_and_output_samples_agree():
    texts = corpus(500, seed=2)
    ids = [f"doc-{i}" for i in range(500)]
    read = one_pass(texts, ids)
    kept = [i for i in range(500) if i % 3]  # what a run kept
    written = one_pass([texts[i] for i in kept], [ids[i] for i in kept])
    in_sample = set(read.sample.column("_id").to_pylist())
    out_sample = set(written.sample.column("_id").to_pylist())
    assert len(in_sample) == len(out_sample) == 20
    assert in_sample & {ids[i] for i in kept} <= out_sample  # coordinated samples
    other_seed = side(sample=20, sketch=32, seed=7)
    other_seed.observe(batch(texts, ids))
    assert set(other_seed.sample.column("_id").to_pylist()) != in_sample


def test_the_sample_metrics_are_those_of_metrics_summarize_on_the_sample():
    rng = np.random.default_rng(3)
    texts = corpus(80, seed=3)
    x = rng.normal(size=(80, 8)).astype(np.float32)
    s = side(sample=30)
    s.observe(batch(texts, None, x))
    out = figures(s)
    picked = [int(i[1:]) for i in s.sample.column("_id").to_pylist()]
    ref = metrics.summarize([texts[i] for i in picked], x[picked], seed=0, clusters=3, bleu_sample=10, distinct=False)
    assert out["sample"] == 30 and out["rows"] == 80
    for key in ("compression_ratio", "self_bleu", "vendi", "mean_pairwise_distance", "cluster_entropy"):
        assert out[key] == ref[key]


def test_a_side_without_the_text_column_has_no_lexical_metrics():
    s = side()
    s.observe(pa.RecordBatch.from_pydict({"_id": ["a", "b"], "n": [1, 2]}))
    assert figures(s) == {"rows": 2, "sample": 2}
    empty = figures(side())
    assert empty == {"rows": 0, "sample": 0}


def test_a_text_column_that_is_not_text_is_an_error_naming_it():
    with pytest.raises(InputError, match="metrics: column 'text' must be text, it is int64"):
        side().observe(pa.RecordBatch.from_pydict({"_id": ["a"], "text": [1]}))


def test_rows_with_one_id_enter_the_sample_by_text_whatever_order_the_tasks_finish_in():
    ids = ["same"] * 4 + [f"r{i}" for i in range(40)]
    texts = ["d d", "a a", "c c", "b b"] + corpus(40, seed=4)
    parts = [one_pass(texts[i:i + 1], ids[i:i + 1]) for i in range(len(texts))]
    forward, backward = side(sample=30, sketch=32), side(sample=30, sketch=32)
    for p in parts:
        forward.merge(p)
    for p in reversed(parts):
        backward.merge(p)
    assert forward.sample.equals(backward.sample)
    same = forward.sample.filter(pa.compute.equal(forward.sample["_id"], "same"))
    assert same["text"].to_pylist() == ["a a", "b b", "c c", "d d"]


def test_a_negative_seed_is_a_seed_like_any_other():
    texts = corpus(100, seed=5)
    negative = side(sample=10, seed=-3)
    negative.observe(batch(texts))
    zero = side(sample=10, seed=0)
    zero.observe(batch(texts))
    assert figures(negative)["sample"] == 10
    assert negative.sample["_id"].to_pylist() != zero.sample["_id"].to_pylist()


def test_a_batch_whose_text_is_all_null_counts_rows_and_no_words():
    s = side(sample=10)
    s.observe(pa.RecordBatch.from_pydict({"_id": ["a", "b"], "text": pa.nulls(2)}))
    s.observe(batch(["x y", "y z"], ["c", "d"]))
    out = figures(s)
    assert out["rows"] == 4 and out["ngrams"]["1"] == 4 and out["distinct_1"] == 0.75
    assert out["sample"] == 4
