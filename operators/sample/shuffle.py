"""shuffle: a seeded permutation of the rows within each window of `window` consecutive rows.

Windows are cut from each task's rows (an input file, or a part of one; later, a shard of the
stage before) from its first row on: the engine hands the step batches of exactly `window` rows
(`batch_rows_param`), the last of a task shorter, so the windows and the output do not depend on
input.batch_rows or on any step's batch_rows. Memory stays bounded by the window. The permutation
of a window is drawn from the run's seed and the window's first `_id`, so a run and its resume
give the same order. Rows never move between windows or files: a global shuffle needs a
repartition the engine does not do (write the output, then shuffle with your training loader).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field

from curate.ops import Map, Params


class ShuffleParams(Params):
    window: int = Field(8192, ge=2, description="Rows per shuffled window: consecutive rows of a task (an input "
                                                "file or part of one); the last window of each is shorter.")


class Shuffle(Map):
    """Permutes rows within bounded windows, deterministically from the seed."""

    name = "shuffle"
    Params = ShuffleParams
    batch_rows_param = "window"
    requires = ("_id",)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """In a run each batch is one window; called on a longer batch, windows are cut from its start."""
        n = batch.num_rows
        window = self.params.window
        ids = batch.column("_id")
        order = np.arange(n)
        for start in range(0, n, window):
            key = xxhash.xxh3_64_intdigest(str(ids[start].as_py()).encode(), self.seed)
            rng = np.random.default_rng(key)
            order[start:start + window] = start + rng.permutation(min(window, n - start))
        return batch.take(pa.array(order))
