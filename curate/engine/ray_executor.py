"""The Ray engine: the runner's tasks on a Ray cluster (`curate run --engine ray [--address ADDR]`).

It only runs tasks (see executor.py); the run's meaning stays in runner.py, so the bytes, trace,
manifest and resume are those of the local engine. CPU tasks are Ray tasks sized by the
operators' `resources` (num_cpus, memory); a model stage runs on an actor pool (num_gpus, the
model loaded once per actor, `teardown()` when the stage ends); `map` work (a fit's or the
publisher's) runs as Ray tasks. A task lost with its worker or node is run again by Ray
(`max_retries`, actor restarts): a task writes under temporary names and its done marker last,
so running it twice gives the same files. Workers read and write the run's `_work/` directly:
it must be on storage every node sees, at the same path, which `RayEngine` checks on each node
before anything runs.

Ray is imported here only, so `curate --help` and the local engine never load it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import ray

from curate.engine import worker
from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine.plan import Stage, Task
from curate.engine.run_dir import hold_worker_lock
from curate.engine.worker import Progress, StageContext, run_task_in_worker, teardown_in_worker
from curate.errors import CurateError

RETRIES = 3  # runs of a task whose worker died, after the first
PASSED_ENV = ("CURATE_",)  # driver environment the workers get (failpoints in tests, settings)


class RayEngine:
    """A Ray connection for one run: started here when no address is given (and stopped after),
    else a connection to the cluster at `address`."""

    def __init__(self, address: str | None, progress: Progress, work: Path, status=lambda message: None,
                 env: list[str] = ()):
        self.progress = progress
        self.work = work
        self.cwd = os.getcwd()  # relative paths in the recipe mean the same on the workers
        if ray.is_initialized():  # a caller's own connection (a notebook, a test): use it as it is
            self.owned = False
        else:
            # "local": a new instance for the run, even where a cluster runs on this machine
            context = ray.init(address=address or "local", runtime_env={"env_vars": _worker_env(env)},
                               include_dashboard=None, log_to_driver=False, logging_level="WARNING",
                               configure_logging=address is None)
            self.owned = True
            url = getattr(context, "dashboard_url", None)
            if url:
                status(f"Ray dashboard: http://{url}")
        try:
            nodes = [n for n in ray.nodes() if n["Alive"]]
            status(f"Ray: {len(nodes)} nodes, {int(ray.cluster_resources().get('CPU', 0))} CPUs, "
                   f"{int(ray.cluster_resources().get('GPU', 0))} GPUs")
            check_shared(work.resolve(), nodes)
            self.sink = _ProgressSink.remote()
        except BaseException:
            self.close()
            raise

    @property
    def cores(self) -> int:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def cpu_executor(self, workers: int) -> "RayExecutor":
        """`workers` caps nothing here: the runner passes each stage's cap to `run` as `parallel`."""
        return RayExecutor(self)

    def model_pool(self, cpu_workers: int) -> "RayModelPool":
        return RayModelPool(self, cpu_workers)

    def drain(self) -> None:
        """Relay the rows counts workers have reported since the last call."""
        for label, (rows_in, rows_out) in ray.get(self.sink.take.remote()).items():
            self.progress(label, rows_in, rows_out)

    def close(self) -> None:
        if self.owned:
            ray.shutdown()


