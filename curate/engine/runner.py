"""The runner: what a run means, whatever executes its tasks.

It owns the run directory (run_dir.py), the plan, Global fits, publishing, the trace, the
manifest, conservation and resume; an executor (local.py) only runs the tasks it is given.

Layout of a run directory while it runs:
  _work/run.json                 fingerprints of recipe and input (checked by --resume)
  _work/plan.json                the plan (plan.py): stages, resources, tasks as they become known
  _work/stage-K/data/            the stage's output shards
  _work/stage-K/trace/<step>/    removed rows, per task
  _work/stage-K/done/            one marker per finished task, holding its stats
  _work/stage-K/metrics/         with recipe `metrics:`, each task's summary of the rows it read
                                 (first stage) or wrote (last stage), written before its marker
  _work/stage-K/state.pkl        the stage's Global operator state, once fitted
On success the last stage's shards become data/part-NNNNN.parquet, traces are merged
into trace/<step>.parquet, manifest.json is written last, and _work/ is removed.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.engine import plan
from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine import engines
from curate.engine.local import stage_parallelism
from curate.engine.run_dir import discard_failed_start, open_run_dir, produced_anything
from curate.engine.worker import (READ_STEP, StageContext, check_columns, metrics_path, prepared_name, rebatch,
                                  run_task, stage_dir)
from curate.errors import CurateError, NoSpace
from curate import preflight
from curate.io import output_formats
from curate.io.sources import Source
from curate.io.writer import atomic_write_bytes
from curate.ops import Global, Parallel
from curate.recipe import Recipe
from curate.trace import StepStats, check_conservation, merge_shards, versions, write_manifest


@dataclass
class RunOptions:
    workers: int = 0  # 0: one per available core
    resume: bool = False
    overwrite: bool = False
    limit: int | None = None
    keep_work: bool = False
    model_workers: int = 1  # model worker processes when no GPU is visible (else one per GPU)
    engine: str = "local"  # what runs the tasks: "local" processes or "ray" (engines.py)
    address: str | None = None  # with engine "ray": the cluster's address (None: a Ray instance for the run)
    work_store: str | None = None  # with engine "ray": an fsspec URI for nodes that do not see _work/


@dataclass
class Reporter:
    """Callbacks the CLI uses for progress; all optional."""

    rows: Callable[[str, int, int], None] = lambda label, rows_in, rows_out: None
    status: Callable[[str], None] = lambda message: None


def _shards(directory: Path, results: list[dict]) -> list[Path]:
    return [directory / name for r in results for name in r["shards"]]


def _fit(ctx: StageContext, previous_shards: list[Path], reporter: Reporter, pool: Executor, workers: int) -> None:
    """Fit the stage's Global operator over the previous stage's output, once (kept for resume);
    its parallel pieces run on `pool`'s `workers`."""
    state_file = ctx.work / "state.pkl"
    if state_file.is_file():
        return
    step = ctx.stage.global_step
    op: Global = step.build(ctx.recipe)
    op.setup()
    fit_dir = ctx.work / "fit"
    if fit_dir.exists():
        shutil.rmtree(fit_dir)
    fit_dir.mkdir(parents=True)
    raw = op.requires if op.fit_columns is None else op.fit_columns
    prefix = prepared_name(step, "")

    def batches():
        offset = 0
        for shard in previous_shards:
            pf = pq.ParquetFile(shard)
            names = pf.schema_arrow.names
            check_columns(names, op, step, ctx.recipe.input.text_column, "the data")
            prepared = [n for n in names if n.startswith(prefix)]
            columns = ["_id", *[c for c in raw if c != "_id"], *prepared]
            for batch in pf.iter_batches(batch_size=ctx.recipe.input.batch_rows, columns=columns):
                batch = batch.rename_columns([n.removeprefix(prefix) for n in batch.schema.names])
                ords = pa.array(np.arange(offset, offset + batch.num_rows, dtype=np.int64))
                offset += batch.num_rows
                yield batch.append_column("_ord", ords)
                failpoint("fit")

    mapped: dict[str, dict] = {}

    def timed_map(fn, *iterables) -> list:
        """pool.map, its wall seconds and pieces summed per function (the fit's parallel phases)."""
        t0 = time.perf_counter()
        results = pool.map(fn, *iterables)
        name = getattr(fn, "func", fn).__name__  # a functools.partial's function
        entry = mapped.setdefault(name, {"seconds": 0.0, "pieces": 0})
        entry["seconds"] += time.perf_counter() - t0
        entry["pieces"] += len(results)
        return results

    started = time.perf_counter()
    rows = step.rows_per_batch()  # the fit sees the batches its step asks for, as its apply does
    fitted = rebatch(batches(), rows) if rows else batches()
    state = op.fit(fitted, fit_dir, Parallel(timed_map, workers, threads=1))  # a core per worker
    # What the manifest says of the fit: its seconds, and the state's own report where it gives
    # one (e.g. SemDeDup's kept fraction per eps, DBP's per-cluster table), JSON-able. fit.json
    # also keeps the seconds spent in parallel pieces, per function (the rest ran serially).
    summary = state.summary() if callable(getattr(state, "summary", None)) else None
    report = {"seconds": time.perf_counter() - started, "summary": summary, "workers": workers, "map": mapped}
    atomic_write_bytes(ctx.work / "fit.json", json.dumps(report).encode())
    atomic_write_bytes(state_file, pickle.dumps(state))  # last: its presence means "fitted"
    failpoint("state-written")


