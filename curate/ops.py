"""The operator contract: Map, Filter and Global operators over pyarrow.RecordBatch.

An operator is a class with a pydantic `Params` model, the columns it `requires` and
`provides`, and the `resources` it needs. It never knows which engine runs it. Parameters that
name columns are declared with `reads_column` / `writes_column`, and the base class derives
`requires` / `provides` from them (see Operator).

- Map.process(batch) -> batch: adds or transforms columns (or, with `changes_rows`, makes
  new rows: Result(children, Verdict over the input rows)).
- Filter.keep(batch) -> Verdict: which rows stay; the engine traces the others with the reason.
- Global.fit(batches, workdir, parallel) -> FitState, then Global.apply(batch, state) -> Verdict | batch,
  for decisions that need the whole dataset (dedup, clustering, pruning). `parallel` runs the
  fit's parallel pieces on the engine's workers (local processes or Ray tasks).

Each of these answers is a Result or one of its parts (curate/result.py). What an operator
loads once per worker is a `loaded` attribute (curate/loaded.py), which the engine loads and
frees; where it runs and what it needs is its `resources`.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

# The contract's parts live in their own modules; operators import them from here (`X as X`: a re-export).
from curate.fit_state import Decisions as Decisions, FitState as FitState, Value as Value
from curate.loaded import free_all, load_all, loaded as loaded, without_loaded
from curate.result import Result as Result, Verdict as Verdict


class Params(BaseModel):
    """Base of every operator's parameters; unknown keys are errors.

    A field declared with `Field(..., json_schema_extra=OPERATIONAL)` says how to run, not what
    to compute (an endpoint's URL, a concurrency limit): it is left out of the recipe's
    fingerprint, so changing it does not stop `--resume`. One declared with `reads_column(...)` or
    `writes_column(...)` names columns the operator reads or writes (its `requires` / `provides`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(BaseModel):
    """Where one instance of the operator runs and what it needs; the plan sizes every engine's
    workers from this (a stage's pool and its Policy, curate/engine/tasks/plan.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cpus: float = 1.0
    gpus: float = 0.0
    memory_gb: float | None = None
    # "cpu": inside every task process. "model": in a model worker pool (one process per visible
    # GPU, else CPU model workers) that loads the model once. "io": waits on the network (LLM
    # endpoints), in a stage of its own on few processes, its `process` async. GPUs need "model".
    pool: Literal["cpu", "model", "io"] = "cpu"

    @model_validator(mode="after")
    def _gpus_in_model_pool(self) -> "Resources":
        if self.gpus > 0 and self.pool != "model":
            raise ValueError(f"gpus={self.gpus} runs in the model pool: say pool='model'")
        return self


OPERATIONAL = {"operational": True}


class TextColumn:
    """`TEXT`: the operator's text column (the recipe's input.text_column) in a class's fixed
    `requires` / `provides`; each instance gets the column's name in its place."""

    def __repr__(self) -> str:
        return "TEXT"


TEXT = TextColumn()


def reads_column(
    default: Any = ..., description: str | None = None, *, instead_of_text: bool = False, **field: Any
) -> Any:
    """A Params field naming input columns: a name, a list of names or a dict keyed by names (None
    or empty: none). The operator `requires` them. `instead_of_text`: the field replaces the text
    column, which the operator reads when no such field of its Params names a column."""
    extra: dict[str, Any] = {"column": "reads", "instead_of_text": True} if instead_of_text else {"column": "reads"}
    return Field(default, description=description, json_schema_extra=extra, **field)


def writes_column(default: Any = ..., description: str | None = None, **field: Any) -> Any:
    """A Params field naming output columns (as `reads_column`); the operator `provides` them."""
    return Field(default, description=description, json_schema_extra={"column": "writes"}, **field)


def column_role(field: FieldInfo) -> str | None:
    """ "reads" or "writes" for a field declared with reads_column / writes_column, else None."""
    extra = field.json_schema_extra
    role = extra.get("column") if isinstance(extra, dict) else None
    return role if isinstance(role, str) else None


def _names(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple, dict)):  # a dict (column -> weight, type, new name) by its keys
        return tuple(value)
    raise TypeError(f"a column parameter holds a name, a list or a dict of names, not {value!r}")


