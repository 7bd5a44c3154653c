"""The runner: conservation, trace, determinism, resume and bounded stages."""

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError, InputError
from tests.conftest import write_jsonl

STEPS = """
steps:
  - sql_filter: {where: "n % 7 <> 3"}
  - exact_dedup: {}
  - select: {columns: [text, n]}
"""


def corpus(root: Path, files: int = 3, rows: int = 200) -> str:
    for f in range(files):
        write_jsonl(root / f"part-{f}.jsonl.gz",
                    [{"text": f"doc {(f * rows + i) % 150}", "n": f * rows + i, "extra": "x"} for i in range(rows)])
    return str(root / "*.jsonl.gz")


def load(inp: str, out: Path, steps: str = STEPS, **kw) -> recipe.Recipe:
    return recipe.load(text=f"input: {{path: '{inp}', batch_rows: 64}}\noutput: {{path: '{out}'}}\n{steps}", **kw)


def data_digest(out: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "data").glob("*.parquet"))]


def test_run_writes_data_trace_and_a_conserving_manifest(tmp_path, manifest_at):
    inp = corpus(tmp_path / "in")
    m = run(load(inp, tmp_path / "out"), RunOptions(workers=1))
    out = tmp_path / "out"
    assert not (out / "_work").exists()
    data = pq.read_table(out / "data")
    assert data.column_names == ["text", "n", "_id"]  # internal columns dropped but _id
    # keep-first exact dedup after the filter: 150 distinct texts, those with a surviving row
    assert data.num_rows == m.rows_out == 150
    steps = {s.step: s for s in m.steps}
    assert steps["00_read"].rows_in == 600
    for s in m.steps:
        assert s.rows_in == s.rows_out + s.removed
    trace = pq.read_table(out / "trace" / "02_exact_dedup.parquet")
    assert trace.num_rows == steps["02_exact_dedup"].removed
    assert set(trace.column("reason").to_pylist()) == {"exact_duplicate"}
    assert all(d.startswith("duplicate of ") for d in trace.column("detail").to_pylist())
    assert "text" in trace.schema.field("row").type.names  # the removed row is kept, replayable
    filtered = pq.read_table(out / "trace" / "01_sql_filter.parquet")
    ids = set(data.column("_id").to_pylist()) | set(trace.column("_id").to_pylist()) | set(filtered.column("_id").to_pylist())
    assert len(ids) == 600  # every input row is in the output or the trace, once
    assert manifest_at(out).recipe_fingerprint == load(inp, out).fingerprint()


def test_same_input_recipe_and_seed_give_identical_bytes_whatever_the_workers(tmp_path):
    inp = corpus(tmp_path / "in")
    run(load(inp, tmp_path / "a"), RunOptions(workers=1))
    run(load(inp, tmp_path / "b"), RunOptions(workers=2))
    assert data_digest(tmp_path / "a") == data_digest(tmp_path / "b")


def test_existing_output_needs_resume_or_overwrite(tmp_path):
    inp = corpus(tmp_path / "in", files=1)
    run(load(inp, tmp_path / "o"), RunOptions(workers=1))
    with pytest.raises(CurateError, match="already exists"):
        run(load(inp, tmp_path / "o"), RunOptions(workers=1))
    assert run(load(inp, tmp_path / "o"), RunOptions(workers=1, overwrite=True)).rows_out > 0
    assert run(load(inp, tmp_path / "o"), RunOptions(workers=1, resume=True)).rows_out > 0  # complete: no-op


def test_resume_refuses_a_changed_recipe_or_input(tmp_path):
    inp = corpus(tmp_path / "in", files=2)
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=1, keep_work=True))
    (out / "manifest.json").unlink()  # as if killed before the end
    with pytest.raises(CurateError, match="the recipe changed"):
        run(load(inp, out, overrides=["seed=5"]), RunOptions(workers=1, resume=True))
    write_jsonl(tmp_path / "in" / "part-9.jsonl.gz", [{"text": "new", "n": 1, "extra": "y"}])
    with pytest.raises(CurateError, match="the input files changed"):
        run(load(inp, out), RunOptions(workers=1, resume=True))


def test_limit_reads_only_the_first_rows(tmp_path):
    inp = corpus(tmp_path / "in")
    m = run(load(inp, tmp_path / "o", steps="steps: []"), RunOptions(workers=2, limit=250))
    assert m.rows_out == 250
    assert pq.read_table(tmp_path / "o" / "data").column("n").to_pylist() == list(range(250))


