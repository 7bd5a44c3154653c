"""One step over a task's batches: the operator's answer checked against its contract, removed
rows traced, counts kept (the accounting every engine shares); and a stage with an async step
(LLM calls), whose batches are in flight at once but committed in input order."""

from __future__ import annotations

import asyncio
import gc
import inspect
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Protocol, cast

import numpy as np
import pyarrow as pa

from curate.engine.tasks import expand
from curate.engine.tasks.context import Progress, StageContext, load_state, prepared_name
from curate.engine.tasks.plan import Task
from curate.errors import InputError
from curate.ops import Filter, Global, Map, Operator, Result, Verdict
from curate.recipe import Step
from curate.result import to_result
from curate.trace import StepStats, count_reasons, removed_rows


class TraceSink(Protocol):
    """Where removed rows go: a task's trace writers, or a batch in flight's own list."""

    def write(self, label: str, batch: pa.RecordBatch) -> None: ...


def check_columns(names: list[str], op: Operator, step, text_column: str, where: str) -> None:
    """A step that needs a column the data lacks is a user error naming step, column and what is there."""
    missing = [c for c in op.requires if c not in names]
    if missing:
        hint = " (input.text_column)" if missing[0] == text_column else ""
        raise InputError(
            f"{where}: steps[{step.index - 1}].{step.name} needs column '{missing[0]}'{hint}, "
            f"which is not there; columns are: {', '.join(n for n in names if n != '_ord')}"
        )


def _apply(op: Operator, batch: pa.RecordBatch, ctx: StageContext):
    if isinstance(op, Filter):
        return op.keep(batch)
    if isinstance(op, Map):
        return op.process(batch)
    return cast(Global, op).apply(batch, load_state(ctx))  # neither a Filter nor a Map: a Global


def run_step(
    op: Operator, step, batch: pa.RecordBatch, ctx: StageContext, stats: StepStats, traces: TraceSink
) -> pa.RecordBatch:
    started = time.perf_counter()
    return _settle(op, step, batch, _apply(op, batch, ctx), started, ctx, stats, traces)


def _settle(
    op: Operator,
    step,
    batch: pa.RecordBatch,
    answer,
    started: float,
    ctx: StageContext,
    stats: StepStats,
    traces: TraceSink,
) -> pa.RecordBatch:
    """A step's answer for `batch`, once it has one (an async step's awaited), as both loops take it:
    accounted for, and the step's time since `started` added to its stats."""
    out = account(op, step, batch, answer, ctx, stats, traces)
    stats.seconds += time.perf_counter() - started
    return out


def _check_first(batch: pa.RecordBatch, op: Operator, step, ctx: StageContext, task: Task) -> None:
    """The task's first batch shows whether the step's columns are there (an error names the input file)."""
    where = task.sources[0].path if task.sources else "the data"
    check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, where)


def account(
    op: Operator, step, batch: pa.RecordBatch, answer, ctx: StageContext, stats: StepStats, traces: TraceSink
) -> pa.RecordBatch:
    """Read what a step returned for `batch` as a Result (curate/result.py checks it against the
    contract), trace what it removed, count."""
    result = to_result(step, op, batch, answer)
    for name, count in op.take_counts().items():
        stats.counts[name] = stats.counts.get(name, 0) + int(count)
    if op.changes_rows:  # a 1 -> n Map, or a Global that grows rows (self_instruct)
        return _expand(step, batch, result, ctx, stats, traces)
    out = result.batch
    if result.verdict is not None:
        out = _remove(out, result.verdict, step, ctx, stats, traces)
    stats.rows_in += batch.num_rows
    stats.rows_out += out.num_rows
    return out


def _expand(
    step, parents: pa.RecordBatch, result: Result, ctx: StageContext, stats: StepStats, traces: TraceSink
) -> pa.RecordBatch:
    """A 1 -> n (or n -> 1) step: children get their `_id`, dropped input rows go to the trace."""
    children, verdict = result
    assert verdict is not None  # to_result: an expanding step's result has its verdict
    idx = expand.parent_index(step, parents, children, verdict)
    _remove(parents, verdict, step, ctx, stats, traces)
    stats.rows_in += parents.num_rows
    stats.expanded += int(verdict.keep.sum())
    stats.rows_out += children.num_rows
    return expand.with_ids(children, expand.child_ids(parents, idx))


def _remove(
    batch: pa.RecordBatch, verdict: Verdict, step, ctx: StageContext, stats: StepStats, traces: TraceSink
) -> pa.RecordBatch:
    """The rows the verdict keeps; the others go to the step's trace and its stats."""
    keep = verdict.keep
    removed = int((~keep).sum())
    if removed:
        gone = removed_rows(batch, keep, verdict.reason, verdict.detail, step.label, ctx.recipe.output.trace_rows)
        traces.write(step.label, gone)
        for reason, count in count_reasons(gone.column("reason")).items():
            stats.reasons[reason] = stats.reasons.get(reason, 0) + count
        stats.removed += removed
        batch = batch.filter(pa.array(keep))
    return batch


def fail_all(
    batch: pa.RecordBatch, step, ctx: StageContext, stats: StepStats, traces: TraceSink, error: str
) -> pa.RecordBatch:
    """Every row to the step's trace: its worker died on this task twice (see runner.py)."""
    verdict = Verdict(np.zeros(batch.num_rows, bool), "worker_failed", error)
    stats.rows_in += batch.num_rows
    return _remove(batch, verdict, step, ctx, stats, traces)


