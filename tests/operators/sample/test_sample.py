import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings, strategies as st

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import RecipeError
from tests.conftest import write_jsonl

from curate_operators.sample.sample import Sample
from curate_operators.sample.shuffle import Shuffle


def ids(n, prefix="f.jsonl"):
    return pa.RecordBatch.from_pydict({"_id": [f"{prefix}:{i}" for i in range(n)], "x": list(range(n))})


def kept(batch, fraction, seed=0, **params):
    return Sample(Sample.Params(fraction=fraction, **params), seed=seed).keep(batch).keep


def test_fraction_is_close_and_reasons_say_why():
    v = Sample(Sample.Params(fraction=0.1)).keep(ids(20_000))
    assert 0.09 < v.keep.mean() < 0.11
    assert v.reason == "sampled_out"


def test_deterministic_per_row_whatever_the_batching():
    whole = kept(ids(1000), 0.5, seed=7)
    batch = ids(1000)
    parts = np.concatenate([kept(batch.slice(i, 100), 0.5, seed=7) for i in range(0, 1000, 100)])
    assert (whole == parts).all()
    assert not (whole == kept(ids(1000), 0.5, seed=8)).all()


@given(st.floats(0.01, 1.0), st.floats(0.01, 1.0), st.integers(0, 2**32))
@example(1.0, 0.5, 0)
@settings(max_examples=30, deadline=None)
def test_a_smaller_fraction_keeps_a_subset(a, b, seed):
    small, large = sorted((a, b))
    batch = ids(300)
    ks, kl = kept(batch, small, seed), kept(batch, large, seed)
    assert not (ks & ~kl).any()
    if large == 1.0:
        assert kl.all()


def test_sample_by_another_column_keeps_groups_together():
    batch = pa.RecordBatch.from_pydict({"_id": [str(i) for i in range(400)], "host": [f"h{i % 20}" for i in range(400)]})
    k = kept(batch, 0.5, by="host")
    by_host = {}
    for host, keep in zip(batch.column("host").to_pylist(), k):
        by_host.setdefault(host, set()).add(bool(keep))
    assert all(len(v) == 1 for v in by_host.values())


@given(st.integers(0, 300), st.integers(2, 50), st.integers(0, 2**32))
@example(0, 2, 0)
@example(1, 2, 0)
@settings(max_examples=30, deadline=None)
def test_shuffle_permutes_within_windows_deterministically(n, window, seed):
    batch = ids(n)
    op = Shuffle(Shuffle.Params(window=window), seed=seed)
    out = op.process(batch)
    xs = out.column("x").to_pylist()
    assert sorted(xs) == list(range(n))  # conservation: every row once
    assert all(x // window == i // window for i, x in enumerate(xs))  # rows stay in their window
    assert out.equals(op.process(batch))


def test_shuffle_changes_the_order():
    out = Shuffle(seed=1).process(ids(100))
    assert out.column("x").to_pylist() != list(range(100))


def test_in_a_run_shuffle_windows_are_cut_from_the_task_whatever_the_batch_sizes(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [{"text": str(i), "x": i} for i in range(45)])
    orders = []
    for rows in (1, 7, 1000):
        text = (f"input: {{path: '{tmp_path}/in.jsonl', batch_rows: {rows}}}\noutput: {{path: '{tmp_path}/o{rows}'}}\n"
                "steps:\n  - shuffle: {window: 10}\n")
        run(recipe.load(text=text), RunOptions(workers=1))
        xs = pq.read_table(tmp_path / f"o{rows}" / "data").column("x").to_pylist()
        assert all(x // 10 == i // 10 for i, x in enumerate(xs))  # windows of 10 rows from the file's first
        orders.append(xs)
    assert orders[0] == orders[1] == orders[2] != list(range(45))


def test_a_shuffle_step_takes_no_batch_rows_its_window_is_its_batch():
    text = "input: {path: x.jsonl}\noutput: {path: out}\nsteps:\n  - shuffle: {window: 10, batch_rows: 5}\n"
    with pytest.raises(RecipeError, match=r"steps\[0\]\.shuffle\.batch_rows.*set window instead"):
        recipe.load(text=text)
    assert recipe.load(text=text.replace(", batch_rows: 5", "")).steps[0].rows_per_batch() == 10
