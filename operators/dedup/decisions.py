"""The state a dedup fit hands to apply: which _ords go, with what trace detail.

The decisions file is Parquet (_ord, detail) sorted by _ord in row groups of ROW_GROUP_ROWS,
so each batch reads only the row groups of its own _ord range: apply's memory does not grow
with the number of removed rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.ops import Verdict

ROW_GROUP_ROWS = 65_536
# What a fit's COPY ... TO '<path>' appends so that the file suits Decisions.
COPY_OPTIONS = f"(FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"


@dataclass
class Decisions:
    path: str  # Parquet (_ord, detail), sorted by _ord
    reason: str
    removed: int
    facts: dict[str, int] = field(default_factory=dict)  # what the fit found on the way (the manifest's summary)

    def summary(self) -> dict[str, int] | None:
        return self.facts or None

    def files(self) -> list[str]:
        """The files this state reads (a Global state's contract: see ops.Global.fit)."""
        return [self.path] if self.removed else []

    def verdict(self, batch: pa.RecordBatch) -> Verdict:
        batch_ords = batch.column("_ord").to_numpy().astype(np.int64)
        if len(batch_ords) and self.removed:
            t = pq.read_table(self.path, filters=[("_ord", ">=", int(batch_ords.min())),
                                                  ("_ord", "<=", int(batch_ords.max()))])
        else:
            t = pa.table({"_ord": pa.array([], pa.int64()), "detail": pa.array([], pa.string())})
        ords = t.column("_ord").to_numpy().astype(np.int64)
        at = np.searchsorted(ords, batch_ords)
        hit = at < len(ords)
        hit[hit] = ords[at[hit]] == batch_ords[hit]
        detail = pc.take(t.column("detail").combine_chunks(), pa.array(np.where(hit, at, 0), mask=~hit))
        return Verdict(keep=~hit, reason=self.reason, detail=detail)
