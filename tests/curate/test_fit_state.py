"""A Global's fitted state (curate/fit_state.py): saved and loaded whole, its files and summary;
the standard Decisions read only the rows of a batch's _ord range."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.fit_state import ROW_GROUP_ROWS, Decisions, FitState, Value
from curate.ops import Global


class Empty(FitState):
    """A state that takes every default."""


def test_the_defaults_name_no_file_and_no_summary():
    state = Empty()
    assert state.files() == [] and state.summary() is None and isinstance(FitState.load(state.save()), Empty)


class OwnState:
    """A state that implements the protocol without subclassing FitState."""

    def files(self):
        return []

    def summary(self):
        return {"own": True}

    def save(self):
        return b""

    @staticmethod
    def load(data):
        return OwnState()


def test_fit_state_is_a_protocol_checked_by_its_methods():
    assert isinstance(OwnState(), FitState) and isinstance(Value(1), FitState)
    assert not isinstance(0.5, FitState) and not isinstance({"files": []}, FitState)


def test_a_state_saved_loads_equal():
    value = Value(0.25, {"rows": 4})
    assert FitState.load(value.save()) == value and value.summary() == {"rows": 4}


def test_decisions_remove_the_ords_they_name_with_their_detail(tmp_path):
    path = tmp_path / "decisions.parquet"
    removed = np.arange(0, 3 * ROW_GROUP_ROWS, 3, dtype=np.int64)  # several row groups
    pq.write_table(pa.table({"_ord": removed, "detail": [f"dup of {o - 1}" for o in removed]}), path,
                   row_group_size=ROW_GROUP_ROWS)
    state = FitState.load(Decisions(str(path), "exact_duplicate", len(removed), {"groups": 7}).save())
    assert state.files() == [str(path)] and state.summary() == {"groups": 7}
    ords = np.arange(2 * ROW_GROUP_ROWS + 1, 2 * ROW_GROUP_ROWS + 8, dtype=np.int64)  # the first one removed
    verdict = state.verdict(pa.RecordBatch.from_pydict({"_ord": ords}))
    assert verdict.keep.tolist() == [o % 3 != 0 for o in ords]
    assert verdict.reason == "exact_duplicate"
    assert verdict.detail.to_pylist()[:2] == [f"dup of {ords[0] - 1}", None]


def test_decisions_that_remove_nothing_read_no_file(tmp_path):
    state = Decisions(str(tmp_path / "never-written.parquet"), "exact_duplicate", 0)
    assert state.files() == [] and state.summary() is None
    assert state.verdict(pa.RecordBatch.from_pydict({"_ord": np.arange(4)})).keep.all()


class NoState(Global):
    """A fit whose state is a bare value, not a FitState."""

    name = "no_state"

    def fit(self, batches, workdir, parallel=None):
        return 0.5

    def apply(self, batch, state):
        return batch


def test_a_fit_returning_no_fit_state_stops_the_run_naming_the_operator(tmp_path, monkeypatch):
    from curate import recipe, registry
    from curate.engine.run.runner import RunOptions, run
    from tests.conftest import write_jsonl

    monkeypatch.setitem(registry.catalog(), "no_state", "tests.curate.test_fit_state:NoState")
    write_jsonl(tmp_path / "in.jsonl", [{"text": f"t{i}"} for i in range(3)])
    r = recipe.load(text=f"input: {{path: '{tmp_path}/in.jsonl'}}\noutput: {{path: '{tmp_path}/out'}}\n"
                         f"steps:\n  - no_state: {{}}\n")
    with pytest.raises(RuntimeError, match=r"bug in operator no_state \(steps\[0\]\): NoState.fit returned float; "
                                           r"a Global's fit returns a FitState"):
        run(r, RunOptions(workers=1))
