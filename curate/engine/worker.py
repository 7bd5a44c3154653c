"""Run one task: read its rows, pass them through the stage's steps, write shards and trace.

A task's outputs appear under their final names only once complete, and its `done` marker
(with its stats) is written last, after its summary for the run's dataset metrics (recipe
`metrics:`), so a killed task is simply run again on resume.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import inspect
import json
import os
import pickle
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.engine import expand
from curate.engine.expand import OperatorBug
from curate.engine.failpoints import failpoint
from curate.engine.plan import Stage, Task
from curate.engine.run_dir import hold_worker_lock
from curate.errors import CurateError, InputError, NoSpace
from curate.io.readers import BadRows, read_source
from curate.io.writer import ShardWriter, atomic_write_bytes
from curate.ops import Filter, Global, Map, Operator, Verdict
from curate.recipe import Recipe, Step
from curate.trace import StepStats, count_reasons, removed_rows

if TYPE_CHECKING:
    from operators.score.run_metrics import Side

READ_STEP = "00_read"
Progress = Callable[[str, int, int], None]  # step label, rows in, rows out


@dataclass(frozen=True)
class StageContext:
    """What every task of a stage needs; pickled once per task to the worker."""

    recipe: Recipe
    stage: Stage
    work: Path  # this stage's work directory
    final: bool  # the last stage writes the curated data (internal columns dropped)
    next_global: Step | None = None  # the next stage's Global step, whose `prepare` runs here


_operators: dict[tuple[str, int], list[Operator]] = {}
_states: dict[str, object] = {}


def stage_dir(work: Path, stage: int) -> Path:
    return work / f"stage-{stage}"


def done_path(ctx: StageContext, task_name: str) -> Path:
    return ctx.work / "done" / f"{task_name}.json"


def _operators_for(ctx: StageContext) -> list[Operator]:
    """The stage's operators (and, last, the next Global's, for `prepare`), built once per worker."""
    key = (str(ctx.work), ctx.stage.index)
    if key not in _operators:
        steps = list(ctx.stage.all_steps) + ([ctx.next_global] if ctx.next_global else [])
        ops = [step.build(ctx.recipe) for step in steps]
        for op in ops:
            op.setup()
        _operators[key] = ops
    return _operators[key]


def load_state(ctx: StageContext):
    path = str(ctx.work / "state.pkl")
    if path not in _states:
        with open(path, "rb") as f:
            _states[path] = pickle.load(f)
    return _states[path]


def _rows(ctx: StageContext, task: Task, stats: dict[str, StepStats], trace: "Traces") -> Iterator[pa.RecordBatch]:
    """The task's input batches; stage 0 reads sources (bad rows go to the `read` trace)."""
    spec = ctx.recipe.input
    if task.sources:
        remaining = task.limit
        read = stats.setdefault(READ_STEP, StepStats())
        for source in task.sources:
            for batch, bad in read_source(source, id_column=spec.id_column, batch_rows=spec.batch_rows,
                                          on_bad_row=spec.on_bad_row):
                if bad is not None and len(bad):
                    trace.write(READ_STEP, _bad_rows_batch(source.path, bad))
                    read.rows_in += len(bad)
                    read.removed += len(bad)
                    read.reasons["unparseable"] = read.reasons.get("unparseable", 0) + len(bad)
                if batch is None or batch.num_rows == 0:
                    continue
                if remaining is not None:
                    batch = batch.slice(0, remaining)
                    remaining -= batch.num_rows
                read.rows_in += batch.num_rows
                read.rows_out += batch.num_rows
                yield batch
                if remaining == 0:
                    return
        return
    offset = task.ord_offset
    for shard in task.shards:
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=spec.batch_rows):
            ords = pa.array(np.arange(offset, offset + batch.num_rows, dtype=np.int64))
            offset += batch.num_rows
            yield batch.append_column("_ord", ords)


