"""A Global step's fit: over the previous stage's shards, once (its state kept for resume), its
parallel pieces on the run's executor."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import pyarrow.parquet as pq

from curate.engine.context import StageContext, prepared_name
from curate.engine.executor import Executor
from curate.engine.failpoints import failpoint
from curate.engine.layout import Files
from curate.engine.steps import check_columns, rebatch
from curate.engine.task import shard_batches
from curate.memory import budget_gb
from curate.ops import Global, Parallel


def fit(ctx: StageContext, shards: list[str], executor: Executor, workers: int, files: Files) -> dict:
    """Fit the stage's Global operator over `shards` unless its state is there already; what
    fit.json says of it (seconds, the state's summary, the parallel pieces' seconds)."""
    layout = ctx.layout
    if files.is_file(layout.state):
        return json.loads(files.read_bytes(layout.fit_report))
    step = ctx.stage.global_step
    op: Global = step.build(ctx.recipe)
    op.setup()
    files.remove(layout.fit)
    files.makedirs(layout.fit)
    raw = op.requires if op.fit_columns is None else op.fit_columns
    prefix = prepared_name(step, "")

    def batches():
        if not shards:  # an earlier step removed every row: the fit sees none
            return
        names = pq.read_schema(shards[0]).names
        check_columns(names, op, step, ctx.recipe.input.text_column, "the data")
        columns = ["_id", *[c for c in raw if c != "_id"], *[n for n in names if n.startswith(prefix)]]
        stream = shard_batches(shards, 0, ctx.recipe.input.batch_rows, columns,
                               rename=lambda names: [n.removeprefix(prefix) for n in names])
        rows = step.rows_per_batch()  # the fit sees the step's batch size, as its apply does
        for batch in rebatch(stream, rows) if rows else stream:
            yield batch
            failpoint("fit")

    mapped: dict[str, dict] = {}

    def timed_map(fn, *iterables) -> list:
        """executor.map, its wall seconds and pieces summed per function (the fit's parallel phases)."""
        t0 = time.perf_counter()
        results = executor.map(fn, *iterables, files_in=layout.fit)
        name = getattr(fn, "func", fn).__name__  # a functools.partial's function
        entry = mapped.setdefault(name, {"seconds": 0.0, "pieces": 0})
        entry["seconds"] += time.perf_counter() - t0
        entry["pieces"] += len(results)
        return results

    started = time.perf_counter()
    parallel = Parallel(timed_map, workers, threads=1, memory_gb=budget_gb(ctx.recipe.memory_gb))  # a core per worker
    state = op.fit(batches(), Path(layout.fit), parallel)
    # What the manifest says of the fit: its seconds, and the state's own report where it gives
    # one (e.g. SemDeDup's kept fraction per eps, DBP's per-cluster table), JSON-able. fit.json
    # also keeps the seconds spent in parallel pieces, per function (the rest ran serially).
    summary = state.summary() if callable(getattr(state, "summary", None)) else None
    report = {"seconds": time.perf_counter() - started, "summary": summary, "workers": workers, "map": mapped,
              "memory_gb": parallel.memory_gb}
    files.write_bytes(layout.fit_report, json.dumps(report).encode())
    files.write_bytes(layout.state, pickle.dumps(state))  # last: its presence means "fitted"
    failpoint("state-written")
    return report
