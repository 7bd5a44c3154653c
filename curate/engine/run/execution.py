"""One execution of a run (runner.py opens its run directory and hands it over): the engine made
from the registry, the plan, each stage in turn (a Global step fitted first, fit.py; the stage's
tasks not done yet on the engine's executors, each result folded in task order as it comes:
_Folded), then the funnel checked (rows in = rows out + rows traced at every step), the
observers' entries taken, and the run published (publish.py), its manifest built through its
model and written last. The run's sums are the fold of its task results, whatever order an
engine ends them in: a finished task leaves only its shards' paths and rows in the driver.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

from curate import observers
from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.run.fit import fit
from curate.engine.run.publish import lineage, publish, stage_data
from curate.engine.rundir.layout import Files, RunLayout
from curate.engine.tasks import plan
from curate.engine.tasks.context import READ_STEP, StageContext
from curate.engine.tasks.task import run_task
from curate.engine.work import engines, work_store
from curate.engine.work.executor import Engine, Executor
from curate.io import input_schema, output_formats, retries
from curate.io.sources import Source, input_objects
from curate.manifest import Manifest, StepEntry
from curate.recipe import Recipe
from curate.trace import StepStats, check_conservation, check_not_emptied
from curate.words import count

if TYPE_CHECKING:  # the runner makes an Execution: at run time it is imported the other way
    from curate.engine.run.runner import Reporter, RunOptions


class Execution:
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
        except BaseException:
            engine.close()
            raise
        try:  # the executor's workers merge the traces (publish.py)
            held = work_store.held_copies(engine.store, linked) if self.layout.remote else {}
            manifest = self._finish(the_plan, {**entries, **engine.manifest_entries()}, held, executor.map)
        except BaseException:
            executor.close(kill=True)
            raise
        executor.close()
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
            self.files.write_bytes(self.layout.plan, the_plan.json_bytes())
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

    def _finish(self, the_plan: plan.Plan, entries: dict, held: dict, map: Callable[..., list]) -> Manifest:
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
            map,
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

    def __init__(self, run: Execution, ctx: StageContext, tasks: list[plan.Task], done: list[bool]):
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
