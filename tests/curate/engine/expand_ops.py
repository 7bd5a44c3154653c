"""A 1 -> n test operator: row `n` becomes `n % 4` children (0 of them: traced with a reason),
or, when told to misbehave, drops some rows without a verdict."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa

from curate.ops import Map, Params, Resources, Result, Verdict


class ExpanderParams(Params):
    drop_silently: int = -1  # rows whose n equals this vanish without a verdict (a bug)
    async_io: bool = False


class Expander(Map):
    name = "test_expander"
    Params = ExpanderParams
    changes_rows = True
    requires = ("n",)
    provides = ("k",)

    def _expand(self, batch: pa.RecordBatch):
        ns, ids = batch.column("n").to_pylist(), batch.column("_id").to_pylist()
        keep = np.zeros(len(ns), dtype=bool)
        parents, ks = [], []
        for i, (n, row_id) in enumerate(zip(ns, ids)):
            if n == self.params.drop_silently:
                keep[i] = True  # claims the row produced children, but emits none
                continue
            keep[i] = n % 4 > 0
            parents += [row_id] * (n % 4)
            ks += list(range(n % 4))
        children = pa.RecordBatch.from_pydict({"_parent_id": pa.array(parents, pa.string()), "k": pa.array(ks, pa.int64())})
        return Result(children, Verdict(keep, "no_children", [f"n={n}" for n in ns]))

    def process(self, batch):
        return self._expand(batch)


class AsyncExpander(Expander):
    """The same, with an async `process` in the io resource class."""

    name = "test_async_expander"
    resources = Resources(pool="io")

    async def process(self, batch):
        await asyncio.sleep(0)
        return self._expand(batch)
