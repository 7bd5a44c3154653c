"""The seam between the runner and whatever executes tasks (local processes, model pools, Ray).

An executor runs tasks and hands back their results in task order; it knows nothing of what a
run means, so every executor gives the same bytes, trace, manifest and resume.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

from curate.engine.plan import Task
from curate.engine.worker import StageContext


class Executor(ABC):
    @abstractmethod
    def run(self, ctx: StageContext, tasks: list[Task], parallel: int) -> list[dict]:
        """Run `tasks` of one stage, at most `parallel` at a time; their results, in task order."""

    @abstractmethod
    def map(self, fn: Callable, *iterables) -> list:
        """`fn` over the items (a Global fit's or the publisher's parallel work), results in order."""

    @abstractmethod
    def close(self, kill: bool = False) -> None:
        """Free the workers: after their tasks finish, or at once (`kill`: on an error or interrupt)."""
