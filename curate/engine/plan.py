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

from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.parquet as pq

from curate.io.sources import Source, split_parquet
from curate.ops import Global
from curate.recipe import Step


@dataclass(frozen=True)
class Stage:
    index: int
    global_step: Step | None  # fitted over the previous stage's output, applied first
    steps: tuple[Step, ...]  # Map and Filter steps that follow
    resource_class: str = "cpu"  # "cpu" (the task processes) or "model" (the model worker pool)

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
            d["sources"] = [{"path": s.path, "format": s.format, "first_row": s.first_row,
                             **({"row_groups": list(s.row_groups)} if s.row_groups is not None else {})}
                            for s in self.sources]
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
        return replace(self, tasks=self.tasks[:stage] + (tuple(tasks),) + self.tasks[stage + 1:])

    def describe(self) -> dict:
        """The plan as JSON-able data: stages with their resource class and steps, and tasks."""
        out = []
        for stage, tasks in zip(self.stages, self.tasks):
            out.append({
                "stage": stage.index,
                "resources": stage.resource_class,
                "global": stage.global_step.label if stage.global_step else None,
                "steps": [{"step": s.label, "op": s.name, "kind": s.op_class.kind,
                           "params": s.params.model_dump(mode="json"),
                           **({"batch_rows": s.rows_per_batch()} if s.rows_per_batch() else {})}
                          for s in stage.all_steps],
                "tasks": [t.describe() for t in tasks] if tasks is not None else
                         f"one per output shard of stage {stage.index - 1}, _ord offsets from their row counts",
            })
        return {"stages": out}


def make(steps: list[Step], sources: list[Source], limit: int | None) -> Plan:
    """The plan of a run: its stages, and the first stage's tasks (the later ones read shards
    that do not exist yet: `shard_tasks` makes them when the stage before is done)."""
    staged = stages(steps)
    return Plan(tuple(staged), (tuple(input_tasks(sources, limit)),) + (None,) * (len(staged) - 1))


def stages(steps: list[Step]) -> list[Stage]:
    out: list[Stage] = []
    current_global: Step | None = None
    current: list[Step] = []
    resource = "cpu"
    for step in steps:
        runs_on = step.op_class.runs_on(step.params)
        if issubclass(step.op_class, Global) or (runs_on != resource and (current or current_global or out)):
            out.append(Stage(len(out), current_global, tuple(current), resource))
            current_global, current = (step, []) if issubclass(step.op_class, Global) else (None, [step])
        else:
            current.append(step)
        resource = runs_on
    out.append(Stage(len(out), current_global, tuple(current), resource))
    return out


def input_tasks(sources: list[Source], limit: int | None) -> list[Task]:
    if limit is not None:  # the first N rows in input order: one sequential task
        return [Task(0, 0, tuple(sources), limit=limit)]
    return [Task(0, i, (s,)) for i, s in enumerate(split_parquet(sources))]


def shard_tasks(stage: int, shards: list[Path]) -> list[Task]:
    tasks, offset = [], 0
    for i, shard in enumerate(shards):
        tasks.append(Task(stage, i, shards=(str(shard),), ord_offset=offset))
        offset += pq.ParquetFile(shard).metadata.num_rows
    return tasks
