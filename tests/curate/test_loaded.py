"""What an operator loads once per worker (curate/loaded.py): loaded on first use or by setup, once;
closed and forgotten by teardown; never pickled."""

import pickle

import pytest

from curate.ops import Map, loaded


class Model:
    made = 0

    def __init__(self):
        Model.made += 1
        self.closed = False

    def close(self):
        self.closed = True


class Scorer(Map):
    name = "scorer"

    @loaded
    def model(self) -> Model:
        return Model()

    @loaded
    def table(self) -> dict:  # no close(): teardown only forgets it
        return {"loaded": True}


class Failing(Map):
    name = "failing"

    @loaded
    def model(self):
        raise RuntimeError("no weights")


@pytest.fixture(autouse=True)
def count_from_zero():
    Model.made = 0


def test_setup_loads_each_once_and_use_reuses_it():
    op = Scorer()
    op.setup()
    op.setup()
    assert Model.made == 1 and op.model is op.model and op.table == {"loaded": True}


def test_first_use_loads_without_setup():
    op = Scorer()
    assert op.model.closed is False and Model.made == 1


def test_teardown_closes_and_forgets_then_a_use_loads_again():
    op = Scorer()
    model = op.model
    op.teardown()
    assert model.closed and "model" not in vars(op) and "table" not in vars(op)
    assert op.model is not model and Model.made == 2


def test_a_loaded_model_never_travels():
    op = Scorer()
    op.setup()
    copy = pickle.loads(pickle.dumps(op))
    assert "model" not in vars(copy) and "table" not in vars(copy)
    assert copy.model is not op.model and Model.made == 2


def test_a_load_that_fails_fails_setup_and_leaves_nothing_loaded():
    op = Failing()
    with pytest.raises(RuntimeError, match="no weights"):
        op.setup()
    assert "model" not in vars(op)


def test_no_operator_calls_setup_itself():
    """The engine calls setup (and teardown); an operator reads its `loaded` attributes."""
    import ast
    from pathlib import Path

    import curate_operators

    root = Path(curate_operators.__file__).parent
    calls = [f"{path.relative_to(root)}:{node.lineno}" for path in sorted(root.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setup"
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"]
    assert calls == []
