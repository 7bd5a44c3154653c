"""The model worker pool: runs a model stage's tasks (see plan.py) on processes that each load
the stage's models once.

One worker per visible GPU, pinned with CUDA_VISIBLE_DEVICES, so no GPU sits idle; with no GPU,
`cpu_workers` processes (default 1) that share the cores as torch threads. A worker that dies
(killed, out of memory, a crashing kernel) is replaced and its task run again from scratch
(what it wrote was under temporary names); a task whose worker dies twice comes back as
`{"failed": error}` and the runner traces its rows. When the stage is done each worker runs
`teardown()` and exits, so models and GPU memory are freed before the next stage or a fit.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine.local import available_cores, drain_progress
from curate.engine.plan import Task
from curate.engine.worker import Progress, StageContext, run_task_in_worker, teardown_in_worker, worker_init

ATTEMPTS = 2


def visible_gpus() -> list[str]:
    """CUDA devices this process may use, without importing torch: CUDA_VISIBLE_DEVICES when set,
    else the GPUs the NVIDIA driver lists."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip() and d.strip() != "-1"]
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


class _Worker:
    """One model worker process (a one-process executor, so it can be pinned and replaced alone)."""

    def __init__(self, queue, work: Path, threads: int, device: str | None):
        self.args = (queue, os.getpid(), work, threads, device)
        self.executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=worker_init,
                                   initargs=self.args)

    def restart(self) -> None:
        self.stop(kill=True)
        self.executor = self._start()

    def stop(self, kill: bool = False) -> None:
        if kill:
            for process in list((self.executor._processes or {}).values()):
                process.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)


class ModelPool(Executor):
    def __init__(self, progress: Progress, work: Path, cpu_workers: int = 1):
        self.progress = progress
        self.queue = multiprocessing.get_context("spawn").Queue()
        gpus = visible_gpus()
        devices: list[str | None] = list(gpus) or [None] * max(1, cpu_workers)
        threads = 1 if gpus else max(1, available_cores() // len(devices))
        self.workers = [_Worker(self.queue, work, threads, device) for device in devices]
        self.ctx: StageContext | None = None

    def run(self, ctx: StageContext, tasks: list[Task], parallel: int) -> list[dict]:
        """Each free worker takes the next task; results in task order."""
        self.ctx = ctx
        results: list[dict | None] = [None] * len(tasks)
        attempts = [0] * len(tasks)
        queued = list(range(len(tasks)))
        running: dict[Future, tuple[int, _Worker]] = {}
        free = list(self.workers)
        while queued or running:
            while queued and free:
                i, worker = queued.pop(0), free.pop(0)
                attempts[i] += 1
                running[worker.executor.submit(run_task_in_worker, ctx, tasks[i])] = (i, worker)
            done, _ = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
            drain_progress(self.queue, self.progress)
            for future in done:
                i, worker = running.pop(future)
                try:
                    results[i] = future.result()
                    failpoint("task-done")
                except BrokenProcessPool as e:  # the worker died: replace it, run the task again
                    worker.restart()
                    if attempts[i] < ATTEMPTS:
                        queued.insert(0, i)
                    else:
                        results[i] = {"failed": f"the model worker died twice on this task ({e})"}
                free.append(worker)
        drain_progress(self.queue, self.progress)
        return results

    def map(self, fn, *iterables) -> list:
        futures = [self.workers[i % len(self.workers)].executor.submit(fn, *args)
                   for i, args in enumerate(zip(*iterables))]
        return [f.result() for f in futures]

    def close(self, kill: bool = False) -> None:
        if not kill and self.ctx is not None:  # free models and GPU memory in each worker
            for worker in self.workers:
                worker.executor.submit(teardown_in_worker, self.ctx).result()
        for worker in self.workers:
            worker.stop(kill)