def _bad_rows_batch(path: str, bad: BadRows) -> pa.RecordBatch:
    n = len(bad)
    return pa.RecordBatch.from_pydict({
        "_id": pa.array([f"{path}:{line}" for line in bad.line], pa.string()),
        "step": pa.array([READ_STEP] * n, pa.string()),
        "reason": pa.array(["unparseable"] * n, pa.string()),
        "detail": pa.array([f"{path}, line {line}: {err}" for line, err in zip(bad.line, bad.error)], pa.string()),
        "row": pa.StructArray.from_arrays([pa.array(bad.raw, pa.string())], names=["raw"]),
    })


class Traces:
    """The task's trace writers, one per step that removed something."""

    def __init__(self, ctx: StageContext, task: Task):
        self.dir = ctx.work / "trace"
        self.task = task
        self.writers: dict[str, ShardWriter] = {}  # one trace shard per step, however large

    def write(self, label: str, batch: pa.RecordBatch) -> None:
        if label not in self.writers:
            self.writers[label] = ShardWriter(self.dir / label, self.task.name, shard_bytes=1 << 40)
        self.writers[label].write(batch)

    def close(self) -> None:
        for w in self.writers.values():
            w.close()

    def files(self) -> list[str]:
        """The shards written, as `<step>/<name>` under the stage's trace directory."""
        return [f"{label}/{p.name}" for label, w in self.writers.items() for p in w.paths]

    def abort(self) -> None:
        for w in self.writers.values():
            w.abort()


def check_columns(names: list[str], op: Operator, step, text_column: str, where: str) -> None:
    """A step that needs a column the data lacks is a user error naming step, column and what is there."""
    missing = [c for c in op.requires if c not in names]
    if missing:
        hint = " (input.text_column)" if missing[0] == text_column else ""
        raise InputError(f"{where}: steps[{step.index - 1}].{step.name} needs column '{missing[0]}'{hint}, "
                         f"which is not there; columns are: {', '.join(n for n in names if n != '_ord')}")


def _apply(op: Operator, batch: pa.RecordBatch, ctx: StageContext):
    if isinstance(op, Filter):
        return op.keep(batch)
    if isinstance(op, Map):
        return op.process(batch)
    return op.apply(batch, load_state(ctx))


def run_step(op: Operator, step, batch: pa.RecordBatch, ctx: StageContext, stats: StepStats,
             traces: Traces) -> pa.RecordBatch:
    started = time.perf_counter()
    out = account(op, step, batch, _apply(op, batch, ctx), ctx, stats, traces)
    stats.seconds += time.perf_counter() - started
    return out


def account(op: Operator, step, batch: pa.RecordBatch, result, ctx: StageContext, stats: StepStats,
            traces: Traces) -> pa.RecordBatch:
    """Check what a step returned for `batch` against the contract, trace what it removed, count."""
    rows_in = batch.num_rows
    for name, count in op.take_counts().items():
        stats.counts[name] = stats.counts.get(name, 0) + int(count)
    if isinstance(op, Map) and op.changes_rows:
        return _expand(step, batch, result, ctx, stats, traces)
    verdict = None
    if isinstance(result, Verdict):
        verdict = result
    elif isinstance(result, tuple):
        batch, verdict = result
    else:
        batch = result
    if isinstance(op, Map) and batch.num_rows != rows_in:
        raise OperatorBug(step, f"returned {batch.num_rows} rows for {rows_in}; a Map that changes the row count "
                                f"sets changes_rows = True and returns a verdict over its input rows")
    if verdict is not None:
        if len(verdict.keep) != batch.num_rows:
            raise OperatorBug(step, f"returned a verdict for {len(verdict.keep)} rows, the batch has {batch.num_rows}")
        batch = _remove(batch, verdict, step, ctx, stats, traces)
    stats.rows_in += rows_in
    stats.rows_out += batch.num_rows
    return batch


def _expand(step, parents: pa.RecordBatch, result, ctx: StageContext, stats: StepStats,
            traces: Traces) -> pa.RecordBatch:
    """A 1 -> n (or n -> 1) step: children get their `_id`, dropped input rows go to the trace."""
    children, verdict = expand.split_result(step, result, parents.num_rows)
    idx = expand.parent_index(step, parents, children, verdict)
    _remove(parents, verdict, step, ctx, stats, traces)
    stats.rows_in += parents.num_rows
    stats.expanded += int(verdict.keep.sum())
    stats.rows_out += children.num_rows
    return expand.with_ids(children, expand.child_ids(parents, idx))


