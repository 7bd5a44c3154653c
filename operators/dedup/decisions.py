"""The state a near-dedup fit hands to apply: which _ords go, with what trace detail."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.ops import Verdict


@dataclass
class Decisions:
    path: str  # Parquet (_ord, detail), sorted by _ord
    reason: str
    removed: int
    _loaded: tuple[np.ndarray, pa.Array] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self):
        return {**self.__dict__, "_loaded": None}  # the table is re-read from disk, not pickled

    def _table(self) -> tuple[np.ndarray, pa.Array]:
        if self._loaded is None:
            t = pq.read_table(self.path)
            self._loaded = (t.column("_ord").to_numpy().astype(np.int64), t.column("detail").combine_chunks())
        return self._loaded

    def verdict(self, batch: pa.RecordBatch) -> Verdict:
        ords, details = self._table()
        batch_ords = batch.column("_ord").to_numpy().astype(np.int64)
        at = np.searchsorted(ords, batch_ords)
        hit = at < len(ords)
        hit[hit] = ords[at[hit]] == batch_ords[hit]
        detail = pc.take(details, pa.array(np.where(hit, at, 0), mask=~hit))
        return Verdict(keep=~hit, reason=self.reason, detail=detail)