def run(recipe: Recipe, opts: RunOptions = RunOptions(), reporter: Reporter = Reporter(),
        sources: list[Source] | None = None) -> dict:
    """Run `recipe`; returns the manifest. Raises CurateError for problems with the recipe or data,
    before any worker starts where a look at the input's first batch shows them (preflight).
    `sources`: the input files, when the caller has already checked the recipe against them."""
    started = time.perf_counter()
    out = Path(recipe.output.path)
    work = out / "_work"
    if sources is None:
        sources = preflight.check(recipe).sources
    if recipe.output.upload:
        output_formats.remote_fs(recipe.output.upload)
    if opts.work_store:
        if opts.engine != "ray":
            raise CurateError("--work-store is for --engine ray (the local engine's workers share this machine's disk)")
        output_formats.remote_fs(opts.work_store, "--work-store")
    fingerprint = {"recipe": recipe.fingerprint(), "inputs": [s.fingerprint() for s in sources], "limit": opts.limit}
    created_out = not out.exists()
    lock, finished = open_run_dir(out, fingerprint, resume=opts.resume, overwrite=opts.overwrite)
    try:
        if finished:
            if recipe.output.upload:  # a copy interrupted after the run finished is made again
                output_formats.upload(out, recipe.output.upload)
            reporter.status(f"{out} is already finished; nothing to do")
            return {**json.loads((out / "manifest.json").read_text()), "already_finished": True}
        try:
            return _run(recipe, opts, reporter, out, work, sources, started)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            raise disk_full(out, sources) from None
        except NoSpace:
            raise disk_full(out, sources) from None
        except Exception as e:
            if not produced_anything(work):
                discard_failed_start(out, created_out)
            elif isinstance(e, CurateError):
                e.hint = ("the run stopped part-way; its work is kept in _work/. If the fix changes the recipe "
                          "or the input, start over with --overwrite; else continue with --resume")
            raise
    finally:
        lock.release()


def _run(recipe: Recipe, opts: RunOptions, reporter: Reporter, out: Path, work: Path, sources: list,
         started: float) -> dict:
    # Absolute, so that a path in a task or in a fitted state names the same file in a worker
    # started elsewhere (a Ray node's, whatever its working directory).
    out, work = out.absolute(), work.absolute()
    the_plan = plan.make(recipe.steps, sources, opts.limit)
    env = sorted({name for step in recipe.steps for name in step.op_class.env_vars(step.params)})
    engine = engines.make(opts.engine, opts.address, reporter.rows, work, reporter.status, env, opts.work_store,
                          opts.resume, [s.path for s in sources])
    workers = opts.workers or engine.cores
    try:
        pool: Executor = engine.cpu_executor(workers)
        manifest = _run_stages(recipe, opts, reporter, out, work, started, the_plan, engine, pool, workers)
    except BaseException:
        engine.close()
        raise
    engine.close(discard_work=not opts.keep_work)  # the work files are gone from _work/ too
    return manifest