def _remove(batch: pa.RecordBatch, verdict: Verdict, step, ctx: StageContext, stats: StepStats,
            traces: Traces) -> pa.RecordBatch:
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


def _fail_all(batch: pa.RecordBatch, step, ctx: StageContext, stats: StepStats, traces: Traces,
              error: str) -> pa.RecordBatch:
    """Every row to the step's trace: its worker died on this task twice (see runner.py)."""
    verdict = Verdict(np.zeros(batch.num_rows, bool), "worker_failed", error)
    stats.rows_in += batch.num_rows
    return _remove(batch, verdict, step, ctx, stats, traces)


def _prepare(op: Global, step: Step, batch: pa.RecordBatch, ctx: StageContext,
             stats: dict[str, StepStats]) -> pa.RecordBatch:
    """Run the next Global's `prepare` on rows about to be written; its seconds count as that step's."""
    started = time.perf_counter()
    check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, "the data")
    for name, column in (op.prepare(batch) or {}).items():
        batch = batch.append_column(prepared_name(step, name), column)
    stats.setdefault(f"prepare:{step.label}", StepStats()).seconds += time.perf_counter() - started
    return batch


def prepared_name(step: Step, name: str) -> str:
    """Where a step's prepared column is stored: unique per step, internal (dropped from output)."""
    return f"_prepared{step.index}_{name}"


def _output_columns(batch: pa.RecordBatch, ctx: StageContext) -> pa.RecordBatch:
    if not ctx.final:
        used = prepared_name(ctx.stage.global_step, "") if ctx.stage.global_step else None
        return batch.select([n for n in batch.schema.names if n != "_ord" and not (used and n.startswith(used))])
    keep = set(ctx.recipe.output.keep_columns) | {"_id"}
    return batch.select([n for n in batch.schema.names if not n.startswith("_") or n in keep])


def _counted(batches: Iterator[pa.RecordBatch], progress: Progress) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        progress(READ_STEP, batch.num_rows, batch.num_rows)
        yield batch


def _step_stream(batches: Iterator[pa.RecordBatch], op: Operator, step: Step, ctx: StageContext, task: Task,
                 stats: dict[str, StepStats], traces: "Traces", progress: Progress | None) -> Iterator[pa.RecordBatch]:
    """One step over a stream of batches, re-sized first to the step's batch_rows when it has one."""
    rows = step.rows_per_batch()
    checked = False
    for batch in rebatch(batches, rows) if rows else batches:
        if batch.num_rows == 0:
            continue
        if not checked:  # the first batch shows whether the step's columns are there
            where = task.sources[0].path if task.sources else "the data"
            check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, where)
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


def _commit(batch: pa.RecordBatch, ctx: StageContext, preparer, data: ShardWriter, stats: dict,
            output: Side | None) -> None:
    """A batch through the stage's steps: prepared for the next Global, measured as the run's
    output (with its internal columns, such as _embedding, still there), written."""
    if preparer is not None and batch.num_rows:
        batch = _prepare(preparer, ctx.next_global, batch, ctx, stats)
    if output is not None and batch.num_rows:
        output.observe(batch)
    data.write(_output_columns(batch, ctx))


def _observed(batches: Iterator[pa.RecordBatch], side: Side) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        side.observe(batch)
        yield batch


def _metric_sides(ctx: StageContext, task: Task) -> dict[str, Side]:
    """The run's dataset metrics this task takes part in: the input (rows read, in the first
    stage) and the output (rows written, in the last)."""
    if ctx.recipe.metrics is None:
        return {}
    from operators.score.run_metrics import Side

    return {side: Side.of(ctx.recipe) for side in ["input"] * bool(task.sources) + ["output"] * ctx.final}


def metrics_path(ctx: StageContext, name: str) -> Path:
    return ctx.work / "metrics" / name


