"""The Ray side of a task: what a Ray worker process needs of the run (its progress sink, the
work directory and store, its cores), the remote functions and the model actor."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import ray

from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.rundir.run_dir import hold_worker_lock
from curate.engine.tasks import context
from curate.engine.tasks.context import StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work import shared_dir, work_store
from curate.engine.work.work_store import WorkStore
from curate.engine.work.worker import use_cores

RETRIES = 3  # runs of a task whose worker died, after the first


@ray.remote(num_cpus=0)
class ProgressSink:
    """Rows counts from the workers, summed per step until the driver takes them."""

    def __init__(self) -> None:
        self.rows: dict[str, list[int]] = {}

    def add(self, label: str, rows_in: int, rows_out: int) -> None:
        counts = self.rows.setdefault(label, [0, 0])
        counts[0] += rows_in
        counts[1] += rows_out

    def take(self) -> dict[str, list[int]]:
        rows, self.rows = self.rows, {}
        return rows


class _SinkQueue:
    """Where run_task_in_worker puts a Ray task's progress (a queue in the local engine)."""

    def __init__(self, sink):
        self.sink = sink

    def put(self, item: tuple[str, int, int]) -> None:
        self.sink.add.remote(*item)


@dataclass(frozen=True)
class Setup:
    """What a worker needs of the run besides its task: where progress goes, the work directory,
    its cores, the driver's working directory (relative paths in a recipe), and the work store
    and engine session where a store is given (work_store.py)."""

    sink: object
    layout: RunLayout
    threads: int
    cwd: str
    store: WorkStore | None
    session: str


_locked: set[str] = set()


def _enter(setup: Setup) -> bool:
    """Ready this worker process for the run's tasks: the driver's working directory (where this
    node has it), progress to the run's sink, the run's worker lock held (as the local engine's
    workers hold it: a resume waits for them; a blind node's workers write no file the run
    process reads), and `threads` cores for Arrow and the numeric libraries. Returns whether this
    node is blind: it does not see the run's `_work/` (whose lock file the live run holds)."""
    _to_cwd(setup.cwd)
    blind = _blind(setup)
    if not blind and setup.layout.work not in _locked:
        hold_worker_lock(setup.layout.workers_lock)
        _locked.add(setup.layout.work)
    use_cores(setup.threads)
    return blind


def _blind(setup: Setup) -> bool:
    """Whether this node does not see the run's `_work/` (whose lock file the live run holds)."""
    return not os.path.exists(setup.layout.lock)


def _to_cwd(cwd: str) -> None:
    """The `curate run` process's working directory, where this node has it (relative paths)."""
    if os.getcwd() != cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def _run_here(setup: Setup, ctx: StageContext, task: Task) -> TaskResult:
    blind = _enter(setup)
    return work_store.run_task(setup.store, ctx, task, blind, setup.session, _SinkQueue(setup.sink))


@ray.remote(max_retries=RETRIES)
def run_task(setup: Setup, ctx: StageContext, task: Task) -> TaskResult:
    return _run_here(setup, ctx, task)


@ray.remote(max_retries=RETRIES)
def call(cwd: str, fn, *args):
    """One piece of `map` work (a fit's, the publisher's) on the one CPU a task reserves."""
    _to_cwd(cwd)
    use_cores(1)
    result = fn(*args)
    failpoint("map-piece")  # its files written, its result not delivered: a retry must redo it alike
    return result


@ray.remote(max_retries=RETRIES)
def call_sharing(setup: Setup, directory: str, view: tuple, fn, *args):
    """A piece of a fit's `map` with a work store: on a node that sees the run's `_work/`, as
    `call`; on a blind one, in its mirror, with the fit's directory shared through the store
    (shared_dir.py). Returns the piece's result, the files it put there and whether it ran blind."""
    _to_cwd(setup.cwd)
    use_cores(1)
    blind = _blind(setup)
    if blind:
        assert setup.store is not None  # call_sharing: the run has a work store
        work_store.mirror(setup.store.work, setup.session)
        result, written = shared_dir.run_piece(setup.store, Path(directory), view, fn, args)
    else:
        result, written = fn(*args), {}
    failpoint("map-piece")
    return result, written, blind


@ray.remote(max_restarts=RETRIES, max_task_retries=RETRIES)
class ModelWorker:
    """One model actor: the stage's operators (its models) are built once, on its first task,
    and kept for the stage's other tasks (worker.py caches them per process)."""

    def run(self, setup: Setup, ctx: StageContext, task: Task) -> TaskResult:
        return _run_here(setup, ctx, task)

    def teardown(self, ctx: StageContext) -> None:
        context.teardown(ctx)
