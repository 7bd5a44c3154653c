"""An operator's answer for a batch: the shapes to_result reads, and a clear OperatorBug naming the
step for every other one (a plain tuple, a list, a verdict over the wrong rows...)."""

import numpy as np
import pyarrow as pa
import pytest

from curate.ops import Filter, Global, Map, Result, Verdict
from curate.result import OperatorBug, to_result


class Step:  # what to_result reads of a recipe step
    name = "my_op"
    index = 3


class AMap(Map):
    name = "my_op"


class AFilter(Filter):
    name = "my_op"


class AGlobal(Global):
    name = "my_op"


class Expanding(Map):
    name = "my_op"
    changes_rows = True


BATCH = pa.RecordBatch.from_pydict({"_id": ["a", "b", "c"], "x": [1, 2, 3]})
VERDICT = Verdict(np.array([True, False, True]), "gone")


@pytest.mark.parametrize("op", [AMap(), AFilter(), AGlobal()])
def test_each_shape_becomes_one_result(op):
    assert to_result(Step, op, BATCH, VERDICT) == Result(BATCH, VERDICT)
    assert to_result(Step, op, BATCH, BATCH) == Result(BATCH, None)
    assert to_result(Step, op, BATCH, Result(BATCH, VERDICT)) == Result(BATCH, VERDICT)


@pytest.mark.parametrize("answer", [(BATCH, VERDICT), [BATCH, VERDICT], None, {"x": [1]}, BATCH.to_pandas()],
                         ids=["plain tuple", "list", "None", "dict", "DataFrame"])
@pytest.mark.parametrize("op", [AMap(), AFilter(), AGlobal(), Expanding()])
def test_any_other_shape_is_a_bug_naming_the_operator(op, answer):
    with pytest.raises(OperatorBug, match=r"bug in operator my_op \(steps\[2\]\): \w+ returned .*; it returns"):
        to_result(Step, op, BATCH, answer)


def test_a_result_holding_something_else_is_a_bug():
    with pytest.raises(OperatorBug, match="returned Result"):
        to_result(Step, AMap(), BATCH, Result(BATCH, "gone"))
    with pytest.raises(OperatorBug, match="returned Result"):
        to_result(Step, AMap(), BATCH, Result(BATCH.to_pydict()))


def test_a_verdict_over_other_rows_is_a_bug():
    with pytest.raises(OperatorBug, match="a verdict for 2 rows, the batch has 3"):
        to_result(Step, AFilter(), BATCH, Verdict(np.array([True, False])))


def test_a_map_that_changes_the_row_count_without_saying_so_is_a_bug():
    with pytest.raises(OperatorBug, match="returned 2 rows for 3; a Map that changes the row count"):
        to_result(Step, AMap(), BATCH, BATCH.slice(1))


def test_an_expanding_step_returns_children_and_a_verdict_over_its_input():
    children = pa.RecordBatch.from_pydict({"_parent_id": ["a", "a", "c"], "x": [1, 1, 3]})
    assert to_result(Step, Expanding(), BATCH, Result(children, VERDICT)) == Result(children, VERDICT)
    for answer in (children, VERDICT, Result(children)):  # a Map's plain shapes say nothing of the input rows
        with pytest.raises(OperatorBug, match="my_op"):
            to_result(Step, Expanding(), BATCH, answer)
    with pytest.raises(OperatorBug, match="verdict over 2 rows; it got 3 input rows"):
        to_result(Step, Expanding(), BATCH, Result(children, Verdict(np.array([True, True]))))
    with pytest.raises(OperatorBug, match="without a _parent_id column"):
        to_result(Step, Expanding(), BATCH, Result(children.drop_columns(["_parent_id"]), VERDICT))


def test_a_result_unpacks_as_batch_and_verdict():
    batch, verdict = Result(BATCH, VERDICT)
    assert batch is BATCH and verdict is VERDICT


class PlainTuple(Map):
    """Answers with the tuple the contract once allowed."""

    name = "plain_tuple"

    def process(self, batch):
        return batch, Verdict(np.ones(batch.num_rows, bool))


def test_a_run_whose_operator_answers_in_another_shape_stops_naming_it(tmp_path, monkeypatch):
    from curate import recipe, registry
    from curate.engine.run.runner import RunOptions, run
    from tests.conftest import write_jsonl

    monkeypatch.setitem(registry.catalog(), "plain_tuple", "tests.curate.test_result:PlainTuple")
    write_jsonl(tmp_path / "in.jsonl", [{"text": f"t{i}"} for i in range(3)])
    r = recipe.load(text=f"input: {{path: '{tmp_path}/in.jsonl'}}\noutput: {{path: '{tmp_path}/out'}}\n"
                         f"steps:\n  - plain_tuple: {{}}\n")
    with pytest.raises(RuntimeError, match=r"bug in operator plain_tuple \(steps\[0\]\): PlainTuple returned a plain "
                                           r"tuple \(RecordBatch, Verdict\); it returns a Result\(batch, verdict\)"):
        run(r, RunOptions(workers=1))
    assert not (tmp_path / "out" / "manifest.json").exists()
