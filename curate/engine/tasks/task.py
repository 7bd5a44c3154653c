"""One task's semantics: read its rows, pass them through the stage's steps, write its shards,
trace and stats, whatever process or node runs it.

A task's outputs appear under their final names only once complete, and its done marker (its
TaskResult) is written last, after the summaries of the run's observers, so a killed task is
simply run again on resume. Whether a task is done is the runner's decision (runner.py).
"""

from __future__ import annotations

import inspect
import os
import pickle
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate import observers
from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.rundir.layout import Files
from curate.engine.tasks.context import READ_BYTES, READ_STEP, Progress, StageContext, operators_for, prepared_name
from curate.engine.tasks.plan import Task
from curate.engine.tasks.steps import event_loop, fail_all, prepare, rebatch, run_async, step_stream
from curate.io import output_formats, retries
from curate.io.bad_rows import BadRows
from curate.io.meter import ReadMeter
from curate.io.readers import read_source
from curate.io.writer import ShardWriter
from curate.trace import StepStats


def _rows(
    ctx: StageContext, task: Task, stats: dict[str, StepStats], trace: "Traces", bytes_read: Callable[[int], None]
) -> Iterator[pa.RecordBatch]:
    """The task's input batches; stage 0 reads sources (bad rows go to the `read` trace). Each
    batch's bytes of the input are passed to `bytes_read` before it, and in all the sizes the plan
    weighs the task by (its files', its shards')."""
    spec = ctx.recipe.input
    if task.sources:
        remaining = task.limit
        read = stats.setdefault(READ_STEP, StepStats())
        for source in task.sources:
            meter, size = ReadMeter(), _size(source)
            counted = 0
            for batch, bad in read_source(
                source,
                id_column=spec.id_column,
                batch_rows=spec.batch_rows,
                on_bad_row=spec.on_bad_row,
                raw_column=spec.raw_column,
                meter=meter,
                schema=ctx.input_schema,
                on_truncated=spec.on_truncated,
                mime_types=spec.mime_types,
            ):
                at = min(meter.bytes, size)
                bytes_read(at - counted)
                counted = at
                if bad is not None and len(bad):
                    trace.write(READ_STEP, _bad_rows_batch(source, bad))
                    read.rows_in += len(bad)
                    read.removed += len(bad)
                    for reason in bad.reason:
                        read.reasons[reason] = read.reasons.get(reason, 0) + 1
                if batch is None or batch.num_rows == 0:
                    continue
                if remaining is not None:
                    batch = batch.slice(0, remaining)
                    remaining -= batch.num_rows
                read.rows_in += batch.num_rows
                read.rows_out += batch.num_rows
                failpoint("read-batch")
                yield batch
                if remaining == 0:
                    return
            bytes_read(size - counted)  # the file is read: what its meter could not see (a footer)
            if meter.empty:  # an empty input file: skipped, counted (the CLI warns)
                read.counts["empty_files"] = read.counts.get("empty_files", 0) + 1
            if meter.blank_lines:  # JSONL lines with nothing on them: no row, no trace, but counted
                read.counts["blank_lines"] = read.counts.get("blank_lines", 0) + meter.blank_lines
        return
    yield from shard_batches(task.shards, task.ord_offset, spec.batch_rows, bytes_read=bytes_read)


def _size(source) -> int:
    try:
        return source.byte_size()
    except OSError:  # gone: its reader says so
        return 0


