"""Split a recipe into stages at Global operators, and each stage into tasks.

Stage 0 reads the input; a new stage starts at each Global operator, whose `fit` reads the
previous stage's shards in full before its `apply` streams them again, and wherever the
resource class changes: model-backed steps (embedding, ...) run in a stage of their own, on
the model worker pool, so CPU steps never wait on a model and models load once per worker.
Tasks depend only on the input and the recipe (never on the worker count), so output
and resume are the same whatever `--workers` is.
"""

from __future__ import annotations

from dataclasses import dataclass
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