def _run_stages(recipe: Recipe, opts: RunOptions, reporter: Reporter, out: Path, work: Path, started: float,
                the_plan: plan.Plan, engine, pool: Executor, workers: int) -> dict:
    stages = list(the_plan.stages)
    totals: dict[str, StepStats] = {}
    fits: dict[str, dict] = {}
    sides = _metric_sides(recipe)
    try:
        shards: list[Path] = []
        for stage, after in zip(stages, stages[1:] + [None]):
            ctx = StageContext(recipe, stage, stage_dir(work, stage.index), final=after is None,
                               next_global=after.global_step if after else None)
            if stage.global_step is not None:
                _fit(ctx, shards, reporter, pool, workers)
                fits[stage.global_step.label] = json.loads((ctx.work / "fit.json").read_text())
            if stage.index > 0:
                the_plan = the_plan.with_tasks(stage.index, plan.shard_tasks(stage.index, shards))
            tasks = list(the_plan.tasks[stage.index])
            atomic_write_bytes(work / "plan.json", json.dumps(the_plan.describe(), indent=1).encode())
            results = _run_stage(ctx, tasks, engine, pool, workers, opts, reporter)
            failpoint("stage-done")
            for r in results:
                for label, s in r["stats"].items():
                    totals.setdefault(label, StepStats()).add(StepStats(**s))
                if "metrics" in r:
                    for side, part in pickle.loads(metrics_path(ctx, r["metrics"]).read_bytes()).items():
                        sides[side].merge(part)
            shards = _shards(ctx.work / "data", results)
        _stage_data(recipe, out, shards, pool)
        dataset_metrics = _measure(recipe, sides, pool)
        failpoint("staged")
    except BaseException:
        pool.close(kill=True)
        raise
    pool.close()
    return _finish(recipe, out, work, stages, totals, fits, dataset_metrics, started, opts)


def _metric_sides(recipe: Recipe) -> dict:
    """The run's dataset metrics (recipe `metrics:`), merged from the tasks' summaries as they finish."""
    if recipe.metrics is None:
        return {}
    from operators.score.run_metrics import Side

    return {"input": Side.of(recipe), "output": Side.of(recipe)}


def _measure(recipe: Recipe, sides: dict, pool: Executor) -> dict | None:
    """The merged sides measured for the manifest, both at once in the workers."""
    if not sides:
        return None
    from operators.score.run_metrics import manifest_entry, measure

    measured = pool.map(measure, list(sides.values()), [recipe.metrics] * len(sides))
    return manifest_entry(dict(zip(sides, measured)), recipe.metrics)


def _run_stage(ctx: StageContext, tasks: list[plan.Task], engine, pool: Executor, workers: int, opts: RunOptions,
               reporter: Reporter) -> list[dict]:
    """The stage's tasks on the CPU pool, or on a model pool of its own (torn down after, so
    models and GPU memory are freed before the next stage or fit)."""
    stage = ctx.stage
    if stage.resource_class != "model":
        parallel = stage_parallelism(stage, workers, engine.cores)
        reporter.status(f"stage {stage.index}: {len(tasks)} tasks on {min(parallel, len(tasks))} workers")
        return pool.run(ctx, tasks, parallel)
    models = engine.model_pool(opts.model_workers)
    reporter.status(f"stage {stage.index}: {len(tasks)} tasks on {len(models.workers)} model workers")
    try:
        results = models.run(ctx, tasks, len(models.workers))
    except BaseException:
        models.close(kill=True)
        raise
    models.close()
    # A task whose worker died twice: its rows go to the trace with the error, none is lost.
    return [run_task(ctx, task, failure=r["failed"]) if "failed" in r else r for task, r in zip(tasks, results)]


def disk_full(out: Path, sources: list) -> CurateError:
    """ENOSPC as a user error: where, how much is free, about how much the run needs."""
    free = shutil.disk_usage(out if out.exists() else out.parent).free
    inputs = sum(os.stat(s.path).st_size for s in sources if os.path.exists(s.path))
    return CurateError(f"no space left on the device of {out} ({_size(free)} free). A run needs room for its work "
                       f"files and output, up to about twice its input ({_size(2 * inputs)}). Free some space, "
                       f"then continue with --resume")


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _shard_groups(shards: list[Path], target_bytes: int) -> list[list[Path]]:
    """Consecutive shards with one schema, grouped up to `target_bytes` each: small per-task
    shards become files of about the target size, in order."""
    groups: list[list[Path]] = []
    size, schema = 0, None
    for shard in shards:
        shard_size, shard_schema = shard.stat().st_size, pq.read_schema(shard)
        if groups and size + shard_size <= target_bytes and shard_schema == schema:
            groups[-1].append(shard)
            size += shard_size
        else:
            groups.append([shard])
            size, schema = shard_size, shard_schema
    return groups


