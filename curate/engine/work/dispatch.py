"""The one bounded-dispatch loop every executor runs tasks with (local processes, model pools, Ray).

An executor says how to start a task on a slot (a worker process, an actor, or one of N places
for tasks), how to wait for started tasks and how to collect one's result; the loop keeps every
slot busy, never more tasks in flight than slots, and hands each result to the runner as its task
ends (`take`, with the task's index), keeping none: a stage of many tasks costs the driver no
memory per finished task. A worker that dies under its task (`WorkerLost`) is replaced and the
task run again, up to `attempts` runs; after that its result is `TaskResult.lost` and the runner
traces its rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import Callable, Generic, Hashable, Sequence, TypeVar

from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.tasks.plan import Task
from curate.words import times

Slot = TypeVar("Slot")
Handle = TypeVar("Handle", bound=Hashable)

POLL_SECONDS = 0.2  # how often progress is relayed while tasks run


class WorkerLost(Exception):
    """The worker running a task died (killed, out of memory, a crashing kernel)."""


class Slots(ABC, Generic[Slot, Handle]):
    """What an executor gives the loop."""

    worker = "worker"  # what a slot's worker is called in a lost task's error

    @abstractmethod
    def start(self, slot: Slot, task: Task) -> Handle:
        """Start `task` on `slot`; a handle to wait on."""

    @abstractmethod
    def wait(self, handles: list[Handle], timeout: float) -> list[Handle]:
        """The handles among `handles` whose task has ended (within `timeout` seconds)."""

    @abstractmethod
    def collect(self, handle: Handle) -> TaskResult:
        """The ended task's result; its own error raised, or WorkerLost when its worker died."""

    def replace(self, slot: Slot) -> None:
        """A new worker for `slot`, whose worker died. Default: nothing (the slot is a place)."""

    def cancel(self, handles: list[Handle]) -> None:
        """Stop the tasks of `handles` (an error or interrupt ends the stage). Default: nothing."""

    def relay(self) -> None:
        """Pass on the progress workers have reported. Default: nothing."""


def dispatch(
    tasks: Sequence[Task], slots: list, executor: Slots, take: Callable[[int, TaskResult], None], attempts: int = 1
) -> None:
    """Run `tasks` on `slots`, one task per slot at a time; each result to `take` (the task's index,
    its result) as it ends, in the order they end."""
    runs = [0] * len(tasks)
    queued = deque(range(len(tasks)))
    running: dict = {}
    free = list(slots)
    try:
        while queued or running:
            while queued and free:
                i, slot = queued.popleft(), free.pop(0)
                runs[i] += 1
                running[executor.start(slot, tasks[i])] = (i, slot)
            done = executor.wait(list(running), POLL_SECONDS)
            executor.relay()
            for handle in done:
                i, slot = running.pop(handle)
                try:
                    result = executor.collect(handle)
                    failpoint("task-done")
                except WorkerLost as e:
                    executor.replace(slot)
                    if runs[i] < attempts:
                        queued.appendleft(i)
                        free.append(slot)
                        continue
                    result = TaskResult.lost(
                        tasks[i].name, f"the {executor.worker} died {times(runs[i])} on this task ({e})"
                    )
                free.append(slot)
                take(i, result)
    except BaseException:
        executor.cancel(list(running))
        raise
    executor.relay()
