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
   (execution.py, _Folded): of a finished task the driver keeps its shards' paths and rows only,
   so its memory hardly grows with the number of tasks. On --resume, the tasks and fits the work store holds
   as done (an earlier attempt's, on any machine) are fetched into _work/ first (work_store.py),
   so only the rest runs.
4. Conservation is checked on each step's summed counts (rows in = rows out + rows traced),
   the run's observers (observers.py) give their manifest entries, and the run is published
   (publish.py): data/, trace/, then manifest.json, the commit marker. _work/ goes last.

This module takes a run from its recipe to an opened run directory and back (options, progress
callbacks, a Hub output's staging and publication, errors); execution.py runs steps 2 to 4.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from curate import preflight
from curate.engine.run.execution import Execution
from curate.engine.rundir.layout import Files, RunLayout
from curate.engine.rundir.run_dir import discard_failed_start, open_run_dir, produced_anything, remembered_work_store
from curate.engine.tasks.context import READ_BYTES
from curate.engine.work import engines
from curate.errors import CurateError, NoSpace
from curate.io import hub, output_formats, retries
from curate.io.sources import Source
from curate.manifest import Manifest, read as read_manifest
from curate.recipe import Recipe
from curate.words import size


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
    retries.take_output()  # the output store's retries are this run's from here
    created_out = not Files().exists(layout.local)
    try:
        lock, finished, resumed = open_run_dir(
            layout, _fingerprint(recipe, sources, opts), resume=opts.resume, overwrite=opts.overwrite
        )
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
            execution = Execution(recipe, opts, reporter, layout, sources, started, lock.check, checked.decided)
            return execution.execute().of_run(layout.root)
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


def _fingerprint(recipe: Recipe, sources: list[Source], opts: RunOptions) -> dict:
    """What a --resume of the run is checked against (run_dir.py keeps it in the run directory).
    Made for that check only, not kept by the run: an entry per input file (0.2 MB at 1,000 files)."""
    return {
        "recipe": recipe.fingerprint(),
        "inputs": [s.fingerprint() for s in sources],
        "limit": opts.limit,
        **({"work_store": opts.work_store} if opts.work_store else {}),
    }


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