def declared_columns(params: Params, role: str, text_column: str) -> tuple[str, ...]:
    """The columns `params`' fields declared with `role` name, in field order; the text column in
    place of the `instead_of_text` fields when none of them names one."""
    fields = {name: info for name, info in type(params).model_fields.items() if column_role(info) == role}
    named = {name: _names(getattr(params, name)) for name in fields}
    instead = [
        name
        for name, info in fields.items()  # a column field's json_schema_extra is a dict
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("instead_of_text")
    ]
    if instead and not any(named[name] for name in instead):
        named[instead[0]] = (text_column,)
    return tuple(column for names in named.values() for column in names)


# Params under a name that Operator's own `Params` attribute does not shadow in its annotations
_BaseParams = Params


class Operator:
    """Base of all operators. Subclasses set `name`, `Params` and, as needed, the rest."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params
    # Where it runs and what it needs; one whose needs depend on its params overrides resources_for.
    resources: ClassVar[Resources] = Resources()
    # Columns the operator reads and writes. On the class: those it always reads and writes (`TEXT`
    # for the text column); each instance adds those its params name (reads_column, writes_column)
    # and those computed_requires / computed_provides return.
    requires: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()
    # Rows per batch the operator wants (a model's window, an API's page); the engine re-sizes the
    # stream before the step. A recipe step's `batch_rows:` overrides it; None: the input's batches.
    batch_rows: ClassVar[int | None] = None
    # For an operator whose result depends on which rows share a batch (shuffle permutes each one):
    # the parameter whose value is its step's rows per batch. The engine then cuts the stream into
    # batches of exactly that many rows (fewer only at the end of a task, or where a step before it
    # changed the batches' schema), so the output does not depend on the batch sizes before it; a
    # recipe's `batch_rows:` for the step is refused.
    batch_rows_param: ClassVar[str | None] = None
    # The step makes new rows (a Map's chunks, a Global's grown instructions): its answer is
    # Result(children, Verdict over its input rows); see Map.
    changes_rows: ClassVar[bool] = False

    def __init__(self, params: _BaseParams | None = None, *, seed: int = 0, text_column: str = "text"):
        self.params = params if params is not None else self.Params()
        self.seed = seed
        self.text_column = text_column
        self.requires = self._columns(type(self).requires, "reads", self.computed_requires())
        self.provides = self._columns(type(self).provides, "writes", self.computed_provides())

    def _columns(self, fixed: tuple, role: str, computed: tuple[str, ...]) -> tuple[str, ...]:
        fixed = tuple(self.text_column if c is TEXT else c for c in fixed)
        # The same column named twice (a key column that is also `prefer`) is read once.
        return tuple(dict.fromkeys((*fixed, *declared_columns(self.params, role, self.text_column), *computed)))

    # Called by Operator.__init__, before a subclass's own __init__ goes on: use params and
    # text_column (and what derives from them) only.
    def computed_requires(self) -> tuple[str, ...]:
        """Input columns that follow from the params without a parameter naming them (the columns
        a prompt template mentions); they come after the declared ones. Default: none."""
        return ()

    def computed_provides(self) -> tuple[str, ...]:
        """Output columns that follow from the params without a parameter naming them (the score
        columns a `scores: true` adds); they come after the declared ones. Default: none."""
        return ()

    def setup(self) -> None:
        """Called by the engine in each worker before the first batch (never by the operator):
        loads every `loaded` attribute. An operator that needs none loaded there overrides it."""
        load_all(self)

    def teardown(self) -> None:
        """Called by the engine when the stage is done: frees what was loaded (models, GPU memory)."""
        free_all(self)

    def __getstate__(self) -> dict:  # a loaded model never travels between processes
        return without_loaded(self)

    def take_counts(self) -> dict[str, int]:
        """Counts the operator kept since the last call (e.g. redactions per kind, tokens), then
        forgets them; the engine sums them over tasks into the manifest's step entry. Default: none."""
        return {}

    @classmethod
    def resources_for(cls, params: _BaseParams) -> Resources:
        """What the engine reads: `resources`, unless the needs depend on the parameters (an LLM
        over HTTP, or a local one), where the operator overrides this."""
        return cls.resources

    @classmethod
    def env_vars(cls, params: _BaseParams) -> tuple[str, ...]:
        """Environment variables the operator reads where it runs (an API key's name): an engine
        whose workers are on other machines passes them along. Default: none."""
        return ()

    def packages(self) -> tuple[str, ...]:
        """Optional packages (import names) the operator imports only where it runs (in `setup`,
        in its workers): preflight checks that they are installed, and names the extra that
        installs one that is not (curate/extras.py). Default: none."""
        return ()

    def preflight(self) -> None:
        """Check what the operator needs from outside the data (an endpoint answers, its key is
        accepted), once, before any row is processed; raise CurateError. Default: nothing."""

    # Preflight (curate.preflight) walks the steps with these before any data is processed.
    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The columns after this step, given those it gets. Default: they pass through, and each
        of `provides` not among them is added with the type `null` (its type shows only in data)."""
        for name in self.provides:
            if name not in schema.names:
                schema = schema.append(pa.field(name, pa.null()))
        return schema

    def check_schema(self, schema: pa.Schema) -> None:
        """Check the parameters against the columns this step will get (their names and types);
        raise RecipeError(parameter name, message). Default: nothing to check beyond `requires`."""

    def columns_read(self) -> tuple[str, ...]:
        """The columns the operator reads from its batches. Preflight checks that every input file
        gives those it reads from the input the same kind of type. Default: `requires`."""
        return self.requires

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params!r})"


class Map(Operator):
    """`process` returns the new batch, or Result(batch, Verdict) to send rows it cannot handle (of
    the returned batch) to the trace with a reason.

    A Map with `changes_rows = True` turns each input row into any number of rows (chunks,
    rephrasings; or several into one): `process` returns Result(children, Verdict over its *input*
    rows). Each child has `_parent_id`, the `_id` of the input row it came from; an input row
    the verdict keeps must have children, one it drops has none and is traced with its reason.
    The engine gives children their `_id` and checks all this (curate/engine/tasks/expand.py).

    `process` may be `async def` (I/O-bound operators: `Resources(pool="io")`): a worker then
    keeps several batches in flight at once, and their results are written in input order."""

    kind = "map"

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        raise NotImplementedError


class Filter(Operator):
    """`keep` returns a Verdict, or Result(batch, Verdict) to also add columns (e.g. the scores it
    measured) to the rows it keeps."""

    kind = "filter"

    def keep(self, batch: pa.RecordBatch) -> Verdict | Result:
        raise NotImplementedError


def serial_map(fn: Callable, *iterables) -> list:
    return [fn(*args) for args in zip(*iterables)]


@dataclass(frozen=True)
class Parallel:
    """What a Global's `fit` may hand to the engine's workers: `map(fn, *iterables)` runs `fn`
    over the items (local worker processes, or Ray tasks on any node) and returns the results in
    input order. `fn` must be a top-level function and its arguments must pickle; large arrays
    go under the fit's workdir (storage every worker sees) and are passed as paths. `width`: how
    many pieces run at once, to size what is handed over at a time. `threads`: the cores one
    piece may use (a worker process, or a Ray task, has one of its own); None: the fit's own
    choice, for pieces run one by one in its process. A fit's result must not depend on `width`
    or `threads`: its pieces and their merge order are fixed by the data alone. `memory_gb`: what
    the fit may hold at once, its pieces in flight included (the recipe's budget); past it a fit
    spills to its workdir, to the same result. None: no budget (the fit's own parameters decide).
    `pieces_per_call`: how many pieces a worker gets from one `map` call of `stream`, the engine's
    choice: 2 where a call is cheap (workers that stay up); more where each call starts its
    workers afresh (a Slurm job array: a Python process importing curate per array task), at the
    cost of that many pieces held at once. `calls_in_flight`: how many of `stream`'s `map` calls
    run at once, the engine's choice too: 1 where workers stay up; 2 where a call's start is slow
    (a job array's submission and its tasks' start), so that the next call's tasks are queued and
    take a core as soon as one of this call's ends, at the cost of a window more held."""

    map: Callable[..., list] = serial_map
    width: int = 1
    threads: int | None = None
    memory_gb: float | None = None
    pieces_per_call: int = 2
    calls_in_flight: int = 1

    def budget_gb(self, own: float) -> float:
        """What one piece, or the fit's own process, may hold: the fit's parameter `own`, within
        an equal share of the budget between the pieces in flight and the fit's process."""
        return own if self.memory_gb is None else min(own, self.memory_gb / (self.width + 1))

    def stream(self, fn: Callable, items: Iterable) -> Iterator:
        """`fn(item)` over a long or lazy `items`, handed over pieces_per_call x width at a time,
        results in order: what is in flight stays bounded however many items there are
        (calls_in_flight + 1 windows taken from `items` and not yet yielded, at most).

        With several pieces at once, the next window is read from `items` while the calls in
        flight run and is handed over before the caller gets the oldest call's results: the
        workers do not wait while this process reads the input and stores what the pieces
        returned (at ten million documents a signature pass's two workers had run at ~80% of a
        core each)."""
        items = iter(items)
        size = self.pieces_per_call * self.width
        if self.width == 1:  # one piece at a time, in this process or one worker: nothing to overlap
            while window := list(islice(items, size)):
                yield from self.map(fn, window)
            return
        calls: deque[Future] = deque()  # the map calls in flight, oldest first
        following: list | None = None  # the next window, once read ([]: the items are over)
        try:
            while True:
                if following is None:
                    following = list(islice(items, size))
                if following and len(calls) < self.calls_in_flight:
                    calls.append(_ahead().submit(self.map, fn, following))
                    following = None
                    continue
                if not calls:
                    return
                done = calls.popleft().result()
                if following:  # it goes out before the caller gets this call's results
                    calls.append(_ahead().submit(self.map, fn, following))
                    following = None
                yield from done
        finally:  # stopped early (an error): the maps in flight end with the workers, which the run stops
            for call in calls:
                call.cancel()


MAX_CALLS_IN_FLIGHT = 4  # what any engine asks for fits in the pool of threads below
_stream_thread: ThreadPoolExecutor | None = None


def _ahead() -> ThreadPoolExecutor:
    """The threads that hand streamed windows to the map (one per call in flight). They live as
    long as the process: a pool starts its worker processes on demand, from the thread that gives it work,
    and the kernel kills a worker when the thread that started it ends (lifetime.py)."""
    global _stream_thread
    if _stream_thread is None:
        _stream_thread = ThreadPoolExecutor(MAX_CALLS_IN_FLIGHT, thread_name_prefix="curate-stream")
    return _stream_thread


SERIAL = Parallel()


class Global(Operator):
    """Sees the whole dataset in `fit`, then decides batch by batch in `apply`.

    Batches given to `fit` and `apply` carry `_id` and `_ord` (the row's position in the
    stage input, 0..n-1, the same in both passes) besides the columns in `requires`.
    `fit` may write large state under `workdir`; it returns a FitState (curate/fit_state.py: the
    standard Decisions or Value, or a subclass), which lists in `files()` the files under
    `workdir` that `apply` reads (the engine ships exactly those to workers that do not see the
    run's disk). Work that splits into independent pieces goes through `parallel` (see
    Parallel); the runner passes its executor's; called directly, a fit runs its pieces one by one.
    """

    kind = "global"
    # Input columns `fit` reads besides what `prepare` made; None means `requires`.
    fit_columns: tuple[str, ...] | None = None

    def prepare(self, batch: pa.RecordBatch) -> dict[str, pa.Array] | None:
        """Optional per-row work for `fit` (hashing, signatures), run in parallel by the workers
        of the stage before, as each batch is written. The columns returned are stored with the
        rows and handed to `fit` under the same names, so `fit` need not read the text again."""
        return None

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> FitState:
        raise NotImplementedError

    def apply(self, batch: pa.RecordBatch, state: FitState) -> Verdict | pa.RecordBatch | Result:
        raise NotImplementedError


# The catalog as the Python API offers it: `curate.ops` is this module, so `curate.ops.names()`
# and `curate.ops.describe(name)` live here (curate/api.py does the work, imported when called).
def names() -> list[str]:
    """Every registered operator's name, sorted (what `curate ops` lists)."""
    from curate.api import operator_names

    return operator_names()


def describe(name: str):
    """One operator's kind, docs and parameters (a curate.api.OperatorInfo; `print()` it)."""
    from curate.api import describe_operator

    return describe_operator(name)
