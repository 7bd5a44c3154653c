"""What every task of a stage shares: the stage's context, and its operators and fitted state,
built once per worker process and kept for the stage's other tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from curate.engine.rundir.layout import StageLayout
from curate.engine.tasks.plan import Stage
from curate.io import input_schema
from curate.ops import FitState, Operator
from curate.recipe import Recipe, Step

READ_STEP = "00_read"
Progress = Callable[[str, int, int], None]  # step label, rows in, rows out
# A progress event whose label is this, a stage's index, ":" and the name of a task of it: that
# task read this many more bytes of its input (rows in), so a stage's bytes read move while its
# tasks run, not only as they end. (Names repeat between stages: part-00000 is in each.)
READ_BYTES = "read-bytes:"


@dataclass(frozen=True)
class StageContext:
    """Pickled once per task to the worker."""

    recipe: Recipe
    stage: Stage
    layout: StageLayout  # this stage's files under _work/
    final: bool  # the last stage writes the curated data (internal columns dropped)
    next_global: Step | None = None  # the next stage's Global step, whose `prepare` runs here
    observers: tuple = ()  # the run's observers (curate.observers), fed by the tasks
    # the input's schema as the preflight decided it from every file (curate/io/input_schema.py),
    # serialised: stage 0's readers conform what they read to it
    input_schema_bytes: bytes | None = None

    @property
    def input_schema(self):
        return input_schema.deserialize(self.input_schema_bytes)


_operators: dict[tuple[str, int], list[Operator]] = {}
_states: dict[str, FitState] = {}


def operators_for(ctx: StageContext) -> list[Operator]:
    """The stage's operators (and, last, the next Global's, for `prepare`), built once per worker."""
    key = (ctx.layout.root, ctx.stage.index)
    if key not in _operators:
        steps = list(ctx.stage.all_steps) + ([ctx.next_global] if ctx.next_global else [])
        ops = [step.build(ctx.recipe) for step in steps]
        for op in ops:
            op.setup()
        _operators[key] = ops
    return _operators[key]


def load_state(ctx: StageContext) -> FitState:
    """The stage's fitted Global state, loaded once per worker."""
    path = ctx.layout.state
    if path not in _states:
        with open(path, "rb") as f:
            _states[path] = FitState.load(f.read())
    return _states[path]


def teardown(ctx: StageContext) -> None:
    """The stage is done: its operators free what they loaded (models, GPU memory)."""
    for op in _operators.pop((ctx.layout.root, ctx.stage.index), []):
        op.teardown()


def prepared_name(step: Step, name: str) -> str:
    """Where a step's prepared column is stored: unique per step, internal (dropped from output)."""
    return f"_prepared{step.index}_{name}"
