"""The local engine: a run's tasks on this machine, CPU stages on `--workers` spawned processes
(`LocalExecutor`), model stages on a model pool (pool.py). It only runs tasks (executor.py)."""

from __future__ import annotations

import functools
from concurrent.futures import Future

from curate.engine.context import Progress, StageContext
from curate.engine.dispatch import dispatch
from curate.engine.executor import Engine, Executor
from curate.engine.failpoints import failpoint
from curate.engine.layout import RunLayout
from curate.engine.plan import Task, available_cores
from curate.engine.pool import ModelPool
from curate.engine.result import TaskResult
from curate.engine.task import run_task
from curate.engine.worker import PoolSlots, run_task_in_worker, spawn_pool, stop_pool


class LocalExecutor(PoolSlots, Executor):
    """Runs tasks on `workers` spawned processes (inline for one worker) and relays their progress."""

    def __init__(self, workers: int, progress: Progress, layout: RunLayout):
        self.progress = progress
        self.pool = None
        self.ctx: StageContext | None = None
        if workers > 1:
            import multiprocessing

            self.queue = multiprocessing.get_context("spawn").Queue()
            self.pool = spawn_pool(workers, self.queue, layout.workers_lock)

    def run(self, ctx: StageContext, tasks: list[Task]) -> list[TaskResult]:
        parallel = ctx.stage.policy.parallel
        if self.pool is None or parallel == 1:
            return [run_task(ctx, t, self.progress) for t in tasks]
        self.ctx = ctx
        return dispatch(tasks, list(range(parallel)), self)

    def start(self, slot: int, task: Task) -> Future:
        return self.pool.submit(run_task_in_worker, self.ctx, task)

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
        return list(self.pool.map(functools.partial(_piece, fn), *iterables))

    def close(self, kill: bool = False) -> None:
        if self.pool is not None:
            stop_pool(self.pool, kill)


def _piece(fn, *args):
    """One piece of `map` work in a worker process."""
    result = fn(*args)
    failpoint("map-piece")  # its work done, its result not yet handed back
    return result


class LocalEngine(Engine):
    def __init__(self, progress: Progress, layout: RunLayout):
        self.progress = progress
        self.layout = layout
        self.cores = available_cores()

    def cpu_executor(self, workers: int) -> LocalExecutor:
        return LocalExecutor(workers, self.progress, self.layout)

    def model_pool(self, cpu_workers: int) -> ModelPool:
        return ModelPool(self.progress, self.layout, cpu_workers)
