"""The seam between the runner and whatever executes tasks (local processes, model pools, Ray).

An engine hands the runner a CPU executor for the run and a model pool per model stage. An
executor runs tasks as the stage's policy says (plan.py) and hands each result to the runner as
its task ends, keeping none (the runner folds them in task order: runner.py), plus a parallel
`map` for a Global fit's pieces and the publisher; it knows nothing of what a run means, so
every engine gives the same bytes, trace, manifest and resume. Where the engine's workers do not
see the run's `_work/`, it is also the transport of the work files (`share` before a stage,
`receive` after each task): the runner calls both, the engine decides nothing about them. An
engine with a work store (`store`) copies each finished task's files there; the runner fetches
them back on --resume.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Callable

from curate.engine.result import TaskResult
from curate.engine.tasks.context import StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work import work_store

if TYPE_CHECKING:
    from curate.engine.work.engines import EngineConfig


class Executor(ABC):
    workers: list  # a model pool's workers (the runner counts them)
    pieces_per_call = 2  # a fit's pieces a worker gets from one `map` call of Parallel.stream (ops.py)
    calls_in_flight = 1  # Parallel.stream's map calls at once: one, where workers stay up

    @abstractmethod
    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        """Run `tasks` of one stage, as many at once as its policy allows; each result to `take`
        (the task's index in `tasks`, its result) as it ends, in any order."""

    @abstractmethod
    def map(self, fn: Callable, *iterables, files_in: str | None = None) -> list:
        """`fn` over the items (a Global fit's or the publisher's parallel work), results in order.
        `files_in`: the directory whose files the pieces read and write (a fit's workdir), for an
        executor whose workers do not all see the run's disk to carry."""

    @abstractmethod
    def close(self, kill: bool = False) -> None:
        """Free the workers: after their tasks finish, or at once (`kill`: on an error or interrupt)."""


class Engine(ABC):
    cores: int  # the cores its executors run tasks on (this machine's, or a cluster's)
    store: work_store.WorkStore | None = None  # the work store its tasks copy their files to, if any

    @classmethod
    @abstractmethod
    def from_config(cls, config: EngineConfig) -> Engine:
        """The engine for one run, made from its EngineConfig: the one way engines.make makes any engine."""

    @abstractmethod
    def cpu_executor(self, workers: int) -> Executor:
        """The run's executor of CPU and io stages, with `workers` task processes where it has such."""

    @abstractmethod
    def model_pool(self, cpu_workers: int, gpus_each: float = 0.0) -> Executor:
        """An executor for one model stage, closed after it: workers holding `gpus_each` GPUs (the
        stage's Policy.gpus; 0: one each) where there are GPUs, else `cpu_workers`."""

    def share(self, ctx: StageContext, tasks: list[Task]) -> None:
        """Make what the stage's tasks read reachable by its workers, and with a store, the
        stage's fitted state and input shards that no task put there go there (work_store.py)."""
        if self.store is not None:
            work_store.publish_shards(self.store, [shard for task in tasks for shard in task.shards])
            if ctx.stage.global_step is not None:
                work_store.publish_state(self.store, ctx.layout)

    def receive(self, ctx: StageContext, result: TaskResult) -> None:  # noqa: B027 - a hook, by default empty
        """Bring a finished task's files into the run's `_work/`. Default: they are there."""

    def manifest_entries(self) -> dict:
        """What the engine saw of how the run was executed (job ids, nodes), as manifest fields
        typed in manifest.py, for the runner to write; never what the run computed. Default: none."""
        return {}

    def close(self, discard_work: bool = False) -> None:  # noqa: B027 - a hook, by default empty
        """End the engine; `discard_work`: the run finished, its work files are not needed again."""