def prepare(
    op: Global, step: Step, batch: pa.RecordBatch, ctx: StageContext, stats: dict[str, StepStats]
) -> pa.RecordBatch:
    """Run the next Global's `prepare` on rows about to be written; its seconds count as that step's."""
    started = time.perf_counter()
    check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, "the data")
    for name, column in (op.prepare(batch) or {}).items():
        batch = batch.append_column(prepared_name(step, name), column)
    stats.setdefault(f"prepare:{step.label}", StepStats()).seconds += time.perf_counter() - started
    return batch


def step_stream(
    batches: Iterator[pa.RecordBatch],
    op: Operator,
    step: Step,
    ctx: StageContext,
    task: Task,
    stats: dict[str, StepStats],
    traces: TraceSink,
    progress: Progress | None,
) -> Iterator[pa.RecordBatch]:
    """One step over a stream of batches, re-sized first to the step's batch_rows when it has one."""
    rows = step.rows_per_batch()
    checked = False
    for batch in rebatch(batches, rows) if rows else batches:
        if batch.num_rows == 0:
            continue
        if not checked:
            _check_first(batch, op, step, ctx, task)
            checked = True
        before = batch.num_rows
        batch = run_step(op, step, batch, ctx, stats.setdefault(step.label, StepStats()), traces)
        if progress:
            progress(step.label, before, batch.num_rows)
        yield batch


def rebatch(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The same rows, in the same order, in batches of `rows` (the last may be shorter; so may one
    before a change of schema, such as a column that was all null in earlier batches)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if pending and batch.schema != pending[0].schema:
            yield pa.concat_batches(pending)
            pending, count = [], 0
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            whole = pa.concat_batches(pending)
            start = 0
            while whole.num_rows - start >= rows:
                yield whole.slice(start, rows)
                start += rows
            pending = [whole.slice(start)] if start < whole.num_rows else []
            count = whole.num_rows - start
    if count:
        yield pa.concat_batches(pending)


# Batches an I/O stage's worker keeps in flight at once (each may hold thousands of requests),
# so the step's own concurrency limit, not a batch boundary, bounds what is outstanding.
IO_BATCHES_IN_FLIGHT = 4


class _InFlight:
    """What one batch in flight produced, kept apart until its turn: counts, trace rows, progress."""

    def __init__(self) -> None:
        self.stats: dict[str, StepStats] = {}
        self.traced: list[tuple[str, pa.RecordBatch]] = []
        self.progress: list[tuple[str, int, int]] = []

    def write(self, label: str, batch: pa.RecordBatch) -> None:  # a TraceSink
        self.traced.append((label, batch))


async def _through_steps(
    ctx: StageContext, task: Task, ops: list[Operator], batch: pa.RecordBatch, first: bool
) -> tuple[pa.RecordBatch, _InFlight]:
    mine = _InFlight()
    for op, step in zip(ops, ctx.stage.all_steps):
        if batch.num_rows == 0:
            break
        if first:
            _check_first(batch, op, step, ctx, task)
        started, before = time.perf_counter(), batch.num_rows
        answer = _apply(op, batch, ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        batch = _settle(op, step, batch, answer, started, ctx, mine.stats.setdefault(step.label, StepStats()), mine)
        mine.progress.append((step.label, before, batch.num_rows))
    return batch, mine


async def run_async(
    ctx: StageContext,
    task: Task,
    ops: list[Operator],
    batches,
    stats: dict[str, StepStats],
    traces: TraceSink,
    progress: Progress | None,
    commit: Callable[[pa.RecordBatch], None],
) -> None:
    """A stage with an async step: up to IO_BATCHES_IN_FLIGHT batches go through the steps at
    once; each one's trace, counts and output are committed in input order, so the result is
    the same as one batch at a time."""
    in_flight: list[asyncio.Task] = []

    def finish(done: tuple[pa.RecordBatch, _InFlight]) -> None:
        batch, mine = done
        for label, gone in mine.traced:
            traces.write(label, gone)
        for label, s in mine.stats.items():
            stats.setdefault(label, StepStats()).add(s)
        if progress:
            for event in mine.progress:
                progress(*event)
        commit(batch)

    try:
        with _fewer_collections():
            for i, batch in enumerate(batches):
                in_flight.append(asyncio.ensure_future(_through_steps(ctx, task, ops, batch, first=i == 0)))
                if len(in_flight) >= IO_BATCHES_IN_FLIGHT:
                    finish(await in_flight.pop(0))
            while in_flight:
                finish(await in_flight.pop(0))
    finally:
        for pending in in_flight:
            pending.cancel()


_collecting_less = 0  # tasks of an async stage under way in this process (several at once: engine.py)
_thresholds = gc.get_threshold()  # the collector's own, put back when the last of them ends


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """The garbage collector's thresholds raised while an async stage's batches are in flight: they
    hold thousands of live requests, which the default thresholds rescan every few hundred
    allocations (a third of the CPU of 100k requests). A young collection every 100,000 objects, not
    20,000: its cost is mostly those live batches, rescanned each time (generate_qa, 100k requests:
    0.4 s of collections instead of 0.85 s). Set by the first task of those under way at once, put
    back by the last."""
    global _collecting_less, _thresholds
    if not _collecting_less:
        _thresholds = gc.get_threshold()
        gc.set_threshold(100_000, 20, 20)
    _collecting_less += 1
    try:
        yield
    finally:
        _collecting_less -= 1
        if not _collecting_less:
            gc.set_threshold(*_thresholds)


_loop: asyncio.AbstractEventLoop | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """One event loop per worker process, kept across tasks (operators may hold connections on it)."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop
