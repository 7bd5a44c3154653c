"""The runner: what a run means, whatever executes its tasks.

How a run works:
1. The recipe and its inputs are fingerprinted and the run directory opened (run_dir.py): locked,
   a fresh run emptied, a --resume checked against the fingerprints. layout.py names every path.
2. The plan (plan.py) splits the steps into stages, at each Global step and wherever the class of
   worker changes (cpu, io, model), decides each stage's resource policy, and splits stage 0
   into tasks, one per input file or Parquet row-group range. A later stage gets a task per shard
   of the stage before, once those exist.
3. Stage by stage: a Global step is fitted first over the previous stage's shards (fit.py), its
   parallel pieces on the engine's workers; the stage's tasks not yet done (their done markers,
   decided here only) go to the engine's executor (executor.py: local processes, a model pool,
   Ray), which only runs them (task.py: read, steps, trace, shards) and hands each TaskResult
   back as its task ends. A task whose worker died too often is traced here, row by row, so no
   row is lost. Each result is folded into the run's sums, in task order, as it comes
   (_Folded): of a finished task the driver keeps its shards' paths and rows only, so its memory
   hardly grows with the number of tasks. On --resume, the tasks and fits the work store holds
   as done (an earlier attempt's, on any machine) are fetched into _work/ first (work_store.py),
   so only the rest runs.
4. Conservation is checked on each step's summed counts (rows in = rows out + rows traced),
   the run's observers (observers.py) give their manifest entries, and the run is published
   (publish.py): data/, trace/, then manifest.json, the commit marker. _work/ goes last.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pyarrow as pa

from curate import observers, preflight
from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.run.fit import fit
from curate.engine.run.publish import lineage, publish, stage_data
from curate.engine.rundir.layout import Files, RunLayout
from curate.engine.rundir.run_dir import discard_failed_start, open_run_dir, produced_anything, remembered_work_store
from curate.engine.tasks import plan
from curate.engine.tasks.context import READ_BYTES, READ_STEP, StageContext
from curate.engine.tasks.task import run_task
from curate.engine.work import engines, work_store
from curate.engine.work.executor import Engine, Executor
from curate.errors import CurateError, NoSpace
from curate.io import hub, input_schema, output_formats, retries
from curate.io.sources import Source, input_objects
from curate.manifest import Manifest, StepEntry, read as read_manifest
from curate.recipe import Recipe
from curate.trace import StepStats, check_conservation, check_not_emptied
from curate.words import count, size


@dataclass
class RunOptions:
    workers: int = 0  # 0: one per available core
    resume: bool = False
    overwrite: bool = False
    limit: int | None = None
    keep_work: bool = False
    model_workers: int = 1  # model worker processes when no GPU is visible (else one per GPU)
    engine: str = "local"  # what runs the tasks: a name in the registry (work/engines.py): local, ray, slurm
    address: str | None = None  # for an engine that takes one (ray): its cluster (None: an instance for the run)
    # An fsspec URI the tasks copy their work files to: with engine "ray", for nodes that do not see
    # _work/; with an output at a URI, so that --resume continues the run on another machine
    work_store: str | None = None
    # An output on a store gets report.html before its manifest (a local run's is the caller's to
    # write after it: curate.report.write_report)
    report: bool = False


@dataclass
class Reporter:
    """Callbacks the CLI uses for progress; all optional."""

    rows: Callable[[str, int, int], None] = lambda label, rows_in, rows_out: None
    status: Callable[[str], None] = lambda message: None
    # a stage starts: its index, its tasks (plan.Task), a function telling which are done (markers)
    # and one telling the bytes its tasks have written (shards and traces, whole or not yet)
    stage: Callable[[int, list, Callable[[], list[bool]], Callable[[], int]], None] = (
        lambda index, tasks, done, written: None
    )
    # a task (a stage's index, the task's name) read this many more bytes of its input: a batch's
    # worth, as it goes
    read: Callable[[int, str, int], None] = lambda stage, task, nbytes: None
    # a stage's Global step (its index, the step's label) starts its fit, before the stage's tasks
    fitting: Callable[[int, str], None] = lambda stage, label: None

    def progress(self, label: str, rows_in: int, rows_out: int) -> None:
        """What the tasks report as they run (context.Progress): rows per step, or bytes read."""
        if label.startswith(READ_BYTES):
            stage, _, task = label.removeprefix(READ_BYTES).partition(":")
            self.read(int(stage), task, rows_in)
        else:
            self.rows(label, rows_in, rows_out)


def run(
    recipe: Recipe,
    opts: RunOptions = RunOptions(),
    reporter: Reporter = Reporter(),
    sources: list[Source] | preflight.Preflight | None = None,
) -> Manifest:
    """Run `recipe`; returns its manifest, as written, saying where the run went (Manifest.run_dir;
    .already_finished: a --resume of a finished run, which ran nothing). Raises CurateError for
    problems with the recipe or data, before any worker starts where a look at the input shows
    them (preflight). `sources`: the input files, or the preflight's check of them when the
    caller has made it already.

    An output on the Hugging Face Hub (hf://datasets/ORG/NAME) is a local run in its staging
    directory (hub.staging_dir), published once its manifest is written (hub.publish: one
    commit); its token and repository are checked before the run starts. A finished run there is
    published again by --resume (nothing is, when the Hub holds it already). The manifest
    returned says where it went (Manifest.hub; .run_dir is the staging directory); the one
    written does not."""
    if not hub.is_hub(recipe.output.path):
        return _run(recipe, opts, reporter, sources)
    hub.check(recipe, opts.overwrite, reporter.status)  # before any work: token, repository
    layout = RunLayout.at(hub.staging_dir(recipe.output.path))
    manifest = _run(recipe, opts, reporter, sources, layout)
    published = hub.publish(Path(layout.root), recipe, opts.overwrite, reporter.status)
    return manifest.of_run(layout.root, already_finished=manifest.already_finished, hub=published)


def _run(recipe: Recipe, opts: RunOptions, reporter: Reporter, sources, layout: RunLayout | None = None) -> Manifest:
    started = time.perf_counter()
    staged = layout is not None  # a local run in the Hub output's staging directory
    layout = layout or RunLayout.at(recipe.output.path, recipe.output.storage_options)
    checked = sources if isinstance(sources, preflight.Preflight) else preflight.check(recipe, sources)
    sources = checked.sources
    if recipe.output.upload:
        if layout.remote:
            raise CurateError(
                f"output.upload copies a local run elsewhere; output.path ({layout.root}) is on a store "
                f"already: leave output.upload out"
            )
        output_formats.remote_fs(recipe.output.upload, options=recipe.output.storage_options)
    remote_workers = engines.get(opts.engine).remote_workers  # they may not see _work/: a work store carries it
    if (
        opts.resume
        and not opts.work_store
        and (remote_workers or layout.remote)
        and (remembered := remembered_work_store(layout))
    ):
        opts = replace(opts, work_store=remembered)
        reporter.status(f"continuing with the work store the run was given: {remembered}")
    if opts.work_store:
        if not remote_workers and not layout.remote:
            raise CurateError(
                f"with the {opts.engine} engine, --work-store is for an output at a URI (so that "
                f"--resume continues it on another machine); a local output's _work/ ({layout.work}) "
                f"is what --resume continues from"
            )
        output_formats.remote_fs(opts.work_store, "--work-store")
    fingerprint = {
        "recipe": recipe.fingerprint(),
        "inputs": [s.fingerprint() for s in sources],
        "limit": opts.limit,
        **({"work_store": opts.work_store} if opts.work_store else {}),
    }  # remembered for --resume
    retries.take_output()  # the output store's retries are this run's from here
    created_out = not Files().exists(layout.local)
    try:
        lock, finished, resumed = open_run_dir(layout, fingerprint, resume=opts.resume, overwrite=opts.overwrite)
    except BaseException:
        if created_out:  # refused (a store that cannot be written, say): the directory made for it goes
            Files().remove(layout.local)
        raise
    try:
        if finished:
            if recipe.output.upload:  # a copy interrupted after the run finished is made again
                output_formats.upload(Path(layout.root), recipe.output.upload, recipe.output.storage_options)
            if not staged:
                reporter.status(f"{layout.root} is already finished; nothing to do")
            written = read_manifest(layout.files.read_bytes(layout.manifest), layout.manifest)
            return written.of_run(layout.root, already_finished=True)
        try:
            manifest = _Run(recipe, opts, reporter, layout, sources, started, lock.check, checked.decided).execute()
            return manifest.of_run(layout.root)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            raise disk_full(layout, sources) from None
        except NoSpace:
            raise disk_full(layout, sources) from None
        except Exception as e:
            # A resume that fails keeps all an earlier attempt left (on a store, its copy of the
            # work files too, which this machine may not have fetched yet)
            if not resumed and not produced_anything(layout):
                discard_failed_start(layout, created_out)
            elif isinstance(e, CurateError):
                e.hint = (
                    "the run stopped part-way; its work is kept in _work/. If the fix changes the recipe "
                    "or the input, start over with --overwrite; else continue with --resume"
                )
            raise
    finally:
        lock.release()


class _Run:
    """One execution of a run, from an opened run directory to its manifest."""

    def __init__(
        self,
        recipe: Recipe,
        opts: RunOptions,
        reporter: Reporter,
        layout: RunLayout,
        sources: list[Source],
        started: float,
        still_ours: Callable[[], None],
        input_schema: pa.Schema | None = None,
    ):
        self.recipe, self.opts, self.reporter, self.layout, self.started = recipe, opts, reporter, layout, started
        self.still_ours = still_ours  # raises once the run no longer holds its output (lost its lease)
        self.sources = sources
        self.input_schema = input_schema  # as the preflight decided it from every input file
        self.files = Files()
        self.totals: dict[str, StepStats] = {}
        self.fits: dict[str, dict] = {}
        self.lineage = lineage()
        self.observers = observers.for_recipe(recipe)
        self.summaries = observers.run_summaries(self.observers)
        self.retried: dict[str, int] = {}  # the store's requests tried again, by reason, in all tasks

    def execute(self) -> Manifest:
        env = sorted({name for step in self.recipe.steps for name in step.op_class.env_vars(step.params)})
        # An output on a store carries the work files of Ray nodes that do not see this machine's
        # disk under its own prefix (removed before publishing), unless --work-store names a place
        engine = engines.make(
            self.opts.engine,
            engines.EngineConfig(
                self.reporter.progress,
                self.layout,
                self.reporter.status,
                tuple(env),
                self.opts.work_store,
                self.opts.resume,
                tuple(s.path for s in self.sources),
                fallback_store=self.layout.work_files if self.layout.remote else None,
                address=self.opts.address,
                slurm=self.recipe.slurm,
            ),
        )
        try:
            workers = self.opts.workers or engine.cores
            the_plan = plan.make(self.recipe.steps, self.sources, self.opts.limit, workers, engine.cores)
            executor = engine.cpu_executor(workers)
            try:
                shards = self._stages(the_plan, engine, executor, workers)
                linked = stage_data(self.recipe, self.layout, shards, executor, self.files)
                entries = observers.finish(self.observers, self.summaries, executor.map)
                failpoint("staged")
            except BaseException:
                executor.close(kill=True)
                raise
            executor.close()
        except BaseException:
            engine.close()
            raise
        held = work_store.held_copies(engine.store, linked) if self.layout.remote else {}
        manifest = self._finish(the_plan, {**entries, **engine.manifest_entries()}, held)
        engine.close(discard_work=not self.opts.keep_work)  # the work files are gone from _work/ too
        return manifest

    def _stages(self, the_plan: plan.Plan, engine: Engine, executor: Executor, workers: int) -> list[str]:
        """Every stage in turn; the last one's shards."""
        stages = the_plan.stages
        shards: list[str] = []
        rows: list[int] | None = None  # each of `shards`' rows, where every task said them
        for stage, after in zip(stages, stages[1:] + (None,)):
            ctx = StageContext(
                self.recipe,
                stage,
                self.layout.stage(stage.index),
                final=after is None,
                next_global=after.global_step if after else None,
                observers=self.observers,
                input_schema_bytes=input_schema.serialize(self.input_schema),
            )
            if stage.global_step is not None:
                if self.opts.resume and engine.store is not None:  # fitted in an earlier attempt, anywhere
                    work_store.fetch_fitted(engine.store, ctx.layout)
                self.reporter.fitting(stage.index, stage.global_step.label)
                self.fits[stage.global_step.label] = fit(
                    ctx, shards, executor, workers, self.files, self.opts.keep_work
                )
            if stage.index > 0:
                the_plan = the_plan.with_tasks(stage.index, plan.shard_tasks(stage.index, shards, rows))
            self.files.write_bytes(self.layout.plan, json.dumps(the_plan.describe(), indent=1).encode())
            tasks = the_plan.tasks[stage.index]
            assert tasks is not None  # stage 0's planned, a later one's made from the shards above
            shards, rows = self._stage(ctx, list(tasks), engine, executor)
            failpoint("stage-done")
            if stage.index > 0 and not self.opts.keep_work:
                # Its input, the stage before's shards, is read by nothing now (its tasks are
                # planned from their results' rows): _work/ holds two stages' shards at most.
                self.files.remove(self.layout.stage(stage.index - 1).data)
        return shards

    def _stage(
        self, ctx: StageContext, tasks: list[plan.Task], engine: Engine, executor: Executor
    ) -> tuple[list[str], list[int] | None]:
        """The stage's tasks not done yet on the CPU executor, or on a model pool of its own (torn
        down after, so models and GPU memory are freed before the next stage or fit), each
        result folded as it comes, the done ones' from their markers (resume); the stage's
        shards, and each one's rows where every task said them."""
        stage = ctx.stage
        if self.opts.resume and engine.store is not None:  # done in an earlier attempt, on any machine
            fetched = work_store.fetch_done(
                engine.store, ctx.layout, [t.name for t in tasks if not self.files.is_file(ctx.layout.done(t.name))]
            )
            if fetched:
                self.reporter.status(
                    f"stage {stage.index}: {count(fetched, 'task')} done in an earlier attempt, "
                    f"fetched from {engine.store.uri}"
                )
        folded = _Folded(self, ctx, tasks, [self.files.is_file(ctx.layout.done(t.name)) for t in tasks])
        todo = [i for i, done in enumerate(folded.done) if not done]
        if todo:
            engine.share(ctx, [tasks[i] for i in todo])
        self.reporter.stage(
            stage.index,
            tasks,
            lambda: [self.files.is_file(ctx.layout.done(t.name)) for t in tasks],
            lambda: self.files.bytes_under(ctx.layout.data) + self.files.bytes_under(ctx.layout.traces),
        )

        def take(j: int, result: TaskResult) -> None:
            """The j-th task to do has ended: its files brought in, its result folded."""
            task = tasks[todo[j]]
            if result.failed is None:
                engine.receive(ctx, result)
            else:  # its worker died too often: its rows go to the trace with the error, none is lost
                result = run_task(ctx, task, failure=result.failed)
            folded.ended(todo[j], result)

        if stage.resource_class != "model":
            self.reporter.status(
                f"stage {stage.index}: {count(len(tasks), 'task')} on "
                f"{count(min(stage.policy.parallel, len(tasks)), 'worker')}"
            )
            if todo:
                executor.run(ctx, [tasks[i] for i in todo], take)
        else:
            models = engine.model_pool(self.opts.model_workers, stage.policy.gpus)
            self.reporter.status(
                f"stage {stage.index}: {count(len(tasks), 'task')} on {count(len(models.workers), 'model worker')}"
            )
            try:
                if todo:
                    models.run(ctx, [tasks[i] for i in todo], take)
            except BaseException:
                models.close(kill=True)
                raise
            models.close()
        # An engine that loses a task would publish a run without its rows
        assert folded.next == len(tasks), f"stage {stage.index}: task {tasks[folded.next].name} never handed back"
        return folded.shards, folded.rows

    def _finish(self, the_plan: plan.Plan, entries: dict, held: dict) -> Manifest:
        recipe = self.recipe
        steps = []
        ordered = [READ_STEP] + [s.label for s in recipe.steps]
        for label in ordered:
            s = self.totals.get(label, StepStats())
            s.seconds += self.totals.get(f"prepare:{label}", StepStats()).seconds
            step = next((x for x in recipe.steps if x.label == label), None)
            fitted = self.fits.get(label, {})
            # the fields a step has not are left unset, so not written
            optional: dict = {"counts": s.counts} if s.counts else {}
            if fitted.get("summary") is not None:
                optional["summary"] = fitted["summary"]
            if fitted:
                optional["fit_seconds"] = round(fitted["seconds"], 3)
            if fitted.get("work_bytes"):  # what the fit held on disk (removed once fitted), by structure
                optional["work_bytes"] = fitted["work_bytes"]
            if step is not None and getattr(step.op_class, "changes_rows", False):
                # 1 -> n: `expanded` input rows produced the rows_out children, `added` more than they were
                optional.update(expanded=s.expanded, added=s.rows_out - s.expanded)
            steps.append(
                StepEntry(
                    step=label,
                    op=step.name if step else "read",
                    kind=step.op_class.kind if step else "read",
                    rows_in=s.rows_in,
                    rows_out=s.rows_out,
                    removed=s.removed,
                    seconds=round(s.seconds + fitted.get("seconds", 0.0), 3),
                    reasons=s.reasons,
                    **optional,
                )
            )
        funnel = [entry.model_dump(exclude_unset=True) for entry in steps]
        check_conservation(funnel)
        check_not_emptied(funnel, recipe.allow_empty)  # before publishing: _work stays for --resume
        trace_parts = {
            label: sorted(
                f"{self.layout.stage(st.index).trace(label)}/{name}"
                for st in the_plan.stages
                for name in self.files.names(self.layout.stage(st.index).trace(label), ".parquet")
            )
            for label in ordered
        }
        content = {
            "name": recipe.name,
            "recipe": recipe.display,
            "recipe_fingerprint": recipe.fingerprint(),
            "seed": recipe.seed,
            "limit": self.opts.limit,
            "rows_in": steps[0].rows_in,
            "rows_out": steps[-1].rows_out,
            **entries,
            "inputs": input_objects(self.sources),
        }
        if recipe.report.columns():  # as expanded: the recipe shown above keeps its ${VAR}s
            content["report"] = recipe.report.model_dump(exclude_none=True)
        if any(s.is_uri for s in self.sources):
            content["store"] = self._store()
        manifest = publish(
            recipe,
            self.layout,
            trace_parts,
            steps,
            content,
            self.lineage,
            self.files,
            self.started,
            self.still_ours,
            self._report if self.opts.report else None,
            held,
        )
        if self.layout.remote:
            # The copy of _work/ there, kept until the manifest is written for a --resume elsewhere
            # (every file of it is in _work/ now), and the mark: the manifest marks the prefix as curate's
            self.layout.files.remove(self.layout.work_files)
            self.layout.files.remove(self.layout.marker)
        if not self.opts.keep_work:
            self.files.remove(self.layout.work)
            if self.layout.remote:  # the run's local directory is its own
                self.files.remove(self.layout.local)
        if recipe.output.upload:
            output_formats.upload(Path(self.layout.root), recipe.output.upload, recipe.output.storage_options)
        return manifest

    def _report(self, manifest: Manifest, data: Path, trace: Path, target: Path) -> bool:
        """report.html of a run on a store, from its staged files, to `target`: whether it was
        written (one that cannot be is a warning, never a failed run)."""
        try:
            from curate.report.report import write_staged

            write_staged(manifest.to_dict(), self.layout.root, data, trace, target)
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the run's data stands
            self.reporter.status(f"warning: report.html not written ({type(e).__name__}: {e}); --no-report skips it")
            return False
        self.reporter.status(f"report: {self.layout.report}")
        return True

    def _store(self) -> dict:
        """The store's requests tried again (throttling, resets, timeouts), by the run's tasks and by
        this process for it (listing, footers, planning), in all and by reason."""
        reasons = dict(self.retried)
        for reason, n in retries.take_untallied().items():
            reasons[reason] = reasons.get(reason, 0) + n
        return {"retries": sum(reasons.values()), "retry_reasons": dict(sorted(reasons.items()))}


class _Folded:
    """A stage's results folded into the run's sums (each step's StepStats, the store's retries,
    the observers' summaries) in task order, as the tasks end: the sums' bytes (the manifest's
    reasons and counts keep the order they were first seen in; an observer's merge may depend
    on order) are those of folding the results one by one in task order, whatever order an
    engine ends them in. Of each task it keeps its shards' paths and rows (the next stage's
    tasks, or the run's data, in task order) and whether it is done. A result that ends before
    an earlier task's is not kept: its done marker (task.py, written before the result comes
    back, the same JSON) is read when its turn comes."""

    def __init__(self, run: "_Run", ctx: StageContext, tasks: list[plan.Task], done: list[bool]):
        self.run, self.ctx, self.tasks = run, ctx, tasks
        self.done = done  # by task: its marker is written (done before this attempt, or ended now)
        self.next = 0  # the first task not folded yet
        self.shards: list[str] = []
        self.rows: list[int] | None = []  # None once a task does not say its shards' rows (markers of older versions)
        self.catch_up()

    def ended(self, i: int, result: TaskResult) -> None:
        """Task `i` has ended (its marker is in _work/), with `result`."""
        self.done[i] = True
        if i == self.next:
            self._fold(result)
            self.next += 1
            self.catch_up()

    def catch_up(self) -> None:
        """Fold the tasks done after the last one folded, up to the first not done, from their markers."""
        while self.next < len(self.tasks) and self.done[self.next]:
            marker = self.ctx.layout.done(self.tasks[self.next].name)
            self._fold(TaskResult.from_json(self.run.files.read_bytes(marker)))
            self.next += 1

    def _fold(self, r: TaskResult) -> None:
        run = self.run
        for label, s in r.stats.items():
            run.totals.setdefault(label, StepStats()).add(s)
        for reason, n in r.retries.items():
            run.retried[reason] = run.retried.get(reason, 0) + n
        if r.observed:
            observers.merge(run.summaries, pickle.loads(run.files.read_bytes(self.ctx.layout.observed(r.task))))
        self.shards += [f"{self.ctx.layout.data}/{name}" for name in r.shards]
        if self.rows is not None and len(r.shard_rows) == len(r.shards):
            self.rows += r.shard_rows
        else:
            self.rows = None


def disk_full(layout: RunLayout, sources: list) -> CurateError:
    """ENOSPC as a user error: where, how much is free, about how much the run needs."""
    out = layout.local
    # ENOSPC is a local disk's: the run directory and the inputs measured where they are
    free = shutil.disk_usage(out if os.path.exists(out) else os.path.dirname(out)).free
    inputs = sum(os.stat(s.path).st_size for s in sources if os.path.exists(s.path))
    return CurateError(
        f"no space left on the device of {out} ({size(free)} free). A run needs room for its work "
        f"files and output, up to about twice its input ({size(2 * inputs)}). Free some space, "
        f"then continue with --resume"
    )
