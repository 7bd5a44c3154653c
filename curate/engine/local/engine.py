"""The local engine: a run's tasks on this machine, CPU stages on `--workers` spawned processes
(`LocalExecutor`; a stage with no operator on as many threads), model stages on a model pool
(pool.py). It only runs tasks (executor.py); with a work store (`--work-store`, for an output at
a URI), each task copies its files there once done, as the Ray engine's tasks do
(work_store.py), so --resume continues on any machine."""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Callable

from curate.engine.failpoints import failpoint
from curate.engine.local.pool import ModelPool
from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.tasks.context import Progress, StageContext, teardown
from curate.engine.tasks.plan import Task, available_cores
from curate.engine.tasks.steps import event_loop
from curate.engine.tasks.task import is_async_stage, run_task, run_task_async
from curate.engine.work import work_store
from curate.engine.work.dispatch import dispatch
from curate.engine.work.executor import Engine, Executor
from curate.engine.work.worker import FutureSlots, PoolSlots, in_run, spawn_pool, stop_pool, worker_context

# An async stage's tasks under way at once in one process (LocalExecutor._overlapped): the next one
# reads its input and sends its first requests while the one before sends its last and writes.
TASKS_OVERLAPPED = 2

# CPU workers started ahead of the run that takes them: (processes, pool, its progress queue)
_ahead: tuple[int, ProcessPoolExecutor, object] | None = None


def start_workers_ahead(processes: int, start: int) -> None:
    """Start `start` of the `processes` CPU workers of the next LocalExecutor made in this process
    now: each spends about a second importing curate, Arrow and a store's client before its first
    task, which then overlaps the run process's own start (listing and checking the input files,
    opening the run directory, planning) instead of following it. Workers no executor takes are
    stopped by `stop_workers_ahead`."""
    global _ahead
    stop_workers_ahead()
    pool, queue = _new_pool(processes)
    for _ in range(start):
        pool.submit(int)  # no work: ProcessPoolExecutor starts a process for each submit while none is idle
    _ahead = (processes, pool, queue)


def stop_workers_ahead() -> None:
    """Stop the workers started ahead that no executor took (the run stopped before it made one):
    at once, as they have no task to finish."""
    global _ahead
    if _ahead is not None:
        stop_pool(_ahead[1], kill=True)
        _ahead = None


def _cpu_pool(processes: int) -> tuple[ProcessPoolExecutor, object]:
    """A pool of `processes` CPU workers and its progress queue: the one started ahead if it has
    that many."""
    global _ahead
    if _ahead is not None and _ahead[0] == processes:
        (_, pool, queue), _ahead = _ahead, None
        return pool, queue
    stop_workers_ahead()
    return _new_pool(processes)


def _new_pool(processes: int) -> tuple[ProcessPoolExecutor, object]:
    queue = worker_context().Queue()
    return spawn_pool(processes, queue), queue


