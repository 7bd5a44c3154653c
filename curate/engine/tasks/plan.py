"""Split a recipe into stages at Global operators, and each stage into tasks.

Stage 0 reads the input; a new stage starts at each Global operator, whose `fit` reads the
previous stage's shards in full before its `apply` streams them again, and wherever the
resource class changes: model-backed steps (embedding, ...) run in a stage of their own, on
the model worker pool, so CPU steps never wait on a model and models load once per worker.
Tasks depend only on the input and the recipe (never on the worker count), so output
and resume are the same whatever `--workers` is.

A `Plan` is the whole of it as one serialisable object: `--dry-run` prints it, the runner keeps
it in `_work/plan.json` (adding each later stage's tasks once the stage before has written the
shards they read), and any executor (local processes, model pool, Ray) runs its tasks as given.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import pyarrow.parquet as pq

from curate.io.sources import Source, split_parquet
from curate.ops import Global
from curate.recipe import Step


@dataclass(frozen=True)
class Policy:
    """How a stage's tasks are given resources, decided once here and read by every executor."""

    cpus: float = 1.0  # cores one task reserves (Ray's num_cpus; the local engine's cores per task)
    memory_gb: float | None = None  # memory one task needs, where an operator declares it
    # GPUs one model worker holds (Resources.gpus, the most any step of the stage declares): 0, one
    # a worker where there are GPUs; 2, two a worker; 0.5, two workers share one.
    gpus: float = 0.0
    parallel: int = 1  # tasks of the stage at once (CPU and io stages; a model stage: one per model worker)
    # The tasks run on threads of the run process, not in worker processes (the local engine): a
    # stage with no operator only reads and writes, which Arrow's C++ does with the GIL released,
    # so a worker process would add its start (a second of imports) and nothing else.
    threads: bool = False


@dataclass(frozen=True)
class Stage:
    index: int
    global_step: Step | None  # fitted over the previous stage's output, applied first
    steps: tuple[Step, ...]  # Map and Filter steps that follow
    # Which class of worker runs its tasks: "cpu" (the task processes), "io" (few processes,
    # async), "model" (the model worker pool).
    resource_class: str = "cpu"
    policy: Policy = Policy()

    @property
    def all_steps(self) -> tuple[Step, ...]:
        return ((self.global_step,) if self.global_step else ()) + self.steps


@dataclass(frozen=True)
class Task:
    stage: int
    index: int
    sources: tuple[Source, ...] = ()  # stage 0: input files
    shards: tuple[str, ...] = ()  # later stages: the previous stage's shards
    ord_offset: int = 0  # `_ord` of the task's first row (position in the stage input)
    limit: int | None = None

    @property
    def name(self) -> str:
        return f"part-{self.index:05d}"

    def describe(self) -> dict:
        d: dict = {"name": self.name, "ord_offset": self.ord_offset}
        if self.sources:
            d["sources"] = [
                {
                    "path": s.path,
                    "format": s.format,
                    "first_row": s.first_row,
                    **({"row_groups": list(s.row_groups)} if s.row_groups is not None else {}),
                }
                for s in self.sources
            ]
        if self.shards:
            d["shards"] = list(self.shards)
        if self.limit is not None:
            d["limit"] = self.limit
        return d


@dataclass(frozen=True)
class Plan:
    stages: tuple[Stage, ...]
    tasks: tuple[tuple[Task, ...] | None, ...]  # per stage; None until the stage before has run

    def with_tasks(self, stage: int, tasks: list[Task]) -> "Plan":
        return replace(self, tasks=self.tasks[:stage] + (tuple(tasks),) + self.tasks[stage + 1 :])

    def describe(self) -> dict:
        """The plan as JSON-able data: stages with their resource class and steps, and tasks."""
        out = []
        for stage, tasks in zip(self.stages, self.tasks):
            out.append(
                {
                    "stage": stage.index,
                    "resources": stage.resource_class,
                    "policy": {
                        "cpus": stage.policy.cpus,
                        "memory_gb": stage.policy.memory_gb,
                        "gpus": stage.policy.gpus,
                        "parallel": stage.policy.parallel,
                        "threads": stage.policy.threads,
                    },
                    "global": stage.global_step.label if stage.global_step else None,
                    "steps": [
                        {
                            "step": s.label,
                            "op": s.name,
                            "kind": s.op_class.kind,
                            "params": s.params.model_dump(mode="json"),
                            **({"batch_rows": s.rows_per_batch()} if s.rows_per_batch() else {}),
                        }
                        for s in stage.all_steps
                    ],
                    "tasks": [t.describe() for t in tasks]
                    if tasks is not None
                    else f"one per output shard of stage {stage.index - 1}, _ord offsets from their row counts",
                }
            )
        return {"stages": out}

    def json_bytes(self) -> bytes:
        """`describe()` as indented JSON (_work/plan.json), the bytes json.dumps(indent=1) gives,
        encoded a piece at a time: json.dumps joins the pieces of every task's entry at once (2.1 MB
        at its peak for 1,000 input files' tasks, where the bytes are 0.2 MB), and the driver writes
        the plan at each stage's start."""
        out = bytearray()
        for piece in json.JSONEncoder(indent=1).iterencode(self.describe()):
            out += piece.encode()
        return bytes(out)


