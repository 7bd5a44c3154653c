"""The local executor: a stage's tasks on this machine's cores, one spawned process per worker.

It only runs tasks (see executor.py); what a run means lives in runner.py.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from curate.engine import plan
from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine.worker import Progress, StageContext, run_task, run_task_in_worker, worker_init


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class LocalExecutor(Executor):
    """Runs tasks on `workers` spawned processes (inline for one worker) and relays their progress."""

    def __init__(self, workers: int, progress: Progress, work: Path):
        self.progress = progress
        self.executor = None
        if workers > 1:
            mp = multiprocessing.get_context("spawn")
            self.queue = mp.Queue()
            self.executor = ProcessPoolExecutor(workers, mp_context=mp, initializer=worker_init,
                                                initargs=(self.queue, os.getpid(), work))

    def run(self, ctx: StageContext, tasks: list[plan.Task], parallel: int) -> list[dict]:
        """Run `tasks`, at most `parallel` at a time; results in task order."""
        if self.executor is None or parallel == 1:
            return [run_task(ctx, t, self.progress) for t in tasks]
        results: list[dict | None] = [None] * len(tasks)
        queued = list(enumerate(tasks))
        futures, pending = {}, set()
        try:
            while queued or pending:
                while queued and len(pending) < parallel:
                    i, task = queued.pop(0)
                    future = self.executor.submit(run_task_in_worker, ctx, task)
                    futures[future] = i
                    pending.add(future)
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                drain_progress(self.queue, self.progress)
                for f in done:
                    results[futures[f]] = f.result()
                    failpoint("task-done")
        except BaseException:
            for f in pending:
                f.cancel()
            raise
        drain_progress(self.queue, self.progress)
        return results

    def map(self, fn, *iterables) -> list:
        """fn over the items, in the worker processes when there are several."""
        if self.executor is None:
            return [fn(*args) for args in zip(*iterables)]
        return list(self.executor.map(fn, *iterables))


    def close(self, kill: bool = False) -> None:
        """Stop the workers: after their tasks, or at once (`kill`, on an error or interrupt: what
        they were writing is under temporary names, and the next run redoes those tasks)."""
        if self.executor is None:
            return
        if kill:
            for process in list((self.executor._processes or {}).values()):
                process.kill()
            for process in list((self.executor._processes or {}).values()):
                process.join()
        self.executor.shutdown(wait=True, cancel_futures=True)


def drain_progress(queue, progress: Progress) -> None:
    """Relay the rows counts workers have reported so far."""
    while True:
        try:
            label, rows_in, rows_out = queue.get_nowait()
        except queue_module.Empty:
            return
        progress(label, rows_in, rows_out)


def stage_parallelism(stage: plan.Stage, workers: int, cores: int | None = None) -> int:
    """How many of the stage's tasks may run at once, from the resources its operators declare
    (`cores`: the engine's; this machine's by default)."""
    cores = cores or available_cores()
    need_cpus = max([s.op_class.resources.cpus for s in stage.all_steps] + [1.0])
    parallel = min(workers, max(1, int(cores // need_cpus)))
    if stage.resource_class == "io":
        # Network-bound: one process's event loop keeps hundreds of requests in flight, and the
        # client's CPU per request is what counts, so few processes (one per 4 cores; with one,
        # the stage runs in the main process and spawns nothing).
        parallel = min(parallel, max(1, cores // 4))
    need_gb = max([s.op_class.resources.memory_gb or 0 for s in stage.all_steps] + [0])
    if need_gb:
        total_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        parallel = min(parallel, max(1, int(total_gb // need_gb)))
    return parallel