class LocalExecutor(PoolSlots, Executor):
    """Runs tasks on `workers` spawned processes (inline for one worker, on threads for a stage with
    no operator: `Policy.threads`) and relays their progress;
    with a work `store`, each task's files go there once it is done."""

    def __init__(self, workers: int, progress: Progress, layout: RunLayout, store=None):
        self.progress = progress
        self.store = store
        self.pool = None
        self.ctx: StageContext | None = None
        self.workers_lock = layout.workers_lock
        if workers > 1:
            self.pool, self.queue = _cpu_pool(workers)

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        parallel = ctx.stage.policy.parallel
        if self.pool is not None and parallel > 1 and not ctx.stage.policy.threads:
            self.ctx = ctx  # the workers tear the stage down when the pool closes
            dispatch(tasks, list(range(parallel)), self, take)
            return
        try:
            if parallel == 1 or self.pool is None:
                if is_async_stage(ctx):
                    event_loop().run_until_complete(self._overlapped(ctx, tasks, take))
                else:
                    for i, task in enumerate(tasks):
                        take(i, self._inline(ctx, task))
            else:
                with _ThreadSlots(functools.partial(self._inline, ctx), self.progress, parallel) as threads:
                    dispatch(tasks, list(range(parallel)), threads, take)
        finally:
            # The stage ran in this process: its operators free what they loaded now, as a worker's
            # do when its pool closes, not at the process's exit (a model's memory through the
            # stages after it; an LLM step's HTTP session, left for the garbage collector to find
            # unclosed in a run from Python).
            teardown(ctx)

    def _inline(self, ctx: StageContext, task: Task, progress: Progress | None = None) -> TaskResult:
        return self._stored(ctx, run_task(ctx, task, progress or self.progress))

    def _stored(self, ctx: StageContext, result: TaskResult) -> TaskResult:
        if self.store is not None:
            work_store.put_task_files(self.store, ctx.layout, result)
        return result

    async def _overlapped(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        """An async stage's tasks in this process, TASKS_OVERLAPPED at once on its event loop. One
        after another, each drained its requests in flight before the next sent any, and read its
        input, built its rows and wrote its shards with none in flight (generate_qa over 4 files:
        bench/sections/synth.py). Each task writes its own files and the runner folds the results
        in task order, so the output is the same; the backend's limit on requests in flight is
        shared by them all."""
        running: dict[asyncio.Future, int] = {}
        try:
            for i, task in enumerate(tasks):
                while len(running) >= TASKS_OVERLAPPED:
                    await self._take_done(ctx, running, take)
                running[asyncio.ensure_future(run_task_async(ctx, task, self.progress))] = i
            while running:
                await self._take_done(ctx, running, take)
        finally:  # a task failed (or the run is stopping): the others abort what they were writing
            for pending in running:
                pending.cancel()
            if running:
                await asyncio.wait(running)

    async def _take_done(self, ctx: StageContext, running: dict, take: Callable[[int, TaskResult], None]) -> None:
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for future in sorted(done, key=running.__getitem__):
            i = running.pop(future)
            take(i, self._stored(ctx, future.result()))  # a failed task's error raised here

    def start(self, slot: int, task: Task) -> Future:
        assert self.pool is not None  # run() dispatches here only with a pool
        return self.pool.submit(in_run, self.workers_lock, work_store.run_task, self.store, self.ctx, task)

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
        futures = [self.pool.submit(in_run, self.workers_lock, _piece, fn, *args) for args in zip(*iterables)]
        return [f.result() for f in futures]

    def close(self, kill: bool = False) -> None:
        if self.pool is not None:
            stop_pool(self.pool, kill)


class _Stopped(Exception):
    """A task on a thread stopped at its next batch: its stage ended (an error, an interrupt)."""


class _ThreadSlots(FutureSlots):
    """A stage's tasks on `parallel` threads of the run process (the plan's `Policy.threads`).
    A thread cannot be killed: when the stage ends early, each running task raises `_Stopped`
    at its next batch (from its progress call), which aborts what it was writing, and the stage
    waits for that before the run unwinds; no file is written after the run has let go of it."""

    def __init__(self, run_one, progress: Progress, parallel: int):
        self.run_one, self.outer = run_one, progress
        self.pool = ThreadPoolExecutor(parallel, thread_name_prefix="curate-task")
        self.stopping = threading.Event()
        self.reporting = threading.Lock()  # the progress display is the run's, fed one call at a time

    def progress(self, label: str, rows_in: int, rows_out: int) -> None:
        if self.stopping.is_set():
            raise _Stopped()
        with self.reporting:
            self.outer(label, rows_in, rows_out)

    def start(self, slot: int, task: Task) -> Future:
        return self.pool.submit(self.run_one, task, self.progress)

    def cancel(self, handles: list[Future]) -> None:
        self.stopping.set()
        for handle in handles:
            handle.cancel()
        wait(handles)

    def __enter__(self) -> "_ThreadSlots":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _piece(fn, *args):
    """One piece of `map` work in a worker process."""
    result = fn(*args)
    failpoint("map-piece")  # its work done, its result not yet handed back
    return result


class LocalEngine(Engine):
    """`store`: the URI of the work store its tasks copy their files to, if any; `resume`: whether
    the run resumes (the store then keeps what an earlier attempt put there)."""

    @classmethod
    def from_config(cls, config) -> "LocalEngine":
        return cls(config.progress, config.layout, config.store, config.resume)

    def __init__(self, progress: Progress, layout: RunLayout, store: str | None = None, resume: bool = False):
        self.progress = progress
        self.layout = layout
        self.cores = available_cores()
        if store:
            self.store = work_store.for_run(store, layout)
            self.store.start(resume)

    def cpu_executor(self, workers: int) -> LocalExecutor:
        return LocalExecutor(workers, self.progress, self.layout, self.store)

    def model_pool(self, cpu_workers: int, gpus_each: float = 0.0) -> ModelPool:
        return ModelPool(self.progress, self.layout, cpu_workers, self.store, gpus_each)

    def close(self, discard_work: bool = False) -> None:
        """With `discard_work` (a finished run without --keep-work), the store's copy goes too."""
        if discard_work and self.store is not None:
            self.store.clear()