def _stage_data(recipe: Recipe, out: Path, shards: list[Path], pool: Executor) -> None:
    """The final shards as `data.tmp/part-NNNNN.parquet`: large ones hard-linked, runs of small
    ones merged (in the workers). _work stays intact until the end, so a run killed while
    publishing resumes cleanly."""
    staging = out / "data.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    compression = None if recipe.output.parquet_compression == "none" else recipe.output.parquet_compression
    merges = []
    groups = _shard_groups(shards, recipe.output.shard_mb << 20) if recipe.output.merge_shards else [[s] for s in shards]
    for i, group in enumerate(groups):
        target = staging / f"part-{i:05d}.parquet"
        if len(group) == 1:
            os.link(group[0], target)
        else:
            merges.append((group, target))
    pool.map(merge_shards, [g for g, _ in merges], [t for _, t in merges], [compression] * len(merges))
    if recipe.output.format != "parquet":
        output_formats.convert(staging, recipe.output.format, recipe.output.compression, pool.map)


def _finish(recipe: Recipe, out: Path, work: Path, stages: list[plan.Stage],
            totals: dict[str, StepStats], fits: dict[str, dict], dataset_metrics: dict | None, started: float,
            opts: RunOptions) -> dict:
    steps = []
    ordered = [READ_STEP] + [s.label for s in recipe.steps]
    for label in ordered:
        s = totals.get(label, StepStats())
        s.seconds += totals.get(f"prepare:{label}", StepStats()).seconds
        step = next((x for x in recipe.steps if x.label == label), None)
        entry = {"step": label, "op": step.name if step else "read", "kind": step.op_class.kind if step else "read",
                 "rows_in": s.rows_in, "rows_out": s.rows_out, "removed": s.removed,
                 "seconds": round(s.seconds + fits.get(label, {}).get("seconds", 0.0), 3), "reasons": s.reasons}
        if s.counts:
            entry["counts"] = s.counts
        if fits.get(label, {}).get("summary") is not None:
            entry["summary"] = fits[label]["summary"]
        if step is not None and getattr(step.op_class, "changes_rows", False):
            # 1 -> n: `expanded` input rows produced the rows_out children, `added` more than they were
            entry["expanded"] = s.expanded
            entry["added"] = s.rows_out - s.expanded
        steps.append(entry)
    check_conservation(steps)

    # Publish: traces merged per step into trace.tmp, then trace/ and data/ renamed into place,
    # manifest.json last. _work stays intact until the manifest is written, so a run killed
    # anywhere in here is published again, from scratch, by --resume (see run_dir.open_run_dir);
    # until manifest.json exists the run is not complete, whatever data/ holds.
    trace_tmp = out / "trace.tmp"
    shutil.rmtree(trace_tmp, ignore_errors=True)
    trace_tmp.mkdir()
    traced = {}
    for label in ordered:
        parts = sorted(p for st in stages for p in (stage_dir(work, st.index) / "trace" / label).glob("*.parquet"))
        if parts:
            traced[label] = merge_shards(parts, trace_tmp / f"{label}.parquet")
    for entry in steps:
        if entry["removed"] != traced.get(entry["step"], 0):
            raise RuntimeError(f"trace of {entry['step']} holds {traced.get(entry['step'], 0)} rows, "
                               f"{entry['removed']} were removed")
    if traced:
        os.replace(trace_tmp, out / "trace")
    else:
        trace_tmp.rmdir()
    os.replace(out / "data.tmp", out / "data")
    failpoint("published-data")
    manifest = {
        "name": recipe.name,
        "recipe": recipe.display,
        "recipe_fingerprint": recipe.fingerprint(),
        "seed": recipe.seed,
        "versions": versions(),
        "limit": opts.limit,
        "rows_in": steps[0]["rows_in"],
        "rows_out": steps[-1]["rows_out"],
        "steps": steps,
        **({"dataset_metrics": dataset_metrics} if dataset_metrics else {}),
        "format": recipe.output.format,
        "data_files": len(output_formats.data_files(out / "data", recipe.output.format)),
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_manifest(out / "manifest.json", manifest)
    if not opts.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    if recipe.output.upload:
        output_formats.upload(out, recipe.output.upload)
    return manifest