def shard_batches(
    shards,
    offset: int,
    batch_rows: int,
    columns: list[str] | None = None,
    rename=lambda names: names,
    bytes_read: Callable[[int], None] = lambda n: None,
) -> Iterator[pa.RecordBatch]:
    """The rows of a stage's shards with `_ord`, their position in the stage's input from `offset`
    (a later stage's tasks, and a Global's fit, read them so); each batch's share of its shard's
    bytes passed to `bytes_read` before it."""
    for shard in shards:
        pf = pq.ParquetFile(shard)
        size, rows, done, counted = os.path.getsize(shard), pf.metadata.num_rows, 0, 0
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
            ords = pa.array(np.arange(offset, offset + batch.num_rows, dtype=np.int64))
            offset += batch.num_rows
            done += batch.num_rows
            bytes_read(size * done // rows - counted)
            counted = size * done // rows
            yield batch.rename_columns(rename(batch.schema.names)).append_column("_ord", ords)
        bytes_read(size - counted)


def _bad_rows_batch(source, bad: BadRows) -> pa.RecordBatch:
    """The read trace's rows: `_id` by the file's name under the input's base (as the rows' own
    ids, the same wherever the input lies), the detail naming the file where it was read."""
    n, path = len(bad), source.path
    return pa.RecordBatch.from_pydict(
        {
            "_id": pa.array([f"{source.name}:{line}" for line in bad.line], pa.string()),
            "step": pa.array([READ_STEP] * n, pa.string()),
            "reason": pa.array(bad.reason, pa.string()),
            "detail": pa.array(
                [f"{path}, {bad.unit} {at}: {err}" for at, err in zip(bad.line, bad.error)], pa.string()
            ),
            "row": pa.StructArray.from_arrays([pa.array(bad.raw, pa.string())], names=["raw"]),
        }
    )


class Traces:
    """The task's trace writers, one per step that removed something."""

    def __init__(self, ctx: StageContext, task: Task):
        self.layout = ctx.layout
        self.task = task
        self.writers: dict[str, ShardWriter] = {}  # one trace shard per step, however large

    def write(self, label: str, batch: pa.RecordBatch) -> None:
        if label not in self.writers:
            self.writers[label] = ShardWriter(Path(self.layout.trace(label)), self.task.name, shard_bytes=1 << 40)
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


def _output_columns(batch: pa.RecordBatch, ctx: StageContext) -> pa.RecordBatch:
    if not ctx.final:
        used = prepared_name(ctx.stage.global_step, "") if ctx.stage.global_step else None
        return batch.select([n for n in batch.schema.names if n != "_ord" and not (used and n.startswith(used))])
    written = output_formats.written_columns(ctx.recipe.output)
    if written is not None:
        return batch.select([n for n in written if n in batch.schema.names])
    keep = set(ctx.recipe.output.keep_columns) | {"_id"}
    return batch.select([n for n in batch.schema.names if not n.startswith("_") or n in keep])


def _counted(batches: Iterator[pa.RecordBatch], progress: Progress) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        progress(READ_STEP, batch.num_rows, batch.num_rows)
        yield batch


def _commit(
    batch: pa.RecordBatch, ctx: StageContext, preparer, data: ShardWriter, stats: dict, summaries: dict
) -> None:
    """A batch through the stage's steps: prepared for the next Global, shown to the run's
    observers as output (with its internal columns, such as _embedding, still there), written."""
    if preparer is not None and batch.num_rows:
        assert ctx.next_global is not None  # the preparer is its operator's
        batch = prepare(preparer, ctx.next_global, batch, ctx, stats)
    if batch.num_rows:
        observers.observe(summaries, "output", batch)
    data.write(_output_columns(batch, ctx))


def _observed(batches: Iterator[pa.RecordBatch], summaries: dict) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        observers.observe(summaries, "input", batch)
        yield batch


class _Open:
    """A task under way: its operators, writers, counts and observers' summaries, from its start
    until its result is written."""

    def __init__(self, ctx: StageContext, task: Task, failure: str | None = None):
        self.ctx, self.task = ctx, task
        self.ops = operators_for(ctx) if failure is None else []  # a failed task loads no model
        steps = ctx.stage.all_steps
        self.preparer = self.ops[len(steps)] if ctx.next_global and self.ops else None
        self.stats: dict[str, StepStats] = {}
        self.traces = Traces(ctx, task)
        out = ctx.recipe.output
        self.data = ShardWriter(
            Path(ctx.layout.data),
            task.name,
            shard_bytes=out.shard_mb << 20,
            compression=out.parquet_compression if ctx.final else "zstd",
        )
        self.summaries = observers.task_summaries(
            ctx.observers, reads_input=bool(task.sources), writes_output=ctx.final
        )

    def commit(self, batch: pa.RecordBatch) -> None:
        _commit(batch, self.ctx, self.preparer, self.data, self.stats, self.summaries)

    def close(self) -> None:
        self.data.close()
        self.traces.close()

    def abort(self) -> None:
        self.data.abort()
        self.traces.abort()

    def result(self, retried: dict[str, int], files: Files) -> TaskResult:
        """The task's result, written as its done marker (after its observers' summaries)."""
        for step in self.ctx.stage.all_steps:  # steps that saw no rows still report zeros
            self.stats.setdefault(step.label, StepStats())
        result = TaskResult(
            self.task.name,
            [p.name for p in self.data.paths],
            self.traces.files(),
            self.stats,
            observed=any(self.summaries.values()),
            retries=retried,
            shard_rows=self.data.shard_rows,
        )
        if result.observed:  # beside the marker, written before it: a resumed run merges the same summaries
            files.write_bytes(self.ctx.layout.observed(self.task.name), pickle.dumps(self.summaries))
        files.write_bytes(self.ctx.layout.done(self.task.name), result.to_json())
        return result


def run_task(
    ctx: StageContext, task: Task, progress: Progress | None = None, failure: str | None = None, files: Files = Files()
) -> TaskResult:
    """Run `task`: its result, also written as its done marker.

    With `failure` (the error of a worker that died on this task too often), its rows are not
    processed but traced at the stage's first step with that error, so none is lost."""
    t = _Open(ctx, task, failure)
    try:
        with retries.tally() as retried:
            _run_steps(t, progress, failure)
        t.close()
    except BaseException:
        t.abort()
        raise
    return t.result(retried, files)


def is_async_stage(ctx: StageContext) -> bool:
    """Whether the stage has an async step (LLM calls): its batches are in flight at once."""
    return any(inspect.iscoroutinefunction(getattr(s.op_class, "process", None)) for s in ctx.stage.all_steps)


async def run_task_async(ctx: StageContext, task: Task, progress: Progress | None = None) -> TaskResult:
    """`run_task` of an async stage's task on the running event loop, beside other tasks of the
    stage (curate/engine/local/engine.py): the same files, counts and result."""
    t = _Open(ctx, task)
    try:
        with retries.tally() as retried:
            await _run_async_steps(t, progress, _input(t, progress))
        t.close()
    except BaseException:
        t.abort()
        raise
    return t.result(retried, files=Files())


def _input(t: _Open, progress: Progress | None) -> Iterator[pa.RecordBatch]:
    """The task's rows as read, seen by the run's observers, counted as read."""
    ctx, task = t.ctx, t.task

    def bytes_read(n: int) -> None:
        if progress and n:
            progress(f"{READ_BYTES}{ctx.stage.index}:{task.name}", n, 0)

    batches = _observed(_rows(ctx, task, t.stats, t.traces, bytes_read), t.summaries)
    if progress and task.sources:
        batches = _counted(batches, progress)
    return batches


def _run_async_steps(t: _Open, progress: Progress | None, batches: Iterator[pa.RecordBatch]):
    """The async stage's steps over the task's batches (sized by its first step), committed in order."""
    steps = t.ctx.stage.all_steps
    rows = steps[0].rows_per_batch()
    return run_async(
        t.ctx,
        t.task,
        t.ops[: len(steps)],
        rebatch(batches, rows) if rows else batches,
        t.stats,
        t.traces,
        progress,
        t.commit,
    )


def _run_steps(t: _Open, progress: Progress | None, failure: str | None) -> None:
    """The task's rows read, passed through the stage's steps and committed."""
    ctx, task, ops = t.ctx, t.task, t.ops
    steps = ctx.stage.all_steps
    batches = _input(t, progress)
    if failure is None and is_async_stage(ctx):
        event_loop().run_until_complete(_run_async_steps(t, progress, batches))
        batches = iter(())
    if failure is not None:
        first = steps[0]
        batches = (
            fail_all(b, first, ctx, t.stats.setdefault(first.label, StepStats()), t.traces, failure) for b in batches
        )
    for op, step in zip(ops, steps):
        batches = step_stream(batches, op, step, ctx, task, t.stats, t.traces, progress)
    for batch in batches:
        if ops:
            failpoint("model-batch" if ctx.stage.resource_class == "model" else "task-batch")
        t.commit(batch)
