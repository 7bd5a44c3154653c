"""What a task hands back to the runner, whatever ran it; its done marker holds the same, as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from curate.trace import StepStats


@dataclass
class TaskResult:
    task: str  # the task's name (plan.Task.name)
    shards: list[str] = field(default_factory=list)  # names under the stage's data/
    traces: list[str] = field(default_factory=list)  # "<step>/<name>" under the stage's trace/
    stats: dict[str, StepStats] = field(default_factory=dict)  # by step label
    observed: bool = False  # the task wrote its run observers' summaries (StageLayout.observed)
    # Set when the task's worker died on it too often: it did not run, and the runner traces its
    # rows with this error (runner.py), so none is lost.
    failed: str | None = None
    # Requests and reads of a store tried again while the task ran, by reason (io/retries.py).
    retries: dict[str, int] = field(default_factory=dict)
    # Rows of each of `shards`: the next stage's tasks are planned from these, so that a stage's
    # shards can be removed once the stage after it is done (a resume never reads them again).
    shard_rows: list[int] = field(default_factory=list)

    @classmethod
    def lost(cls, task: str, error: str) -> "TaskResult":
        return cls(task, failed=error)

    def to_json(self) -> bytes:
        return json.dumps({**asdict(self), "stats": {k: asdict(v) for k, v in self.stats.items()}}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "TaskResult":
        return cls.from_dict(json.loads(data))

    @classmethod
    def from_dict(cls, d: dict) -> "TaskResult":
        return cls(**{**d, "stats": {k: StepStats(**v) for k, v in d["stats"].items()}})
