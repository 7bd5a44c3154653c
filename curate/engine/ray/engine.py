"""The Ray engine: the runner's tasks on a Ray cluster (`curate run --engine ray [--address ADDR]`).

It only runs tasks (see executor.py); the run's meaning stays in runner.py, so the bytes, trace,
manifest and resume are those of the local engine. CPU tasks are Ray tasks sized by the stage's
policy (num_cpus, memory); a model stage runs on an actor pool (num_gpus, the model loaded once
per actor, `teardown()` when the stage ends); `map` work (a fit's or the publisher's) runs as Ray
tasks. A task lost with its worker or node is run again by Ray (`max_retries`, actor restarts):
a task writes under temporary names and its done marker last, so running it twice gives the
same files. Workers read and write the run's `_work/` directly where they see it at the same
path; nodes that do not see it share its files through an object store instead (work_store.py:
`--work-store URI`, or for an output on a store a prefix of its own there), which this engine's
`share` and `receive` carry for the runner, and `map` for a fit's directory (shared_dir.py).

Ray is imported here only (and in nodes.py, worker.py), so `curate --help` and the local
engine never load it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable, Sequence

import ray

from curate.engine.ray.nodes import check_nodes, drop_mirrors, on_node, worker_env
from curate.engine.ray.worker import RETRIES, ModelWorker, ProgressSink, Setup, call, call_sharing, run_task
from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.tasks.context import Progress, StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work import shared_dir, work_store
from curate.engine.work.dispatch import Slots, WorkerLost, dispatch
from curate.engine.work.executor import Engine, Executor
from curate.errors import CurateError
from curate.io.store import is_uri


class RayEngine(Engine):
    """A Ray connection for one run: started here when no address is given (and stopped after),
    else a connection to the cluster at `address`. `store`: the URI of a work store (for nodes
    that do not see `_work/`); `fallback_store`: the one to use when no `store` is given and some
    node is blind (for an output on a store, a prefix of its own there, opened with the output's
    storage_options); `resume`: whether the run
    resumes (a store then keeps its files); `inputs`: the run's input files, which every node must
    see (or reach, at a URI)."""

    @classmethod
    def from_config(cls, config) -> "RayEngine":
        return cls(
            config.address,
            config.progress,
            config.layout,
            config.status,
            list(config.env),
            config.store,
            config.resume,
            list(config.inputs),
            config.fallback_store,
        )

    def __init__(
        self,
        address: str | None,
        progress: Progress,
        layout: RunLayout,
        status=lambda message: None,
        env: Sequence[str] = (),
        store: str | None = None,
        resume: bool = False,
        inputs: Sequence[str] = (),
        fallback_store: str | None = None,
    ):
        self.progress = progress
        self.status = status
        self.layout = layout
        self.work = Path(layout.work)
        self.cwd = os.getcwd()  # relative paths in the recipe mean the same on the workers
        self.store = None  # the work store (work_store.WorkStore), set once the nodes are known
        self.session = uuid.uuid4().hex  # names this run's mirrors on blind nodes
        self.fetched = 0  # files of tasks run on blind nodes, fetched into _work/
        self.blind_pieces = 0  # fit pieces run on blind nodes
        self.pushed: dict[str, dict] = {}  # per fit directory: the versions of its files in the store
        # Nodes that read or write a store (a work store, the inputs or the output) get its settings
        stores = bool(store or fallback_store) or any(is_uri(p) for p in inputs)
        if ray.is_initialized():  # a caller's own connection (a notebook, a test): use it as it is
            self.owned = False
        else:
            # "local": a new instance for the run, even where a cluster runs on this machine
            context = ray.init(
                address=address or "local",
                runtime_env={"env_vars": worker_env(env, store=stores)},
                # ray's annotation says int; it takes a level's name too, as logging does
                include_dashboard=None,
                log_to_driver=False,
                logging_level="WARNING",  # type: ignore[arg-type]
                configure_logging=address is None,
            )
            self.owned = True
            url = getattr(context, "dashboard_url", None)
            if url:
                status(f"Ray dashboard: http://{url}")
        try:
            nodes = [n for n in ray.nodes() if n["Alive"]]
            status(
                f"Ray: {len(nodes)} nodes, {int(ray.cluster_resources().get('CPU', 0))} CPUs, "
                f"{int(ray.cluster_resources().get('GPU', 0))} GPUs"
            )
            self.here = ray.get_runtime_context().get_node_id()
            where = store or fallback_store
            candidate = work_store.for_run(where, layout) if where else None
            if store:
                assert candidate is not None  # made from `store`
                candidate.start(resume)
            blind = check_nodes(self.work, nodes, candidate, [os.path.abspath(p) for p in inputs if not is_uri(p)])
            if blind:
                assert candidate is not None  # check_nodes refuses blind nodes without a store
                self.store = candidate
                if not store:  # the output's own prefix: readied only when a node needs it
                    candidate.start(resume)
                status(f"Ray: {len(blind)} of {len(nodes)} nodes share the work files through {candidate.uri}")
            elif store:
                self.store = candidate
            self.sink = ProgressSink.remote()  # type: ignore[attr-defined]  # @ray.remote adds .remote
        except BaseException:
            self.close()
            raise

    @property  # read-only here: the cluster's CPUs, asked each time
    def cores(self) -> int:  # type: ignore[override]
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def cpu_executor(self, workers: int) -> "RayExecutor":
        """`workers` caps nothing here: each stage's policy says how many of its tasks run at once."""
        return RayExecutor(self)

    def model_pool(self, cpu_workers: int, gpus_each: float = 0.0) -> "RayModelPool":
        return RayModelPool(self, cpu_workers, gpus_each)

    def relay(self) -> None:
        """Relay the rows counts workers have reported since the last call."""
        for label, (rows_in, rows_out) in ray.get(self.sink.take.remote()).items():
            self.progress(label, rows_in, rows_out)

    def setup(self, threads: int) -> Setup:
        return Setup(self.sink, self.layout, threads, self.cwd, self.store, self.session)

    def receive(self, ctx: StageContext, result: TaskResult) -> None:
        """With a store, a task's files come to the run's `_work/` (from wherever it ran)."""
        if self.store is not None:
            self.fetched += work_store.fetch_task_files(self.store, ctx.layout, result)

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        """`fn` over the items as Ray tasks on any node; with a work store, the files of `files_in`
        (a fit's directory) shared through it (shared_dir.py), and work that names no directory
        (the publisher's) on this node, where the run's files are."""
        if self.store is None or files_in is None:
            remote = call if self.store is None else call.options(scheduling_strategy=on_node(self.here))
            return [_result(ref) for ref in [remote.remote(self.cwd, fn, *args) for args in zip(*iterables)]]
        directory = Path(files_in)
        pushed = self.pushed.setdefault(files_in, {})
        view = ray.put(shared_dir.push(self.store, directory, pushed))
        setup = self.setup(1)
        refs = [call_sharing.remote(setup, files_in, view, fn, *args) for args in zip(*iterables)]
        results, written = [], []
        for result, files, blind in map(_result, refs):
            results.append(result)
            written.append(files)
            self.blind_pieces += blind
        shared_dir.receive(self.store, directory, written, pushed)
        return results

    def close(self, discard_work: bool = False) -> None:
        """End the connection; with a work store, blind nodes' mirrors go, and with `discard_work`
        (a finished run without --keep-work) the store's copy of the work files."""
        if self.fetched:
            self.status(f"Ray: fetched {self.fetched} files of tasks on other nodes from the work store")
        if self.blind_pieces:
            self.status(f"Ray: {self.blind_pieces} fit pieces ran on nodes that do not see the work directory")
        try:
            if self.store is not None and ray.is_initialized():
                drop_mirrors(self.work, self.session)
            if discard_work and self.store is not None:
                self.store.clear()
        finally:
            if self.owned:
                ray.shutdown()


