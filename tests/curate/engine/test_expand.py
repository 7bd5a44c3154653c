"""Row accounting of 1 -> n Maps: every input row produced children or is traced; children get
deterministic ids; an operator that drops rows without a verdict stops the run as a bug."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate import recipe, registry
from curate.engine.tasks import expand
from curate.engine.run.runner import RunOptions, run
from curate.ops import Map, Verdict
from tests.conftest import write_jsonl


@pytest.fixture(autouse=True)
def expander(monkeypatch):
    monkeypatch.setitem(registry.catalog(), "test_expander", "tests.curate.engine.expand_ops:Expander")
    monkeypatch.setitem(registry.catalog(), "test_async_expander", "tests.curate.engine.expand_ops:AsyncExpander")


def _run(root, ns, batch, op="test_expander", params="{}", workers=1):
    write_jsonl(root / "in.jsonl", [{"text": f"t{i}", "n": n} for i, n in enumerate(ns)])
    # allow_empty: some examples trace every row
    r = recipe.load(text=f"input: {{path: '{root}/in.jsonl', batch_rows: {batch}, id_column: text}}\n"
                         f"output: {{path: '{root}/out'}}\nallow_empty: true\nsteps:\n  - {op}: {params}\n")
    return run(r, RunOptions(workers=workers))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ns=st.lists(st.integers(0, 9), min_size=1, max_size=40), batch=st.integers(1, 8),
       op=st.sampled_from(["test_expander", "test_async_expander"]))
@example(ns=[0, 0, 0], batch=1, op="test_expander")  # every row traced, no child at all
@example(ns=[3], batch=1, op="test_async_expander")
def test_every_input_row_produces_children_or_is_traced(tmp_path_factory, ns, batch, op):
    root = tmp_path_factory.mktemp("expand")
    m = _run(root, ns, batch, op)
    step = m.steps[1]
    assert step.rows_in == len(ns) == step.expanded + step.removed
    assert step.rows_out == sum(n % 4 for n in ns) and step.added == step.rows_out - step.expanded
    traced = pq.read_table(root / "out" / "trace").to_pylist() if step.removed else []
    assert sorted(t["_id"] for t in traced) == sorted(f"t{i}" for i, n in enumerate(ns) if n % 4 == 0)
    assert all(t["reason"] == "no_children" and t["row"]["n"] % 4 == 0 for t in traced)
    out = pq.read_table(root / "out" / "data", columns=["_id", "k"]).to_pylist() if m.rows_out else []
    expected = [{"_id": f"t{i}#{k}", "k": k} for i, n in enumerate(ns) for k in range(n % 4)]
    assert out == expected  # ids from the parent's and the child's place: the same whatever the batching


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ns=st.lists(st.integers(0, 9), min_size=1, max_size=30), batch=st.integers(1, 8), data=st.data())
@example(ns=[5], batch=1, data=None)
def test_an_operator_dropping_rows_without_a_verdict_fails_the_run_as_a_bug(tmp_path_factory, ns, batch, data):
    root = tmp_path_factory.mktemp("bug")
    dropped = data.draw(st.sampled_from(ns)) if data else ns[0]
    with pytest.raises(RuntimeError, match=r"bug in operator test_expander \(steps\[0\]\): dropped \d+ of its \d+ "
                                           r"input rows without a verdict"):
        _run(root, ns, batch, params=f"{{drop_silently: {dropped}}}")
    assert not (root / "out" / "manifest.json").exists()


def _step():
    return recipe.Step(index=1, name="op", op_class=Map, params=None)


def test_children_of_unknown_parents_are_bugs():
    """(A result of the wrong shape, or a verdict of the wrong length: tests/curate/test_result.py.)"""
    parents = pa.RecordBatch.from_pydict({"_id": ["a", "b"]})
    children = pa.RecordBatch.from_pydict({"_parent_id": ["a", "zz"]})
    with pytest.raises(expand.OperatorBug, match="_parent_id 'zz' is not the _id of any of its input rows"):
        expand.parent_index(_step(), parents, children, Verdict([True, True]))
    orphan = pa.RecordBatch.from_pydict({"_parent_id": ["a", "b"]})
    with pytest.raises(expand.OperatorBug, match="children of input row 'b', which its verdict drops"):
        expand.parent_index(_step(), parents, orphan, Verdict([True, False]))


def test_a_plain_map_changing_the_row_count_is_a_bug(tmp_path, monkeypatch):
    from tests.curate.engine.expand_ops import Expander

    monkeypatch.setattr(Expander, "changes_rows", False)
    with pytest.raises(RuntimeError, match=r"bug in operator test_expander \(steps\[0\]\): returned .* rows for 3"):
        _run(tmp_path, [1, 2, 3], 8)
