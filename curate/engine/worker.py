"""Run one task: read its rows, pass them through the stage's steps, write shards and trace.

A task's outputs appear under their final names only once complete, and its `done` marker
(with its stats) is written last, so a killed task is simply run again on resume.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.engine.failpoints import failpoint
from curate.engine.plan import Stage, Task
from curate.engine.run_dir import hold_worker_lock
from curate.errors import CurateError, InputError, NoSpace
from curate.io.readers import BadRows, read_source
from curate.io.writer import ShardWriter, atomic_write_bytes
from curate.ops import Filter, Global, Map, Operator, Verdict
from curate.recipe import Recipe, Step
from curate.trace import StepStats, count_reasons, removed_rows

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


def done_path(ctx: StageContext, task: Task) -> Path:
    return ctx.work / "done" / f"{task.name}.json"


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
    rows_in = batch.num_rows
    result = _apply(op, batch, ctx)
    for name, count in op.take_counts().items():
        stats.counts[name] = stats.counts.get(name, 0) + int(count)
    verdict = None
    if isinstance(result, Verdict):
        verdict = result
    elif isinstance(result, tuple):
        batch, verdict = result
    else:
        batch = result
    if isinstance(op, Map) and not op.changes_rows and batch.num_rows != rows_in:
        raise RuntimeError(f"{step.name} returned {batch.num_rows} rows for {rows_in}; a Map that changes the "
                           f"row count must set changes_rows = True")
    if verdict is not None:
        if len(verdict.keep) != batch.num_rows:
            raise RuntimeError(f"{step.name} returned a verdict for {len(verdict.keep)} rows, "
                               f"the batch has {batch.num_rows}")
        batch = _remove(batch, verdict, step, ctx, stats, traces)
    stats.rows_in += rows_in
    stats.rows_out += batch.num_rows
    stats.seconds += time.perf_counter() - started
    return batch


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


def run_task(ctx: StageContext, task: Task, progress: Progress | None = None, failure: str | None = None) -> dict:
    """Run `task` unless its marker says it is done; returns its stats by step label.

    With `failure` (the error of a worker that died on this task twice), its rows are not
    processed but traced at the stage's first step with that error, so none is lost."""
    marker = done_path(ctx, task)
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
    checked = False
    try:
        for batch in _rows(ctx, task, stats, traces):
            if progress and READ_STEP in stats:
                progress(READ_STEP, batch.num_rows, batch.num_rows)
            if failure is not None:
                batch = _fail_all(batch, steps[0], ctx, stats.setdefault(steps[0].label, StepStats()), traces, failure)
            for op, step in zip(ops, steps):
                if batch.num_rows == 0:
                    break
                if not checked:
                    where = task.sources[0].path if task.sources else "the data"
                    check_columns(batch.schema.names, op, step, ctx.recipe.input.text_column, where)
                before = batch.num_rows
                batch = run_step(op, step, batch, ctx, stats.setdefault(step.label, StepStats()), traces)
                if progress:
                    progress(step.label, before, batch.num_rows)
            if ops and ctx.stage.resource_class == "model":
                failpoint("model-batch")
            checked = checked or batch.num_rows > 0
            if preparer is not None and batch.num_rows:
                batch = _prepare(preparer, ctx.next_global, batch, ctx, stats)
            data.write(_output_columns(batch, ctx))
        data.close()
        traces.close()
    except BaseException:
        data.abort()
        traces.abort()
        raise
    for step in steps:  # steps that saw no rows still report zeros
        stats.setdefault(step.label, StepStats())
    result = {"task": task.name, "shards": [p.name for p in data.paths],
              "stats": {label: asdict(s) for label, s in stats.items()}}
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
    for name in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))
    pa.set_cpu_count(threads)
    pa.set_io_thread_count(2)
    global _queue
    _queue = queue


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