def make(
    steps: list[Step], sources: list[Source], limit: int | None, workers: int = 0, cores: int | None = None
) -> Plan:
    """The plan of a run: its stages with their resource policy for `workers` task processes
    (0: one per core) on an engine of `cores` cores, and the first stage's tasks (the later ones
    read shards that do not exist yet: `shard_tasks` makes them when the stage before is done)."""
    cores = cores or available_cores()
    staged = [replace(s, policy=policy(s, workers or cores, cores)) for s in stages(steps)]
    return Plan(tuple(staged), (tuple(input_tasks(sources, limit)),) + (None,) * (len(staged) - 1))


def first_stage_workers(
    steps: list[Step], limit: int | None, workers: int = 0, cores: int | None = None, files: int | None = None
) -> int:
    """How many CPU worker processes the first stage keeps busy at once, as `make` plans it, for
    an input of `files` files (unknown: at least as many as it runs at once): none where it runs
    on model workers or in the run process (parallel 1, one task: the first `limit` rows, or on
    threads: a stage with no operator)."""
    cores = cores or available_cores()
    stage = stages(steps)[0]
    if stage.resource_class == "model" or limit is not None:
        return 0
    stage_policy = policy(stage, workers or cores, cores)
    if stage_policy.threads:
        return 0
    busy = stage_policy.parallel
    if files is not None:
        busy = min(busy, files)  # a file is one task or more (row-group ranges of a large Parquet file)
    return busy if busy > 1 else 0


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def policy(stage: Stage, workers: int, cores: int) -> Policy:
    """The stage's policy from the resources its operators declare."""
    needs = [s.op_class.resources_for(s.params) for s in stage.all_steps]
    cpus = max([n.cpus for n in needs] + [1.0])
    parallel = min(workers, max(1, int(cores // cpus)))
    if stage.resource_class == "io":
        # Network-bound: one process's event loop keeps hundreds of requests in flight, and the
        # client's CPU per request is what counts, so few processes (one per 4 cores; with one,
        # the stage runs in the main process and spawns nothing).
        parallel = min(parallel, max(1, cores // 4))
    memory_gb = max([n.memory_gb or 0 for n in needs] + [0]) or None
    if memory_gb:
        total_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        parallel = min(parallel, max(1, int(total_gb // memory_gb)))
    gpus = max([n.gpus for n in needs] + [0.0])
    return Policy(cpus, memory_gb, gpus, parallel, threads=not stage.all_steps)


def stages(steps: list[Step]) -> list[Stage]:
    out: list[Stage] = []
    current_global: Step | None = None
    current: list[Step] = []
    resource = "cpu"
    for step in steps:
        pool = step.op_class.resources_for(step.params).pool
        if issubclass(step.op_class, Global) or (pool != resource and (current or current_global or out)):
            out.append(Stage(len(out), current_global, tuple(current), resource))
            current_global, current = (step, []) if issubclass(step.op_class, Global) else (None, [step])
        else:
            current.append(step)
        resource = pool
    out.append(Stage(len(out), current_global, tuple(current), resource))
    return out


def input_tasks(sources: list[Source], limit: int | None) -> list[Task]:
    if limit is not None:  # the first N rows in input order: one sequential task
        return [Task(0, 0, tuple(sources), limit=limit)]
    return [Task(0, i, (s,)) for i, s in enumerate(split_parquet(sources))]


def shard_tasks(stage: int, shards: Sequence[str | Path], rows: list[int] | None = None) -> list[Task]:
    """A task per shard of the stage before; `rows`: each shard's rows where known (the tasks'
    results say them), else read from the shards' footers."""
    tasks, offset = [], 0
    for i, shard in enumerate(shards):
        tasks.append(Task(stage, i, shards=(str(shard),), ord_offset=offset))
        offset += rows[i] if rows is not None else pq.ParquetFile(shard).metadata.num_rows
    return tasks
