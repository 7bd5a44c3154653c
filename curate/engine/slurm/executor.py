"""A stage's tasks, and a Global fit's `map` pieces, as batches of array tasks (engine.py)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.slurm.scripts import stage_resources, task_shares
from curate.engine.tasks.context import StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work import shared_dir
from curate.engine.work.executor import Executor
from curate.words import count

if TYPE_CHECKING:
    from curate.engine.slurm.engine import SlurmEngine


class SlurmExecutor(Executor):
    """A stage's tasks as one job array (split past MaxArraySize), each array task running a share
    of them in turn (scripts.task_shares); `map` pieces likewise. For a model stage (`model`), the
    array tasks ask for `slurm.gres` (GPUs) and each runs as one model worker."""

    worker = "Slurm array task"
    # A `map` call is a job array whose tasks start afresh (a Python process importing curate, 3-6 s
    # at 1M documents): a fit's signing pass of 128 batches went out as 32 arrays of 2 tasks of 2
    # pieces. 8 a call: 8 arrays; with two calls in flight and the next window read, the driver holds
    # three windows' pieces at once (48 batches at -w 2).
    pieces_per_call = 8

    @property
    def calls_in_flight(self) -> int:  # type: ignore[override]
        """Two map calls at once: the next call's array is queued while one runs, and its tasks
        take the cores as this one's end (no idle core while the slowest task of a call ends, no
        wait for the submission and the scheduler). One inside an allocation: its srun steps are
        run and counted per engine (steps.py)."""
        return 1 if self.engine.allocation else 2

    def __init__(self, engine: "SlurmEngine", model: bool = False, cpu_workers: int = 1):
        self.engine = engine
        self.model = model
        self.workers = [None] * (max(1, cpu_workers) if model else 1)  # what the runner counts of a model pool
        self.maps = 0
        self.pushed: dict[str, dict] = {}  # with a store: per fit directory, the versions of its files there

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        self.engine.run_name = ctx.recipe.name
        cpus, parallel, gres, mem = stage_resources(self.engine.spec, ctx.stage.policy, self.model, len(self.workers))
        name = f"stage{ctx.stage.index}"
        shares = task_shares(len(tasks), parallel)
        batch = self.engine.new_batch(
            name,
            [("tasks", [tasks[i] for i in share]) for share in shares],
            {
                "ctx": "ctx.pkl",
                "tasks": [[tasks[i].name for i in share] for share in shares],
                # an array task runs the shares no other has started once its own is done (task.py);
                # not on nodes that share no disk (no claim is seen there), nor as srun steps
                "steal": self.engine.store is None and not self.engine.allocation,
            },
            cpus,
            parallel,
            mem,
            gres,
        )
        (batch.directory / "ctx.pkl").write_bytes(pickle.dumps((ctx, self.engine.store)))
        if self.engine.store is not None:
            self.engine.store.put(batch.directory / "ctx.pkl")
        self.engine.status(
            f"Slurm: stage {ctx.stage.index}: {count(len(tasks), 'task')} as "
            f"{'srun steps' if self.engine.allocation else 'a job array'}"
            f"{f' of {len(shares)}, each running a share of them' if len(shares) < len(tasks) else ''} "
            f"(at most {parallel} at once, {cpus} CPUs each"
            f"{f', --gres={gres}' if gres else ''}): {batch.directory / 'launch.sh'}"
        )

        def describe(s: int) -> str:
            first, last = tasks[shares[s][0]].name, tasks[shares[s][-1]].name
            return f"stage {ctx.stage.index} task {first}" + (f" (and the tasks up to {last})" if last != first else "")

        def done(s: int, results) -> None:  # a share's TaskResults, in task order
            for i, result in zip(shares[s], results):
                failpoint("task-done")
                take(i, result)

        self.engine.run_batch(batch, parallel, describe, done)

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        """`fn` over the items as an array of one-CPU tasks on the cluster (a fit's pieces, which
        read and write `files_in` on the shared filesystem; the publisher's merges)."""
        pieces = list(zip(*iterables))
        if not pieces:
            return []
        store = self.engine.store
        if store is not None and files_in is None:
            # Work that names no directory of its own (the publisher's merges) reads the run's
            # files, which nodes that share no disk do not see: it runs here
            return [fn(*args) for args in pieces]
        with self.engine.lock:
            self.maps += 1
            number = self.maps
        fname = getattr(getattr(fn, "func", fn), "__name__", "map").strip("<>")
        spec = self.engine.spec
        view = None
        if store is not None:  # the fit's directory through the store, for nodes that do not see it
            assert files_in is not None
            view = shared_dir.push(store, Path(files_in), self.pushed.setdefault(files_in, {}))
        parallel = max(1, self.engine.cores // (spec.cpus_per_task or 1))
        # As many array tasks as run at once, each running its share of the pieces in turn: an
        # array task's start (a Python process importing curate) is paid once per share
        groups = [list(range(len(pieces)))[g::parallel] for g in range(min(parallel, len(pieces)))]
        batch = self.engine.new_batch(
            f"map{number}-{fname}",
            [
                ("calls", fn, [pieces[i] for i in group])
                if view is None
                else ("shared", files_in, view, fn, [pieces[i] for i in group])
                for group in groups
            ],
            {},
            spec.cpus_per_task or 1,
            parallel,
            None,
            None,
        )
        results: list = [None] * len(pieces)
        written: list = []  # with a store: the files each piece wrote (shared_dir.run_piece)

        def place(g: int, share) -> None:  # an array task's share of the pieces: their results in place
            for i, result in zip(groups[g], share):
                if view is not None:
                    result, files = result
                    written.append(files)
                results[i] = result

        self.engine.run_batch(batch, parallel, lambda g: f"{fname} pieces {_listed(groups[g])} of {len(pieces)}", place)
        if store is not None:
            assert files_in is not None
            shared_dir.receive(store, Path(files_in), written, self.pushed[files_in])
        return results

    def close(self, kill: bool = False) -> None:
        if kill:
            self.engine.cancel()


def _listed(numbers: list[int], shown: int = 8) -> str:
    return ", ".join(map(str, numbers[:shown])) + (", ..." if len(numbers) > shown else "")
