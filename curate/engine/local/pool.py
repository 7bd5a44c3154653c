"""The model worker pool: runs a model stage's tasks (see plan.py) on processes that each load
the stage's models once.

One worker per visible GPU, pinned with CUDA_VISIBLE_DEVICES, so no GPU sits idle (or as the
stage's operators declare with `Resources.gpus`: 2, two GPUs a worker; 0.5, two workers a GPU);
with no GPU, `cpu_workers` processes (default 1). Either way the workers share the cores (torch's and the
tokenizers' threads). A worker that dies
(killed, out of memory, a crashing kernel) is replaced and its task run again from scratch
(what it wrote was under temporary names); a task whose worker dies twice comes back as
`TaskResult.lost` and the runner traces its rows. When the stage is done each worker runs its
operators' `teardown()` and exits, so models and GPU memory are freed before the next stage or
a fit.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.tasks import context
from curate.engine.tasks.context import Progress, StageContext
from curate.engine.tasks.plan import Task, available_cores
from curate.engine.work import work_store
from curate.engine.work.dispatch import WorkerLost, dispatch
from curate.engine.work.executor import Executor
from curate.engine.work.worker import PoolSlots, in_run, spawn_pool, stop_pool, worker_context
from curate.errors import CurateError

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


def gpu_workers(devices: list[str], gpus_each: float) -> list[str]:
    """Each model worker's CUDA_VISIBLE_DEVICES for workers that hold `gpus_each` GPUs (the stage's
    Policy.gpus; 0: one each): a whole number of GPUs a worker, or a GPU shared by 1 // gpus_each."""
    if gpus_each <= 0 or gpus_each == 1:
        return list(devices)
    if gpus_each < 1:
        return [d for d in devices for _ in range(int(1 // gpus_each))]
    each = math.ceil(gpus_each)
    if each > len(devices):
        raise CurateError(f"a model step declares {gpus_each:g} GPUs a worker; this machine shows {len(devices)}")
    return [",".join(devices[i : i + each]) for i in range(0, len(devices) - each + 1, each)]


def cores_per_worker(devices: list[str | None]) -> int:
    """Each model worker's share of the cores (one worker per device): GPU workers need theirs too,
    for the tokenizer's rayon pool, which works while the GPU waits (with one thread each, curate's
    embed step on an H100 took 3.8x the time of a bare SentenceTransformer.encode: bench/RESULTS.md,
    embed-gpu)."""
    return max(1, available_cores() // len(devices))


class _Worker:
    """One model worker process (a one-process pool, so it can be pinned and replaced alone)."""

    def __init__(self, queue, threads: int, device: str | None):
        self.args = (1, queue, threads, device)
        self.pool = spawn_pool(*self.args)

    def restart(self) -> None:
        stop_pool(self.pool, kill=True)
        self.pool = spawn_pool(*self.args)


class ModelPool(PoolSlots, Executor):
    worker = "model worker"

    def __init__(self, progress: Progress, layout: RunLayout, cpu_workers: int = 1, store=None, gpus_each: float = 0):
        self.progress = progress
        self.store = store  # a work store each task's files go to once it is done (work_store.py)
        self.queue = worker_context().Queue()
        gpus = visible_gpus()
        devices: list[str | None] = list(gpu_workers(gpus, gpus_each)) or [None] * max(1, cpu_workers)
        threads = cores_per_worker(devices)
        self.workers = [_Worker(self.queue, threads, device) for device in devices]
        self.workers_lock = layout.workers_lock
        self.ctx: StageContext | None = None

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        """Each free worker takes the next task."""
        self.ctx = ctx
        dispatch(tasks, self.workers, self, take, attempts=ATTEMPTS)

    def start(self, slot: _Worker, task: Task) -> Future:
        return slot.pool.submit(in_run, self.workers_lock, work_store.run_task, self.store, self.ctx, task)

    def collect(self, handle: Future) -> TaskResult:
        try:
            return handle.result()
        except BrokenProcessPool as e:
            raise WorkerLost(str(e)) from None

    def replace(self, slot: _Worker) -> None:
        slot.restart()

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        """fn over the items on the model workers (processes of this machine: they see `files_in`)."""
        futures = [
            self.workers[i % len(self.workers)].pool.submit(in_run, self.workers_lock, fn, *args)
            for i, args in enumerate(zip(*iterables))
        ]
        return [f.result() for f in futures]

    def close(self, kill: bool = False) -> None:
        if not kill and self.ctx is not None:  # free models and GPU memory in each worker
            for w in self.workers:
                w.pool.submit(context.teardown, self.ctx).result()
        for w in self.workers:
            stop_pool(w.pool, kill)