def _worker_env(names: list[str] = ()) -> dict[str, str]:
    """The environment Ray workers get beyond the node's own: this checkout on the import path
    (where curate is not installed on the nodes, the driver's source tree, if the nodes see it),
    CURATE_* settings, and the variables the recipe's operators read (`names`, e.g. an API key's:
    Ray's runtime environment carries them, so on a cluster shared with others set them on the
    nodes instead)."""
    source = str(Path(worker.__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, **{k: v for k, v in os.environ.items() if k.startswith(PASSED_ENV)},
            **{k: os.environ[k] for k in names if k in os.environ}}


def check_shared(work: Path, nodes: list[dict]) -> None:
    """Every node must see the run's work directory at the same path: a probe file written here is
    looked for from a task pinned to each node. A node that does not see it is a user error."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = work / f"probe-{uuid.uuid4().hex}"
    probe.write_bytes(b"")
    try:
        seen = ray.get([_sees.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                        .remote(str(probe)) for n in nodes])
    finally:
        probe.unlink()
    blind = [n["NodeManagerAddress"] for n, ok in zip(nodes, seen) if not ok]
    if blind:
        raise CurateError(f"the run directory {work.parent} is not visible from Ray node(s) {', '.join(blind)}: "
                          f"with --engine ray the output (and input) must be on storage every node sees at the "
                          f"same path (a shared filesystem such as NFS), as workers write their shards there")


@ray.remote(num_cpus=0)
def _sees(path: str) -> bool:
    return os.path.exists(path)


@ray.remote(num_cpus=0)
class _ProgressSink:
    """Rows counts from the workers, summed per step until the driver takes them."""

    def __init__(self):
        self.rows: dict[str, list[int]] = {}

    def add(self, label: str, rows_in: int, rows_out: int) -> None:
        counts = self.rows.setdefault(label, [0, 0])
        counts[0] += rows_in
        counts[1] += rows_out

    def take(self) -> dict[str, list[int]]:
        rows, self.rows = self.rows, {}
        return rows


class _SinkQueue:
    """What worker.run_task_in_worker puts progress on (a queue in the local engine)."""

    def __init__(self, sink):
        self.sink = sink

    def put(self, item: tuple[str, int, int]) -> None:
        self.sink.add.remote(*item)


_locked: set[str] = set()


def _enter(sink, work: Path, threads: int, cwd: str) -> None:
    """Ready this worker process for the run's tasks: the driver's working directory (relative
    paths in a recipe), progress to the run's sink, the run's worker lock held (as the local
    engine's workers hold it: a resume waits for them), and `threads` cores for Arrow and the
    numeric libraries."""
    if os.getcwd() != cwd:
        os.chdir(cwd)
    worker._queue = _SinkQueue(sink)
    if str(work) not in _locked:
        hold_worker_lock(work)
        _locked.add(str(work))
    worker.use_cores(threads)


@ray.remote(max_retries=RETRIES)
def _run_task(ctx: StageContext, task: Task, sink, work: Path, threads: int, cwd: str) -> dict:
    _enter(sink, work, threads, cwd)
    return run_task_in_worker(ctx, task)


@ray.remote(max_retries=RETRIES)
def _call(cwd: str, fn, *args):
    """One piece of `map` work (a fit's, the publisher's) on the one CPU a task reserves."""
    if os.getcwd() != cwd:
        os.chdir(cwd)
    worker.use_cores(1)
    result = fn(*args)
    failpoint("map-piece")  # its files written, its result not delivered: a retry must redo it alike
    return result


def _stage_resources(stage: Stage) -> dict:
    cpus = max([s.op_class.resources.cpus for s in stage.all_steps] + [1.0])
    gb = max([s.op_class.resources.memory_gb or 0 for s in stage.all_steps] + [0])
    return {"num_cpus": cpus, **({"memory": int(gb * 2**30)} if gb else {})}


class RayExecutor(Executor):
    """A stage's CPU tasks as Ray tasks, at most `parallel` in flight; Ray places them by their
    resources on any node."""

    def __init__(self, engine: RayEngine):
        self.engine = engine

    def run(self, ctx: StageContext, tasks: list[Task], parallel: int) -> list[dict]:
        resources = _stage_resources(ctx.stage)
        remote = _run_task.options(**resources)
        threads = max(1, int(resources["num_cpus"]))
        results: list[dict | None] = [None] * len(tasks)
        queued = list(enumerate(tasks))
        running: dict = {}
        try:
            while queued or running:
                while queued and len(running) < parallel:
                    i, task = queued.pop(0)
                    running[remote.remote(ctx, task, self.engine.sink, self.engine.work, threads, self.engine.cwd)] = i
                done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
                self.engine.drain()
                for ref in done:
                    results[running.pop(ref)] = _result(ref)
                    failpoint("task-done")
        except BaseException:
            for ref in running:
                ray.cancel(ref, force=True)
            raise
        self.engine.drain()
        return results

    def map(self, fn, *iterables) -> list:
        return [_result(ref) for ref in [_call.remote(self.engine.cwd, fn, *args) for args in zip(*iterables)]]

    def close(self, kill: bool = False) -> None:
        """Nothing of its own to free: Ray's workers belong to the cluster (and go with the engine)."""


def _result(ref):
    """A task's result; its own exception (a CurateError, a WorkerError with the worker's
    traceback) rather than Ray's wrapper of it."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = e.as_instanceof_cause()
        raise (e.cause if isinstance(e.cause, BaseException) else cause) from None


@ray.remote(max_restarts=RETRIES, max_task_retries=RETRIES)
class _ModelWorker:
    """One model actor: the stage's operators (its models) are built once, on its first task,
    and kept for the stage's other tasks (worker.py caches them per process)."""

    def run(self, ctx: StageContext, task: Task, sink, work: Path, threads: int, cwd: str) -> dict:
        _enter(sink, work, threads, cwd)
        return run_task_in_worker(ctx, task)

    def teardown(self, ctx: StageContext) -> None:
        teardown_in_worker(ctx)


class RayModelPool(Executor):
    """A model stage's tasks on an actor pool: one actor per GPU in the cluster (num_gpus=1), or
    `cpu_workers` CPU actors when it has none. Each free actor takes the next task. An actor whose
    process dies is restarted by Ray (its model loaded again) and the task run again; a task that
    still fails comes back as `{"failed": error}` and the runner traces its rows, as with the local
    model pool. `close()` runs each actor's teardown, then ends the actors."""

    def __init__(self, engine: RayEngine, cpu_workers: int):
        self.engine = engine
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus:
            options, count, threads = {"num_gpus": 1, "num_cpus": 1}, gpus, 1
        else:
            count = max(1, cpu_workers)
            threads = max(1, engine.cores // count)
            options = {"num_cpus": 1}
        self.workers = [_ModelWorker.options(**options).remote() for _ in range(count)]
        self.threads = threads
        self.ctx: StageContext | None = None

    def run(self, ctx: StageContext, tasks: list[Task], parallel: int) -> list[dict]:
        self.ctx = ctx
        results: list[dict | None] = [None] * len(tasks)
        queued = list(range(len(tasks)))
        running: dict = {}
        free = list(self.workers)
        while queued or running:
            while queued and free:
                i, actor = queued.pop(0), free.pop(0)
                running[actor.run.remote(ctx, tasks[i], self.engine.sink, self.engine.work, self.threads,
                                         self.engine.cwd)] = (i, actor)
            done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
            self.engine.drain()
            for ref in done:
                i, actor = running.pop(ref)
                try:
                    results[i] = _result(ref)
                    failpoint("task-done")
                except ray.exceptions.RayActorError as e:  # died more often than Ray restarts it
                    results[i] = {"failed": f"the model actor died on this task {RETRIES + 1} times ({e})"}
                free.append(actor)
        self.engine.drain()
        return results

    def map(self, fn, *iterables) -> list:
        return [_result(ref) for ref in [_call.remote(self.engine.cwd, fn, *args) for args in zip(*iterables)]]

    def close(self, kill: bool = False) -> None:
        if not kill and self.ctx is not None:  # free models and GPU memory in each actor
            ray.get([actor.teardown.remote(self.ctx) for actor in self.workers])
        for actor in self.workers:
            ray.kill(actor, no_restart=True)