def test_missing_text_column_names_the_file_step_and_column(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"body": "x", "n": 1}])
    r = load(str(tmp_path / "in" / "a.jsonl"), tmp_path / "o", steps="steps:\n  - exact_dedup: {}\n")
    with pytest.raises(CurateError, match=r"exact_dedup needs column 'text' \(input.text_column\)"):
        run(r, RunOptions(workers=1))
    r = load(str(tmp_path / "in" / "a.jsonl"), tmp_path / "p", steps="steps:\n  - sql_filter: {where: 'length(text) > 1'}\n")
    with pytest.raises(CurateError, match="text"):
        run(r, RunOptions(workers=1))


def test_unparseable_rows_go_to_the_read_trace(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "a", "n": 1}\nnot json\n{"text": "b", "n": 2}\n')
    m = run(load(str(p), tmp_path / "o", steps="steps: []"), RunOptions(workers=1))
    assert (m.steps[0].rows_in, m.steps[0].rows_out, m.steps[0].removed) == (3, 2, 1)
    trace = pq.read_table(tmp_path / "o" / "trace" / "00_read.parquet").to_pylist()
    assert trace[0]["reason"] == "unparseable" and "line 2" in trace[0]["detail"]
    assert trace[0]["row"]["raw"] == "not json"


def test_failed_run_leaves_no_half_written_output(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x", "n": 1}])
    (tmp_path / "in" / "b.jsonl").write_bytes(b"")  # an empty file is skipped, but refused under on_bad_row: fail
    strict = recipe.load(text=f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}', on_bad_row: fail}}\n"
                              f"output: {{path: '{tmp_path / 'o'}'}}\n{STEPS}")
    with pytest.raises(InputError, match="empty"):
        run(strict, RunOptions(workers=1))
    out = tmp_path / "o"
    assert not (out / "data").exists() and not (out / "manifest.json").exists()
    assert not list(out.rglob("*.tmp"))


rows_strategy = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "a ", "A", "d  e", "d e"]), st.integers(0, 20)),
                         min_size=1, max_size=60)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_strategy, batch=st.integers(1, 16), files=st.integers(1, 3))
def test_conservation_and_keep_first_semantics_hold_for_any_input(tmp_path_factory, rows, batch, files):
    root = tmp_path_factory.mktemp("prop")
    chunks = [rows[i::files] for i in range(files)]
    order = []
    for f, chunk in enumerate(chunks):
        if chunk:
            write_jsonl(root / "in" / f"p{f}.jsonl", [{"text": t, "n": n} for t, n in chunk])
            order += chunk
    steps = "allow_empty: true\nsteps:\n  - sql_filter: {where: 'n % 3 <> 0'}\n  - exact_dedup: {}\n"  # may keep none
    r = recipe.load(text=f"input: {{path: '{root}/in/*.jsonl', batch_rows: {batch}}}\noutput: {{path: '{root}/o'}}\n{steps}")
    m = run(r, RunOptions(workers=1))
    expected, seen = [], set()
    for t, n in order:  # the model: filter, then keep the first of each whitespace-normalized text
        key = " ".join(t.split())
        if n % 3 != 0 and key not in seen:
            seen.add(key)
            expected.append((t, n))
    got = pq.read_table(root / "o" / "data").select(["text", "n"]).to_pylist() if m.rows_out else []
    assert [(g["text"], g["n"]) for g in got] == expected
    for s in m.steps:
        assert s.rows_in == s.rows_out + s.removed


def test_consecutive_global_steps_keep_their_prepared_columns_apart(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t, "n": n} for t, n in
                                             [("a", 1), ("a", 2), ("b", 1), ("c", 3), ("d", 3)]])
    steps = "steps:\n  - exact_dedup: {}\n  - exact_dedup: {columns: [n]}\n"
    m = run(load(str(tmp_path / "in" / "a.jsonl"), tmp_path / "o", steps=steps), RunOptions(workers=1))
    data = pq.read_table(tmp_path / "o" / "data")
    assert data.column("text").to_pylist() == ["a", "c"]  # then b (n=1 like a) and d (n=3 like c) go
    assert data.column_names == ["text", "n", "_id"]
    assert [s.removed for s in m.steps] == [0, 1, 2]