# Batches an I/O stage's worker keeps in flight at once (each may hold thousands of requests),
# so the step's own concurrency limit, not a batch boundary, bounds what is outstanding.
IO_BATCHES_IN_FLIGHT = 4


class _InFlight:
    """What one batch in flight produced, kept apart until its turn: counts, trace rows, progress."""

    def __init__(self):
        self.stats: dict[str, StepStats] = {}
        self.traced: list[tuple[str, pa.RecordBatch]] = []
        self.progress: list[tuple[str, int, int]] = []

    def write(self, label: str, batch: pa.RecordBatch) -> None:  # as Traces.write
        self.traced.append((label, batch))


async def _through_steps(ctx: StageContext, task: Task, ops: list[Operator], batch: pa.RecordBatch,
                         first: bool) -> tuple[pa.RecordBatch, _InFlight]:
    mine = _InFlight()
    for op, step in zip(ops, ctx.stage.all_steps):
        if batch.num_rows == 0:
            break
        if first:
            where = task.sources[0].path if task.sources else "the data"
            check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, where)
        started, before = time.perf_counter(), batch.num_rows
        result = _apply(op, batch, ctx)
        if inspect.isawaitable(result):
            result = await result
        stats = mine.stats.setdefault(step.label, StepStats())
        batch = account(op, step, batch, result, ctx, stats, mine)
        stats.seconds += time.perf_counter() - started
        mine.progress.append((step.label, before, batch.num_rows))
    return batch, mine


async def _run_async(ctx: StageContext, task: Task, ops: list[Operator], batches, stats: dict[str, StepStats],
                     traces: Traces, progress: Progress | None, commit: Callable[[pa.RecordBatch], None]) -> None:
    """A stage with an async step: up to IO_BATCHES_IN_FLIGHT batches go through the steps at
    once; each one's trace, counts and output are committed in input order, so the result is
    the same as one batch at a time."""
    in_flight: list[asyncio.Task] = []
    # Batches in flight hold thousands of live requests; with the default thresholds the garbage
    # collector rescans them every few hundred allocations (a third of the CPU of 100k requests).
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, 20, 20)

    def finish(done: tuple[pa.RecordBatch, _InFlight]) -> None:
        batch, mine = done
        for label, gone in mine.traced:
            traces.write(label, gone)
        for label, s in mine.stats.items():
            stats.setdefault(label, StepStats()).add(s)
        for event in mine.progress if progress else ():
            progress(*event)
        commit(batch)

    try:
        for i, batch in enumerate(batches):
            in_flight.append(asyncio.ensure_future(_through_steps(ctx, task, ops, batch, first=i == 0)))
            if len(in_flight) >= IO_BATCHES_IN_FLIGHT:
                finish(await in_flight.pop(0))
        while in_flight:
            finish(await in_flight.pop(0))
    finally:
        gc.set_threshold(*thresholds)
        for pending in in_flight:
            pending.cancel()


_loop: asyncio.AbstractEventLoop | None = None


