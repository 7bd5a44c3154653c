"""The operator contract: Parallel.stream hands a bounded window to the map at a time (the next
while the caller takes one's results), results in order; an operator's requires / provides come
from its Params' column declarations."""

import threading

import pytest
from hypothesis import example, given, strategies as st
from pydantic import Field

from curate.ops import TEXT, Map, Parallel, Params, reads_column, serial_map, writes_column


@given(items=st.integers(0, 40), width=st.integers(1, 6), per_call=st.integers(1, 8), in_flight=st.integers(1, 3))
@example(items=0, width=1, per_call=2, in_flight=1)  # nothing: the map is never called
@example(items=4, width=2, per_call=2, in_flight=1)  # exactly one full window
@example(items=9, width=2, per_call=2, in_flight=1)  # a last window part-full
@example(items=40, width=2, per_call=8, in_flight=2)  # Slurm's: 16 pieces a call, two calls at once
def test_stream_hands_over_bounded_windows_in_order(items, width, per_call, in_flight):
    pulled, windows, got = [], [], []

    def source():
        for i in range(items):
            pulled.append(i)
            yield i

    def recording_map(fn, *iterables):
        windows.append(len(iterables[0]))
        return serial_map(fn, *iterables)

    size = per_call * width  # the engine's pieces a worker per map call
    parallel = Parallel(recording_map, width, pieces_per_call=per_call, calls_in_flight=in_flight)
    for result in parallel.stream(lambda i: i * i, source()):
        got.append(result)
        # What was taken from the source and not yet given back: a window per call in flight and one more.
        assert len(pulled) - len(got) < (in_flight + 1) * size
    assert got == [i * i for i in range(items)]  # the same results, in order, whatever the window
    assert all(w == size for w in windows[:-1]) and all(0 < w <= size for w in windows)
    assert sum(windows) == items


def test_stream_hands_over_the_next_window_before_the_caller_takes_this_ones_results():
    """The workers are not left idle while the caller stores a window's results."""
    handed = threading.Semaphore(0)

    def counting_map(fn, *iterables):
        handed.release()
        return serial_map(fn, *iterables)

    results = Parallel(counting_map, width=2).stream(lambda i: i, iter(range(12)))
    next(results)  # the first window's first result: the caller holds it
    assert handed.acquire(timeout=30) and handed.acquire(timeout=30), "the second window was not handed over"
    assert list(results) == list(range(1, 12))


@pytest.mark.parametrize("in_flight", [1, 2])
def test_calls_in_flight_run_at_once(in_flight):
    """Slurm's two calls at once: the next call is running before the oldest returns (its tasks
    queue for the cores the oldest's free); one call at a time where asked."""
    running, most, lock = [0], [0], threading.Lock()
    both = threading.Barrier(2, timeout=5)

    def overlapping_map(fn, *iterables):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if in_flight == 2 and iterables[0][0] < 8:  # the first two calls wait for each other
            both.wait()
        with lock:
            running[0] -= 1
        return serial_map(fn, *iterables)

    parallel = Parallel(overlapping_map, width=2, pieces_per_call=2, calls_in_flight=in_flight)
    assert list(parallel.stream(lambda i: i, iter(range(20)))) == list(range(20))
    assert most[0] == in_flight


def test_a_failing_piece_fails_the_stream():
    def failing(i):
        if i == 5:
            raise ValueError("piece 5")
        return i

    with pytest.raises(ValueError, match="piece 5"):
        list(Parallel(serial_map, width=2).stream(failing, iter(range(12))))


class PairParams(Params):
    threshold: float = Field(0.5, description="Not a column.")
    instruction_column: str | None = reads_column(None, "Instruction; with response_column instead of the text.",
                                                  instead_of_text=True)
    response_column: str | None = reads_column(None, "Response.", instead_of_text=True)
    extra_columns: list[str] = reads_column([], "More columns read.")
    weights: dict[str, float] = reads_column({}, "Columns by their keys.")
    prefer: str | None = reads_column(None, "Optional: read when given.")
    output_column: str = writes_column("score", "Where the score goes.")
    also_raw: bool = Field(False, description="Also write <output_column>_raw.")


class PairScore(Map):
    name = "pair_score"
    Params = PairParams
    requires = ("_id",)
    provides = (TEXT,)

    def computed_provides(self) -> tuple[str, ...]:
        return (self.params.output_column + "_raw",) if self.params.also_raw else ()


@pytest.mark.parametrize("params, requires, provides", [
    # nothing named: the text column stands where the instead-of-text fields are; None and empty name nothing
    ({}, ("_id", "body"), ("body", "score")),
    ({"instruction_column": "i", "response_column": "r"}, ("_id", "i", "r"), ("body", "score")),
    ({"response_column": "r"}, ("_id", "r"), ("body", "score")),  # any one of them replaces the text
    ({"extra_columns": ["a", "b"], "weights": {"w": 1.0}, "prefer": "p"}, ("_id", "body", "a", "b", "w", "p"),
     ("body", "score")),
    ({"extra_columns": ["body", "_id"], "prefer": "body"}, ("_id", "body"), ("body", "score")),  # each once
    ({"output_column": "s", "also_raw": True}, ("_id", "body"), ("body", "s", "s_raw")),
])
def test_requires_and_provides_come_from_the_declared_params(params, requires, provides):
    op = PairScore(PairParams(**params), text_column="body")
    assert (op.requires, op.provides) == (requires, provides)


def test_class_columns_stay_the_declaration():
    PairScore(text_column="body")
    assert PairScore.requires == ("_id",) and PairScore.provides == (TEXT,)
    assert PairScore().requires == ("_id", "text")


def test_a_column_parameter_of_another_type_is_a_bug():
    class Bad(Params):
        limit: int = reads_column(3, "Not a column name.")

    class BadOp(Map):
        Params = Bad

    with pytest.raises(TypeError, match="a column parameter holds a name"):
        BadOp()


def _catalog() -> list[type]:
    from curate import registry

    return [registry.get(name) for name in registry.names()]


def test_every_global_fit_returns_a_fit_state():
    """The engine saves, loads, ships and summarises a fit's state through FitState alone."""
    import typing

    from curate.ops import FitState, Global

    for cls in _catalog():
        if issubclass(cls, Global):
            returned = typing.get_type_hints(cls.fit).get("return")
            kinds = typing.get_args(returned) or (returned,)
            assert kinds and all(isinstance(k, type) and issubclass(k, FitState) for k in kinds), cls.name


def test_every_operator_says_where_it_runs_with_resources_alone():
    from curate.ops import Resources

    for cls in _catalog():
        assert isinstance(cls.resources, Resources), cls.name
        assert not {"resource_class", "runs_on"} & set(dir(cls)), cls.name


def test_gpus_run_in_the_model_pool():
    from curate.ops import Resources

    assert Resources(gpus=1, pool="model").gpus == 1
    with pytest.raises(ValueError, match="pool='model'"):
        Resources(gpus=1)