def test_small_task_shards_are_merged_in_order_up_to_the_shard_size(tmp_path):
    inp = corpus(tmp_path / "in", files=4)
    run(load(inp, tmp_path / "four", steps="steps: []"), RunOptions(workers=2))
    assert len(list((tmp_path / "four" / "data").glob("*.parquet"))) == 4  # by default, one per task
    run(load(inp, tmp_path / "one", steps="steps: []", overrides=["output.merge_shards=true"]), RunOptions(workers=2))
    files = sorted((tmp_path / "one" / "data").glob("*.parquet"))
    assert [f.name for f in files] == ["part-00000.parquet"]
    assert pq.read_table(files[0]).column("n").to_pylist() == list(range(800))
    from curate.engine.run.publish import shard_groups as _shard_groups

    run(load(inp, tmp_path / "parts", steps="steps: []"), RunOptions(workers=1, keep_work=True))
    shards = sorted((tmp_path / "parts" / "_work" / "stage-0" / "data").glob("*.parquet"))
    size = shards[0].stat().st_size
    assert [len(g) for g in _shard_groups(shards, 2 * size + size // 2)] == [2, 2]
    assert [len(g) for g in _shard_groups(shards, 1)] == [1, 1, 1, 1]


@pytest.fixture
def batch_size_op(monkeypatch):
    from curate import registry

    monkeypatch.setitem(registry.catalog(), "batch_size", "tests.curate.engine.model_ops:BatchSize")
    monkeypatch.setitem(registry.catalog(), "fit_batch_sizes", "tests.curate.engine.model_ops:FitBatchSizes")


def test_a_step_gets_batches_of_its_batch_rows_and_the_bytes_do_not_change(tmp_path, batch_size_op):
    inp = corpus(tmp_path / "in", files=2, rows=500)  # read in batches of 64
    filtered = "steps:\n  - sql_filter: {where: \"n % 7 <> 3\"}\n"
    steps = filtered + "  - batch_size: {batch_rows: ROWS}\n  - select: {columns: COLUMNS}\n"
    run(load(inp, tmp_path / "s", steps.replace("ROWS", "150").replace("COLUMNS", "[batch_size]")), RunOptions(workers=1))
    sizes = pq.read_table(tmp_path / "s" / "data").column("batch_size").to_pylist()
    kept = [sum(1 for n in range(f * 500, f * 500 + 500) if n % 7 != 3) for f in (0, 1)]  # a task per file
    assert sorted(set(sizes)) == sorted({150} | {k % 150 for k in kept})
    for out, rows in (("a", "150"), ("b", "7")):
        run(load(inp, tmp_path / out, steps.replace("ROWS", rows).replace("COLUMNS", "[text, n]")), RunOptions(workers=1))
    run(load(inp, tmp_path / "c", filtered + "  - select: {columns: [text, n]}\n"), RunOptions(workers=1))
    assert data_digest(tmp_path / "a") == data_digest(tmp_path / "b") == data_digest(tmp_path / "c")


def test_a_global_fit_gets_batches_of_its_step_batch_rows(tmp_path, batch_size_op):
    inp = corpus(tmp_path / "in", files=2, rows=500)  # read in batches of 64, two shards of 500 rows
    run(load(inp, tmp_path / "o", "steps:\n  - fit_batch_sizes: {batch_rows: 150}\n"), RunOptions(workers=1))
    sizes = set(pq.read_table(tmp_path / "o" / "data").column("fit_batch_sizes").to_pylist())
    assert sizes == {",".join(["150"] * 6 + ["100"])}  # re-sized across the two shards


def test_batch_rows_must_be_a_positive_whole_number(tmp_path):
    for bad in ("0", "-3", "1.5", "many"):
        with pytest.raises(CurateError, match=r"steps\[0\].exact_dedup.batch_rows"):
            load("x.jsonl", tmp_path / "o", f"steps:\n  - exact_dedup: {{batch_rows: {bad}}}\n")


def test_the_manifest_records_the_runs_lineage(tmp_path):
    """Every input file with its size and modification time, every output shard with its rows
    and bytes, the host, start and end times, and the versions of the packages that shape bytes."""
    inp = corpus(tmp_path / "in", files=2)
    m = run(load(inp, tmp_path / "out"), RunOptions(workers=1))
    files = sorted((tmp_path / "in").glob("*.jsonl.gz"))
    assert [e.path for e in m.inputs] == [str(f) for f in files]
    assert [e.bytes for e in m.inputs] == [f.stat().st_size for f in files]
    shards = sorted((tmp_path / "out" / "data").glob("*.parquet"))
    assert [e.path for e in m.outputs] == [f"data/{p.name}" for p in shards]
    assert sum(e.rows for e in m.outputs) == m.rows_out
    assert m.run.host and m.run.started_at <= m.run.ended_at
    assert {"curate", "pyarrow", "polars", "duckdb", "numpy", "xxhash"} <= m.versions.keys()
