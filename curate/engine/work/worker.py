"""Worker process plumbing, the same for every local pool: start-up (cores, GPU pinning, the
run's worker lock), dying with the parent, leaving signals to it, and errors that cross the
process boundary. What a task does is in task.py."""

from __future__ import annotations

import errno
import multiprocessing
import multiprocessing.util
import os
import queue as queue_module
import signal
import sys
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

import pyarrow as pa

from curate.engine.result import TaskResult
from curate.engine.rundir.run_dir import hold_worker_lock
from curate.engine.tasks.context import Progress, StageContext
from curate.engine.tasks.plan import Task
from curate.engine.tasks.task import run_task
from curate.engine.work.dispatch import Slots
from curate.errors import CurateError, NoSpace
from curate.lifetime import die_with_parent

_queue = None  # where this worker's progress goes (the pool's queue)
_worker_lock = None  # fd of the run's _work/workers.lock, held from the first task until the process exits


def worker_context() -> multiprocessing.context.ForkServerContext:
    """Where worker processes come from: forked from a server process that imported this module
    (Arrow, numpy, the task code) and the program's main module once, so a pool starts without a
    second of imports per worker at every run (half a worker's CPU on a small task). Never forked
    from the parent itself, which holds threads and locks; the server is a fresh interpreter with
    none but its libraries' own (fork-safe) ones."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["__main__", __name__])
    return context


def worker_init(queue, environ: dict[str, str], threads: int = 1, device: str | None = None) -> None:
    """Each worker dies with the run, leaves interrupts to it, and uses `threads` cores (CPU
    workers: one each, one worker per core). A model worker may be pinned to one GPU (`device`).
    Its environment is the run's now (`environ`), not the fork server's when it started."""
    os.environ.clear()
    os.environ.update(environ)
    # Its parent is the fork server, which exits when the run's process does (killed too): the
    # pipe between them closes. The kernel then kills this worker, even a stopped one.
    die_with_parent(os.getppid())
    _close_the_fork_servers_pipe()
    # Last of the finalizers multiprocessing runs as the worker's run ends, after its queues' flushes.
    multiprocessing.util.Finalize(None, _exit_now, exitpriority=-100)
    # Ctrl-C reaches the whole process group: the parent stops the workers and reports once.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if device is not None:  # before any CUDA library is loaded
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    use_cores(threads)
    pa.set_io_thread_count(2)
    global _queue
    _queue = queue


def _close_the_fork_servers_pipe() -> None:
    """multiprocessing hands each child the write end of the pipe whose closing tells the fork
    server that the run's process is gone; while a worker holds it, the server (and with it the
    worker) would outlive a killed run. Workers start no processes of their own from it."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # multiprocessing's private state: not in typeshed
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def _exit_now() -> None:
    """A worker's last act, once the pool has let it go: its results are handed back, its
    progress queue flushed and its files closed, so what remains of shutdown (atexit hooks such
    as s3fs closing its sessions, then garbage collection and module teardown) only costs time:
    0.5-2 s per worker with s3fs and Arrow loaded, while the run waits for its workers to exit.
    The pool never reads a worker's exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def use_cores(threads: int) -> None:
    """Arrow, polars, the numeric libraries and Hugging Face tokenizers (its rayon pool) of this
    worker process use `threads` cores."""
    for name in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ.setdefault(name, str(threads))
    pa.set_cpu_count(threads)


def in_run(workers_lock: str, fn, *args):
    """`fn(*args)` (a task, a piece of a fit) in a worker process, which holds the run's worker
    lock (`workers_lock`, shared) from its first piece of work until it exits: a --resume waits
    until no worker of the run it continues is alive to write into _work. Taken here, not at the
    worker's start: a pool may start ahead of its run (local.start_workers_ahead), before the run
    directory is opened, which may empty _work and with it the lock file."""
    global _worker_lock
    if _worker_lock is None:
        _worker_lock = hold_worker_lock(workers_lock)
    return fn(*args)


def run_task_in_worker(ctx: StageContext, task: Task, queue=None) -> TaskResult:
    """`task` in a worker process: its progress put on `queue` (default: the pool's, from
    worker_init), its errors made to cross the process boundary."""
    queue = queue or _queue

    def progress(label: str, rows_in: int, rows_out: int) -> None:
        if queue is not None:
            queue.put((label, rows_in, rows_out))

    try:
        return run_task(ctx, task, progress)
    except CurateError:
        raise
    except Exception as e:
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise NoSpace(str(e)) from None
        # Keep the worker's traceback text: the parent cannot see it otherwise.
        raise WorkerError(f"{type(e).__name__}: {e}", traceback.format_exc()) from None
    finally:
        # Idle workers wait while the parent fits a Global: hand Arrow's cached buffers back to
        # the OS so they do not sit on memory the fit could use.
        pa.default_memory_pool().release_unused()


class WorkerError(RuntimeError):
    """A bug raised in a worker process; `worker_traceback` is shown by `--debug`."""

    def __init__(self, message: str, worker_traceback: str = ""):
        super().__init__(message, worker_traceback)
        self.worker_traceback = worker_traceback

    def __str__(self) -> str:
        return self.args[0]


def spawn_pool(processes: int, queue, threads: int = 1, device: str | None = None) -> ProcessPoolExecutor:
    """`processes` worker processes (worker_context), each started by `worker_init` when the
    pool is first given work; its work goes through `in_run`."""
    return ProcessPoolExecutor(
        processes,
        mp_context=worker_context(),
        initializer=worker_init,
        initargs=(queue, dict(os.environ), threads, device),
    )


def stop_pool(pool: ProcessPoolExecutor, kill: bool = False) -> None:
    """Stop a pool's processes: after their tasks, or at once (`kill`, on an error or interrupt:
    what they were writing is under temporary names, and the next run redoes those tasks)."""
    if kill:
        processes = list((pool._processes or {}).values())
        for process in processes:
            process.kill()
        for process in processes:
            process.join()
    pool.shutdown(wait=True, cancel_futures=True)


class FutureSlots(Slots):
    """Slots whose handles are futures (concurrent.futures)."""

    def wait(self, handles: list[Future], timeout: float) -> list[Future]:
        return list(wait(handles, timeout=timeout, return_when=FIRST_COMPLETED).done)

    def collect(self, handle: Future) -> TaskResult:
        return handle.result()


class PoolSlots(FutureSlots):
    """Slots of the local pools: their handles are futures, their progress comes on `self.queue`
    and goes to `self.progress`."""

    queue: Any  # set by the subclass
    progress: Progress

    def relay(self) -> None:
        relay_progress(self.queue, self.progress)


def relay_progress(queue, progress) -> None:
    """Pass on the rows counts the workers have put on `queue` so far."""
    while True:
        try:
            label, rows_in, rows_out = queue.get_nowait()
        except queue_module.Empty:
            return
        progress(label, rows_in, rows_out)
