"""shuffle: a seeded permutation of the rows within each window of `window` consecutive rows.

Windows are slices of the batches the engine streams (`input.batch_rows` rows), so memory stays
bounded; the permutation of a window is drawn from the run's seed and the window's first `_id`,
so a run and its resume give the same order. Rows never move between windows or files: a global
shuffle needs a repartition the engine does not do (write the output, then shuffle with a
second run whose input.batch_rows covers the data, or with your training loader).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field

from curate.ops import Map, Params


class ShuffleParams(Params):
    window: int | None = Field(None, ge=2, description="Rows per shuffled window; null: the whole batch.")


class Shuffle(Map):
    """Permutes rows within bounded windows, deterministically from the seed."""

    name = "shuffle"
    Params = ShuffleParams
    requires = ("_id",)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        window = self.params.window or max(n, 1)
        ids = batch.column("_id")
        order = np.arange(n)
        for start in range(0, n, window):
            key = xxhash.xxh3_64_intdigest(str(ids[start].as_py()).encode(), self.seed)
            rng = np.random.default_rng(key)
            order[start:start + window] = start + rng.permutation(min(window, n - start))
        return batch.take(pa.array(order))