def _event_loop() -> asyncio.AbstractEventLoop:
    """One event loop per worker process, kept across tasks (operators may hold connections on it)."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop


def run_task(ctx: StageContext, task: Task, progress: Progress | None = None, failure: str | None = None) -> dict:
    """Run `task` unless its marker says it is done; returns its stats by step label.

    With `failure` (the error of a worker that died on this task twice), its rows are not
    processed but traced at the stage's first step with that error, so none is lost."""
    marker = done_path(ctx, task.name)
    if marker.is_file():
        return json.loads(marker.read_text())
    ops = _operators_for(ctx) if failure is None else []  # a failed task loads no model
    steps = ctx.stage.all_steps
    preparer = ops[len(steps)] if ctx.next_global and ops else None
    stats: dict[str, StepStats] = {}
    traces = Traces(ctx, task)
    out = ctx.recipe.output
    data = ShardWriter(ctx.work / "data", task.name, shard_bytes=out.shard_mb << 20,
                       compression=out.parquet_compression if ctx.final else "zstd")
    sides = _metric_sides(ctx, task)

    def commit(batch: pa.RecordBatch) -> None:
        _commit(batch, ctx, preparer, data, stats, sides.get("output"))

    try:
        batches = _rows(ctx, task, stats, traces)
        if "input" in sides:
            batches = _observed(batches, sides["input"])
        if progress and task.sources:
            batches = _counted(batches, progress)
        if failure is None and any(inspect.iscoroutinefunction(getattr(op, "process", None)) for op in ops[:len(steps)]):
            rows = steps[0].rows_per_batch()  # an async stage's batches are sized by its first step
            _event_loop().run_until_complete(_run_async(ctx, task, ops[:len(steps)],
                                                        rebatch(batches, rows) if rows else batches, stats, traces,
                                                        progress, commit))
            batches = iter(())
        if failure is not None:
            first = steps[0]
            batches = (_fail_all(b, first, ctx, stats.setdefault(first.label, StepStats()), traces, failure)
                       for b in batches)
        for op, step in zip(ops, steps):
            batches = _step_stream(batches, op, step, ctx, task, stats, traces, progress)
        for batch in batches:
            if ops:
                failpoint("model-batch" if ctx.stage.resource_class == "model" else "task-batch")
            commit(batch)
        data.close()
        traces.close()
    except BaseException:
        data.abort()
        traces.abort()
        raise
    for step in steps:  # steps that saw no rows still report zeros
        stats.setdefault(step.label, StepStats())
    result = {"task": task.name, "shards": [p.name for p in data.paths], "traces": traces.files(),
              "stats": {label: asdict(s) for label, s in stats.items()}}
    if sides:  # beside the marker, written before it: a resumed run merges the same summaries
        result["metrics"] = f"{task.name}.pkl"
        path = metrics_path(ctx, result["metrics"])
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, pickle.dumps(sides))
    marker.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(marker, json.dumps(result).encode())
    return result


def worker_init(queue, parent_pid: int, work: Path, threads: int = 1, device: str | None = None) -> None:
    """Each worker dies with its parent, leaves interrupts to it, and uses `threads` cores (CPU
    workers: one each, one worker per core). A model worker may be pinned to one GPU (`device`)."""
    _die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the parent stops the workers and reports once.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    global _worker_lock
    _worker_lock = hold_worker_lock(work)
    if device is not None:  # before any CUDA library is loaded
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    use_cores(threads)
    pa.set_io_thread_count(2)
    global _queue
    _queue = queue


def use_cores(threads: int) -> None:
    """Arrow, polars and the numeric libraries of this worker process use `threads` cores."""
    for name in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))
    pa.set_cpu_count(threads)


_queue = None
_worker_lock = None  # fd of _work/workers.lock, held until the process exits


def _die_with_parent(parent_pid: int) -> None:
    """A worker must never outlive the run that started it (it would write into _work beside a
    resume): the kernel kills it when the parent dies (Linux), else a watchdog thread does."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        import threading

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)


def run_task_in_worker(ctx: StageContext, task: Task) -> dict:
    def progress(label: str, rows_in: int, rows_out: int) -> None:
        if _queue is not None:
            _queue.put((label, rows_in, rows_out))

    try:
        return run_task(ctx, task, progress)
    except CurateError:
        raise
    except Exception as e:
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise NoSpace(str(e)) from None
        # Keep the worker's traceback text: the parent cannot see it otherwise.
        raise WorkerError(f"{type(e).__name__}: {e}", traceback.format_exc()) from None
    finally:
        # Idle workers wait while the parent fits a Global: hand Arrow's cached buffers back to
        # the OS so they do not sit on memory the fit could use.
        pa.default_memory_pool().release_unused()


def teardown_in_worker(ctx: StageContext) -> None:
    """The stage is done: its operators free what they loaded (models, GPU memory)."""
    for op in _operators.pop((str(ctx.work), ctx.stage.index), []):
        op.teardown()


class WorkerError(RuntimeError):
    """A bug raised in a worker process; `worker_traceback` is shown by `--debug`."""

    def __init__(self, message: str, worker_traceback: str = ""):
        super().__init__(message, worker_traceback)
        self.worker_traceback = worker_traceback

    def __str__(self) -> str:
        return self.args[0]
