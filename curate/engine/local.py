"""The local engine: a run's tasks on this machine, CPU stages on `--workers` spawned processes
(`LocalExecutor`), model stages on a model pool (pool.py). It only runs tasks (executor.py);
with a work store (`--work-store`, for an output at a URI), each task copies its files there
once done, as the Ray engine's tasks do (work_store.py), so --resume continues on any machine."""

from __future__ import annotations

import functools
from concurrent.futures import Future

from curate.engine import work_store
from curate.engine.context import Progress, StageContext
from curate.engine.dispatch import dispatch
from curate.engine.executor import Engine, Executor
from curate.engine.failpoints import failpoint
from curate.engine.layout import RunLayout
from curate.engine.plan import Task, available_cores
from curate.engine.pool import ModelPool
from curate.engine.result import TaskResult
from curate.engine.task import run_task
from curate.engine.worker import PoolSlots, spawn_pool, stop_pool


class LocalExecutor(PoolSlots, Executor):
    """Runs tasks on `workers` spawned processes (inline for one worker) and relays their progress;
    with a work `store`, each task's files go there once it is done."""

    def __init__(self, workers: int, progress: Progress, layout: RunLayout, store=None):
        self.progress = progress
        self.store = store
        self.pool = None
        self.ctx: StageContext | None = None
        if workers > 1:
            import multiprocessing

            self.queue = multiprocessing.get_context("spawn").Queue()
            self.pool = spawn_pool(workers, self.queue, layout.workers_lock)

    def run(self, ctx: StageContext, tasks: list[Task]) -> list[TaskResult]:
        parallel = ctx.stage.policy.parallel
        if self.pool is None or parallel == 1:
            return [self._inline(ctx, t) for t in tasks]
        self.ctx = ctx
        return dispatch(tasks, list(range(parallel)), self)

    def _inline(self, ctx: StageContext, task: Task) -> TaskResult:
        result = run_task(ctx, task, self.progress)
        if self.store is not None:
            work_store.put_task_files(self.store, ctx.layout, result)
        return result

    def start(self, slot: int, task: Task) -> Future:
        return self.pool.submit(work_store.run_task, self.store, self.ctx, task)

    def collect(self, handle: Future) -> TaskResult:
        return handle.result()

    def cancel(self, handles: list[Future]) -> None:
        for f in handles:
            f.cancel()

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        """fn over the items, in the worker processes when there are several (which see
        `files_in` as this process does)."""
        if self.pool is None:
            return [fn(*args) for args in zip(*iterables)]
        # Not pool.map: on a failed piece it cancels the rest, and killing a pool that holds
        # cancelled work raises InvalidStateError in its thread on Python 3.11 (a traceback on
        # stderr). The rest stays queued; the run's error path kills the pool.
        futures = [self.pool.submit(_piece, fn, *args) for args in zip(*iterables)]
        return [f.result() for f in futures]

    def close(self, kill: bool = False) -> None:
        if self.pool is not None:
            stop_pool(self.pool, kill)


def _piece(fn, *args):
    """One piece of `map` work in a worker process."""
    result = fn(*args)
    failpoint("map-piece")  # its work done, its result not yet handed back
    return result


class LocalEngine(Engine):
    """`store`: the URI of the work store its tasks copy their files to, if any; `resume`: whether
    the run resumes (the store then keeps what an earlier attempt put there)."""

    def __init__(self, progress: Progress, layout: RunLayout, store: str | None = None, resume: bool = False):
        self.progress = progress
        self.layout = layout
        self.cores = available_cores()
        if store:
            self.store = work_store.for_run(store, layout)
            self.store.start(resume)

    def cpu_executor(self, workers: int) -> LocalExecutor:
        return LocalExecutor(workers, self.progress, self.layout, self.store)

    def model_pool(self, cpu_workers: int) -> ModelPool:
        return ModelPool(self.progress, self.layout, cpu_workers, self.store)

    def close(self, discard_work: bool = False) -> None:
        """With `discard_work` (a finished run without --keep-work), the store's copy goes too."""
        if discard_work and self.store is not None:
            self.store.clear()
