"""The Ray engine: the runner's tasks on a Ray cluster (`curate run --engine ray [--address ADDR]`).

It only runs tasks (see executor.py); the run's meaning stays in runner.py, so the bytes, trace,
manifest and resume are those of the local engine. CPU tasks are Ray tasks sized by the
operators' `resources` (num_cpus, memory); a model stage runs on an actor pool (num_gpus, the
model loaded once per actor, `teardown()` when the stage ends); `map` work (a fit's or the
publisher's) runs as Ray tasks. A task lost with its worker or node is run again by Ray
(`max_retries`, actor restarts): a task writes under temporary names and its done marker last,
so running it twice gives the same files. Workers read and write the run's `_work/` directly
where they see it at the same path; with `--work-store URI`, nodes that do not see it share its
files through an object store instead (work_store.py). `RayEngine` looks from each node before
anything runs.

Ray is imported here only, so `curate --help` and the local engine never load it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import ray

from curate.engine import work_store, worker
from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine.plan import Stage, Task
from curate.engine.run_dir import hold_worker_lock
from curate.engine.work_store import WorkStore
from curate.engine.worker import Progress, StageContext, run_task_in_worker, teardown_in_worker
from curate.errors import CurateError

RETRIES = 3  # runs of a task whose worker died, after the first
PASSED_ENV = ("CURATE_",)  # driver environment the workers get (failpoints in tests, settings)
STORE_ENV = ("FSSPEC_", "AWS_")  # and with a work store, its settings and credentials


class RayEngine:
    """A Ray connection for one run: started here when no address is given (and stopped after),
    else a connection to the cluster at `address`. `store`: the URI of a work store (for nodes
    that do not see `work`); `resume`: whether the run resumes (a store then keeps its files);
    `inputs`: the run's input files, which every node must see."""

    def __init__(self, address: str | None, progress: Progress, work: Path, status=lambda message: None,
                 env: list[str] = (), store: str | None = None, resume: bool = False, inputs: list[str] = ()):
        self.progress = progress
        self.status = status
        self.work = work.resolve()
        self.cwd = os.getcwd()  # relative paths in the recipe mean the same on the workers
        self.store = WorkStore(store, self.work) if store else None
        self.session = uuid.uuid4().hex  # names this run's mirrors on blind nodes
        self.fetched = 0  # files of tasks run on blind nodes, fetched into _work/
        if ray.is_initialized():  # a caller's own connection (a notebook, a test): use it as it is
            self.owned = False
        else:
            # "local": a new instance for the run, even where a cluster runs on this machine
            context = ray.init(address=address or "local",
                               runtime_env={"env_vars": _worker_env(env, store=self.store is not None)},
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
            self.here = ray.get_runtime_context().get_node_id()
            if self.store is not None:
                self.store.start(resume)
            blind = check_nodes(self.work, nodes, self.store, [os.path.abspath(p) for p in inputs])
            if blind:
                status(f"Ray: {len(blind)} of {len(nodes)} nodes share the work files through {store}")
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

    def setup(self, threads: int) -> "_Setup":
        return _Setup(self.sink, self.work, threads, self.cwd, self.store, self.session)

    def before_stage(self, ctx: StageContext, tasks: list[Task]) -> None:
        """With a store, what the stage's tasks read goes there first: its fitted state, and
        input shards that no task put there (written before this run used the store)."""
        if self.store is None:
            return
        work_store.publish_shards(self.store, [shard for task in tasks for shard in task.shards])
        if ctx.stage.global_step is not None:
            work_store.publish_state(self.store, ctx.work)

    def after_task(self, ctx: StageContext, result: dict) -> dict:
        """With a store, a task's files come to the run's `_work/` (from wherever it ran)."""
        if self.store is not None:
            self.fetched += work_store.fetch_task_files(self.store, ctx, result)
        return result

    def map(self, fn, *iterables) -> list:
        """`fn` over the items as Ray tasks: on any node, or with a work store on this one, where
        the fit's files are."""
        call = _call
        if self.store is not None:
            call = _call.options(scheduling_strategy=_on_node(self.here))
        return [_result(ref) for ref in [call.remote(self.cwd, fn, *args) for args in zip(*iterables)]]

    def close(self, discard_work: bool = False) -> None:
        """End the connection; with a work store, blind nodes' mirrors go, and with `discard_work`
        (a finished run without --keep-work) the store's copy of the work files."""
        if self.fetched:
            self.status(f"Ray: fetched {self.fetched} files of tasks on other nodes from the work store")
        try:
            if self.store is not None and ray.is_initialized():
                ray.get([_drop_mirror.options(scheduling_strategy=_on_node(n["NodeID"])).remote(self.work, self.session)
                         for n in ray.nodes() if n["Alive"]])
            if discard_work and self.store is not None:
                self.store.clear()
        finally:
            if self.owned:
                ray.shutdown()


def _on_node(node: str):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=False)