class _RaySlots(Slots):
    """Waiting on and collecting Ray object refs, for both Ray executors."""

    def __init__(self, engine: RayEngine):
        self.engine = engine

    def wait(self, handles: list, timeout: float) -> list:
        done, _ = ray.wait(handles, num_returns=1, timeout=timeout)
        return done

    def collect(self, handle) -> TaskResult:
        return _result(handle)

    def relay(self) -> None:
        self.engine.relay()

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        return self.engine.map(fn, *iterables, files_in=files_in)


class RayExecutor(_RaySlots, Executor):
    """A stage's CPU tasks as Ray tasks, as many in flight as its policy allows; Ray places them
    by their resources on any node."""

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        policy = ctx.stage.policy
        memory = {"memory": int(policy.memory_gb * 2**30)} if policy.memory_gb else {}
        self.remote = run_task.options(num_cpus=policy.cpus, **memory)
        self.setup, self.ctx = self.engine.setup(max(1, int(policy.cpus))), ctx
        dispatch(tasks, list(range(policy.parallel)), self, take)

    def start(self, slot: int, task: Task):
        return self.remote.remote(self.setup, self.ctx, task)

    def cancel(self, handles: list) -> None:
        for ref in handles:
            ray.cancel(ref, force=True)

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


class RayModelPool(_RaySlots, Executor):
    """A model stage's tasks on an actor pool: one actor per GPU in the cluster (num_gpus=1; or the
    stage's declared `gpus_each`, Ray's fractional GPUs included), or
    `cpu_workers` CPU actors when it has none. Each free actor takes the next task. An actor whose
    process dies is restarted by Ray (its model loaded again) and the task run again; a task that
    still fails comes back as `TaskResult.lost` and the runner traces its rows, as with the local
    model pool. `close()` runs each actor's teardown, then ends the actors."""

    worker = "model actor"

    def __init__(self, engine: RayEngine, cpu_workers: int, gpus_each: float = 0.0):
        super().__init__(engine)
        gpus = ray.cluster_resources().get("GPU", 0)
        if gpus:
            each = gpus_each or 1  # Ray shares a GPU between actors that ask for a fraction of one
            count = int(gpus // each)
            if not count:
                raise CurateError(f"a model step declares {each:g} GPUs a worker; the Ray cluster has {gpus:g}")
            options, threads = {"num_gpus": each, "num_cpus": 1}, 1
        else:
            count = max(1, cpu_workers)
            threads = max(1, engine.cores // count)
            options = {"num_cpus": 1}
        # @ray.remote adds .options
        self.workers = [ModelWorker.options(**options).remote() for _ in range(count)]  # type: ignore[attr-defined]
        self.threads = threads
        self.ctx: StageContext | None = None

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        self.ctx, self.setup = ctx, self.engine.setup(self.threads)
        dispatch(tasks, self.workers, self, take)

    def start(self, slot, task: Task):
        return slot.run.remote(self.setup, self.ctx, task)

    def collect(self, handle) -> TaskResult:
        try:
            return _result(handle)
        except ray.exceptions.RayActorError as e:  # died more often than Ray restarts it
            raise WorkerLost(f"{RETRIES + 1} runs: {e}") from None

    def close(self, kill: bool = False) -> None:
        if not kill and self.ctx is not None:  # free models and GPU memory in each actor
            ray.get([actor.teardown.remote(self.ctx) for actor in self.workers])
        for actor in self.workers:
            ray.kill(actor, no_restart=True)
