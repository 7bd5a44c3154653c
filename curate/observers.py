"""Run observers: features that watch the rows a run reads (`input`) or writes (`output`) without
being a step (the run's dataset metrics, duplicate ids), each giving a manifest entry.

Each task keeps one summary per observer and side, observes its batches, and writes the
summaries beside its done marker; the runner merges them as tasks finish (also those of a
resumed run) and asks each observer for its manifest entry at the end. Observers outside the
framework register under the `curate.observers` entry-point group (a class with the interface
below), so curate itself imports none of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from importlib.metadata import entry_points
from typing import Callable, ClassVar, Protocol, TypeVar

import pyarrow as pa

SIDES = ("input", "output")


_S = TypeVar("_S", bound="Summary")


class Summary(Protocol):
    """What a task keeps for one observer and side: picklable, and mergeable in any order."""

    def observe(self, batch: pa.RecordBatch) -> None: ...

    def merge(self: _S, other: _S) -> None: ...  # with another of its own kind


class RunObserver(ABC):
    key: ClassVar[str]  # its manifest entry's name, unique among observers
    sides: ClassVar[tuple[str, ...]] = SIDES

    @classmethod
    @abstractmethod
    def for_recipe(cls, recipe) -> "RunObserver | None":
        """The observer for `recipe`, or None when the recipe does not ask for it."""

    @abstractmethod
    def summary(self, side: str) -> Summary:
        """An empty summary of `side` for one task."""

    @abstractmethod
    def finish(self, merged: dict[str, Summary], map: Callable) -> dict | None:
        """The manifest entry from the run's merged summaries, by side; `map` runs work in the
        engine's workers. Raise CurateError to fail the run (its work is kept)."""


def _registered() -> list[type[RunObserver]]:
    from curate.engine.run.duplicate_ids import DuplicateIds  # the framework's own observer

    return [DuplicateIds, *(ep.load() for ep in entry_points(group="curate.observers"))]


def for_recipe(recipe) -> tuple[RunObserver, ...]:
    """The observers `recipe` asks for, in a fixed order (their manifest entries' order)."""
    found = (cls.for_recipe(recipe) for cls in sorted(_registered(), key=lambda c: c.key))
    return tuple(o for o in found if o is not None)


def task_summaries(observers: tuple[RunObserver, ...], reads_input: bool, writes_output: bool) -> dict:
    """Empty summaries for a task: {observer key: {side: summary}}, for the sides the task sees."""
    seen = ("input",) * reads_input + ("output",) * writes_output
    return {o.key: {side: o.summary(side) for side in o.sides if side in seen} for o in observers}


def observe(summaries: dict, side: str, batch: pa.RecordBatch) -> None:
    for sides in summaries.values():
        if side in sides:
            sides[side].observe(batch)


def run_summaries(observers: tuple[RunObserver, ...]) -> dict:
    """The run's summaries, empty: {observer key: {side: summary}}, every side of every observer."""
    return {o.key: {side: o.summary(side) for side in o.sides} for o in observers}


def merge(into: dict, part: dict) -> None:
    """Merge a task's summaries into the run's."""
    for key, sides in part.items():
        for side, summary in sides.items():
            into[key][side].merge(summary)


def finish(observers: tuple[RunObserver, ...], merged: dict, map: Callable) -> dict:
    """The observers' manifest entries, by key (an observer may have nothing to say)."""
    entries = {o.key: o.finish(merged[o.key], map) for o in observers}
    return {key: entry for key, entry in entries.items() if entry is not None}
