"""A Global step's fit: over the previous stage's shards, once (its state kept for resume), its
parallel pieces on the run's executor."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import cast

import pyarrow.parquet as pq

from curate.engine.failpoints import failpoint
from curate.engine.rundir.layout import Files
from curate.engine.tasks.context import StageContext, prepared_name
from curate.engine.tasks.steps import check_columns, rebatch
from curate.engine.tasks.task import shard_batches
from curate.engine.work.executor import Executor
from curate.engine.work.work_store import state_files
from curate.memory import budget_gb
from curate.ops import FitState, Global, Parallel
from curate.result import OperatorBug


def fit(
    ctx: StageContext, shards: list[str], executor: Executor, workers: int, files: Files, keep_work: bool = False
) -> dict:
    """Fit the stage's Global operator over `shards` unless its state is there already; what
    fit.json says of it (seconds, the state's summary, the parallel pieces' seconds, the bytes
    its work directory held). Once the state is written, the work files it does not read are
    removed (unless `keep_work`): a run's disk holds one fit's intermediates at a time."""
    layout = ctx.layout
    if files.is_file(layout.state):
        if not keep_work and Path(layout.fit).is_dir():  # an attempt stopped before it removed them
            drop_unread(Path(layout.fit), state_files(FitState.load(files.read_bytes(layout.state))))
        return json.loads(files.read_bytes(layout.fit_report))
    step = ctx.stage.global_step
    assert step is not None  # fit runs a Global stage's step
    op = cast(Global, step.build(ctx.recipe))
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
        stream = shard_batches(
            shards,
            0,
            ctx.recipe.input.batch_rows,
            columns,
            rename=lambda names: [n.removeprefix(prefix) for n in names],
        )
        rows = step.rows_per_batch()  # the fit sees the step's batch size, as its apply does
        for batch in rebatch(stream, rows) if rows else stream:
            yield batch
            failpoint("fit")

    mapped: dict[str, dict] = {}
    busy: dict[str, list] = {}  # per function: its calls in flight, and since when one has been
    mapping = threading.Lock()  # calls run at once where the engine asks (Parallel.calls_in_flight)

    def timed_map(fn, *iterables) -> list:
        """executor.map, its wall seconds (while any call of it runs) and pieces summed per
        function (the fit's parallel phases)."""
        name = getattr(fn, "func", fn).__name__  # a functools.partial's function
        with mapping:
            calls = busy.setdefault(name, [0, 0.0])
            if calls[0] == 0:
                calls[1] = time.perf_counter()
            calls[0] += 1
        results: list = []
        try:
            results = executor.map(fn, *iterables, files_in=layout.fit)
        finally:
            with mapping:
                entry = mapped.setdefault(name, {"seconds": 0.0, "pieces": 0})
                entry["pieces"] += len(results)
                calls[0] -= 1
                if calls[0] == 0:
                    entry["seconds"] += time.perf_counter() - calls[1]
        return results

    started = time.perf_counter()
    budget = budget_gb(ctx.recipe.memory_gb)  # threads=1 below: a core per worker
    parallel = Parallel(
        timed_map,
        workers,
        threads=1,
        memory_gb=budget,
        pieces_per_call=executor.pieces_per_call,
        calls_in_flight=executor.calls_in_flight,
    )
    state = op.fit(batches(), Path(layout.fit), parallel)
    if not isinstance(state, FitState):
        raise OperatorBug(
            step,
            f"{type(op).__name__}.fit returned {type(state).__name__}; a Global's fit returns a "
            f"FitState (curate/fit_state.py: Decisions, Value or a subclass)",
        )
    # What the manifest says of the fit: its seconds, and the state's own report where it gives
    # one (e.g. SemDeDup's kept fraction per eps, DBP's per-cluster table), JSON-able. fit.json
    # also keeps the seconds spent in parallel pieces, per function (the rest ran serially).
    report = {
        "seconds": time.perf_counter() - started,
        "summary": state.summary(),
        "workers": workers,
        "map": mapped,
        "memory_gb": parallel.memory_gb,
        "work_bytes": work_bytes(Path(layout.fit)),
    }
    files.write_bytes(layout.fit_report, json.dumps(report).encode())
    files.write_bytes(layout.state, state.save())  # last: its presence means "fitted"
    failpoint("state-written")
    if not keep_work:
        drop_unread(Path(layout.fit), state_files(state))
    return report


def work_bytes(fit_dir: Path) -> dict[str, int]:
    """Bytes under each entry of the fit's work directory (band rows, samples, spills...), largest first."""
    sizes = {
        entry.name: sum(f.stat().st_size for f in ([entry] if entry.is_file() else entry.rglob("*")) if f.is_file())
        for entry in fit_dir.iterdir()
    }
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def drop_unread(fit_dir: Path, read: list[Path]) -> None:
    """Remove what the fit wrote under `fit_dir` except the files its state reads (and the
    directories holding them). A kill part-way leaves the state and those files whole: the rest
    is what no apply needs."""
    read = [p.resolve() for p in read]
    for path in sorted(fit_dir.rglob("*"), key=lambda p: -len(p.parts)):  # a directory's contents first
        resolved = path.resolve()
        if any(resolved == r or r in resolved.parents or resolved in r.parents for r in read):
            continue
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
