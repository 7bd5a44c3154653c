"""What a Global step's `fit` hands to its `apply`: a FitState.

The engine writes it once fitted (`save`), reads it back in every worker and on --resume
(`FitState.load`), ships the files it names (`files`) to workers that do not see the run's
disk, removes the rest of the fit's work directory, and puts its `summary` in the manifest.
Most fits return one of the two standard states here: `Decisions` (which rows go, and why:
dedup, pruning) or `Value` (one small value: a threshold); others subclass FitState, which
gives them the defaults below (a state that only implements the four methods is one too: the
check is structural).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.result import Verdict


@runtime_checkable
class FitState(Protocol):
    """The protocol of every fit's state. The state must pickle; large parts live in files under
    the fit's workdir, named by `files`."""

    def files(self) -> list[str]:
        """The files under the fit's workdir that `apply` reads. Default: none."""
        return []

    def summary(self) -> dict | None:
        """What the manifest says of the fit (JSON-able), or None. Default: None."""
        return None

    def save(self) -> bytes:
        return pickle.dumps(self)

    @staticmethod
    def load(data: bytes) -> "FitState":
        return pickle.loads(data)


@dataclass
class Value(FitState):
    """A state that is one small value (a threshold, a count); `facts`: the manifest's summary."""

    value: Any = None
    facts: dict | None = None

    def summary(self) -> dict | None:
        return self.facts


ROW_GROUP_ROWS = 65_536
# What a fit's COPY ... TO '<path>' appends so that the file suits Decisions.
COPY_OPTIONS = f"(FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"


@dataclass
class Decisions(FitState):
    """Which rows go, with what trace detail: a Parquet file (_ord, detail) sorted by _ord in row
    groups of ROW_GROUP_ROWS, so each batch reads only the row groups of its own _ord range
    (apply's memory does not grow with the number of removed rows)."""

    path: str  # Parquet (_ord, detail), sorted by _ord
    reason: str
    removed: int
    facts: dict[str, int] = field(default_factory=dict)  # what the fit found on the way (the manifest's summary)

    def summary(self) -> dict[str, int] | None:
        return self.facts or None

    def files(self) -> list[str]:
        return [self.path] if self.removed else []

    def verdict(self, batch: pa.RecordBatch) -> Verdict:
        batch_ords = batch.column("_ord").to_numpy().astype(np.int64)
        if len(batch_ords) and self.removed:
            t = pq.read_table(
                self.path, filters=[("_ord", ">=", int(batch_ords.min())), ("_ord", "<=", int(batch_ords.max()))]
            )
        else:
            t = pa.table({"_ord": pa.array([], pa.int64()), "detail": pa.array([], pa.string())})
        ords = t.column("_ord").to_numpy().astype(np.int64)
        at = np.searchsorted(ords, batch_ords)
        hit = at < len(ords)
        hit[hit] = ords[at[hit]] == batch_ords[hit]
        detail = pc.take(t.column("detail").combine_chunks(), pa.array(np.where(hit, at, 0), mask=~hit))
        return Verdict(keep=~hit, reason=self.reason, detail=detail)