def _worker_env(names: list[str] = (), store: bool = False) -> dict[str, str]:
    """The environment Ray workers get beyond the node's own: this checkout on the import path
    (where curate is not installed on the nodes, the driver's source tree, if the nodes see it),
    CURATE_* settings, the variables the recipe's operators read (`names`, e.g. an API key's:
    Ray's runtime environment carries them, so on a cluster shared with others set them on the
    nodes instead), and with a work store, its settings (FSSPEC_*, AWS_*)."""
    source = str(Path(worker.__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    passed = PASSED_ENV + (STORE_ENV if store else ())
    return {"PYTHONPATH": path, **{k: v for k, v in os.environ.items() if k.startswith(passed)},
            **{k: os.environ[k] for k in names if k in os.environ}}


def check_nodes(work: Path, nodes: list[dict], store: WorkStore | None, inputs: list[str]) -> frozenset[str]:
    """Look from a task pinned to each node: whether it sees the run's work directory at the same
    path (a probe file written here), the input files, and the work store where one is given.
    Returns the nodes that do not see the work directory (they use the store); a node that can
    work neither way is a user error naming it."""
    probe = work / f"probe-{uuid.uuid4().hex}"
    probe.write_bytes(b"")
    try:
        if store is not None:
            store.put(probe)
        looks = ray.get([_look.options(scheduling_strategy=_on_node(n["NodeID"])).remote(str(probe), inputs, store)
                         for n in nodes])
    finally:
        probe.unlink()
        if store is not None:
            store.fs.rm(store.key(probe))
    blind = [(n, look) for n, look in zip(nodes, looks) if not look["sees_work"]]
    if blind and store is None:
        raise CurateError(f"the run directory {work.parent} is not visible from Ray node(s) "
                          f"{', '.join(n['NodeManagerAddress'] for n, _ in blind)}: with --engine ray the output must "
                          f"be on storage every node sees at the same path (a shared filesystem such as NFS), as "
                          f"workers write their shards there, or the nodes share the work files through an object "
                          f"store: --work-store s3://BUCKET/PREFIX")
    for n, look in zip(nodes, looks):
        if look["store_error"]:
            raise CurateError(f"Ray node {n['NodeManagerAddress']} cannot read the work store {store.uri}: "
                              f"{look['store_error']}. Every node needs access to it (credentials, endpoint)")
        if look["missing_inputs"]:
            first = look["missing_inputs"][0]
            raise CurateError(f"input file {first} is not visible from Ray node {n['NodeManagerAddress']} "
                              f"({len(look['missing_inputs'])} of {len(inputs)} input files are not): every node "
                              f"reads input files at the same path (a shared or replicated read-only location)")
    return frozenset(n["NodeID"] for n, _ in blind)


@ray.remote(num_cpus=0)
def _look(probe: str, inputs: list[str], store: WorkStore | None) -> dict:
    sees = os.path.exists(probe)
    store_error = None
    if store is not None and not sees:
        try:
            if store.read_bytes(Path(probe)) is None:
                store_error = "a file the run put there is not found"
        except Exception as e:  # any failure of the filesystem: the message says which
            store_error = f"{type(e).__name__}: {e}"
    return {"sees_work": sees, "store_error": store_error,
            "missing_inputs": [p for p in inputs if not os.path.exists(p)]}


@ray.remote(num_cpus=0)
def _drop_mirror(work: Path, session: str) -> None:
    work_store.drop_mirror(work, session)


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


@dataclass(frozen=True)
class _Setup:
    """What a worker needs of the run besides its task: where progress goes, the work directory,
    its cores, the driver's working directory (relative paths in a recipe), and the work store
    and engine session where a store is given (work_store.py)."""

    sink: object
    work: Path
    threads: int
    cwd: str
    store: WorkStore | None
    session: str


_locked: set[str] = set()


def _enter(setup: _Setup) -> bool:
    """Ready this worker process for the run's tasks: the driver's working directory (where this
    node has it), progress to the run's sink, the run's worker lock held (as the local engine's
    workers hold it: a resume waits for them; a blind node's workers write no file the run
    process reads), and `threads` cores for Arrow and the numeric libraries. Returns whether this
    node is blind: it does not see the run's `_work/` (whose lock file the live run holds)."""
    _to_cwd(setup.cwd)
    worker._queue = _SinkQueue(setup.sink)
    blind = not (setup.work / "lock").exists()
    if not blind and str(setup.work) not in _locked:
        hold_worker_lock(setup.work)
        _locked.add(str(setup.work))
    worker.use_cores(setup.threads)
    return blind


def _to_cwd(cwd: str) -> None:
    """The `curate run` process's working directory, where this node has it (relative paths)."""
    if os.getcwd() != cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def _run_here(setup: _Setup, ctx: StageContext, task: Task) -> dict:
    blind = _enter(setup)
    if setup.store is None:  # every node sees _work/
        return run_task_in_worker(ctx, task)
    return work_store.run_task(setup.store, ctx, task, blind, setup.session)


@ray.remote(max_retries=RETRIES)
def _run_task(setup: _Setup, ctx: StageContext, task: Task) -> dict:
    return _run_here(setup, ctx, task)


@ray.remote(max_retries=RETRIES)
def _call(cwd: str, fn, *args):
    """One piece of `map` work (a fit's, the publisher's) on the one CPU a task reserves."""
    _to_cwd(cwd)
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
        setup = self.engine.setup(max(1, int(resources["num_cpus"])))
        self.engine.before_stage(ctx, tasks)
        results: list[dict | None] = [None] * len(tasks)
        queued = list(enumerate(tasks))
        running: dict = {}
        try:
            while queued or running:
                while queued and len(running) < parallel:
                    i, task = queued.pop(0)
                    running[remote.remote(setup, ctx, task)] = i
                done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
                self.engine.drain()
                for ref in done:
                    results[running.pop(ref)] = self.engine.after_task(ctx, _result(ref))
                    failpoint("task-done")
        except BaseException:
            for ref in running:
                ray.cancel(ref, force=True)
            raise
        self.engine.drain()
        return results

    def map(self, fn, *iterables) -> list:
        return self.engine.map(fn, *iterables)

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

    def run(self, setup: _Setup, ctx: StageContext, task: Task) -> dict:
        return _run_here(setup, ctx, task)

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
        setup = self.engine.setup(self.threads)
        self.engine.before_stage(ctx, tasks)
        results: list[dict | None] = [None] * len(tasks)
        queued = list(range(len(tasks)))
        running: dict = {}
        free = list(self.workers)
        while queued or running:
            while queued and free:
                i, actor = queued.pop(0), free.pop(0)
                running[actor.run.remote(setup, ctx, tasks[i])] = (i, actor)
            done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
            self.engine.drain()
            for ref in done:
                i, actor = running.pop(ref)
                try:
                    results[i] = self.engine.after_task(ctx, _result(ref))
                    failpoint("task-done")
                except ray.exceptions.RayActorError as e:  # died more often than Ray restarts it
                    results[i] = {"failed": f"the model actor died on this task {RETRIES + 1} times ({e})"}
                free.append(actor)
        self.engine.drain()
        return results

    def map(self, fn, *iterables) -> list:
        return self.engine.map(fn, *iterables)

    def close(self, kill: bool = False) -> None:
        if not kill and self.ctx is not None:  # free models and GPU memory in each actor
            ray.get([actor.teardown.remote(self.ctx) for actor in self.workers])
        for actor in self.workers:
            ray.kill(actor, no_restart=True)
