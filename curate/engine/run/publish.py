"""Publishing a run: the last stage's shards staged as data.tmp/, the traces merged per step into
trace.tmp/, both renamed into place, the run's dataset card (README.md, curate/card.py: its
`configs` name data/ so that `datasets.load_dataset(RUN_DIR)` loads the data alone), manifest.json last.

_work/ stays intact until the manifest is written, so a run killed anywhere in here is published
again, from scratch, by --resume (run_dir.open_run_dir); until manifest.json exists the run is
not complete, whatever data/ holds.

On a store (an output URI), data.tmp/ and trace.tmp/ are staged in the run's local directory as
always, then each file is uploaded once, straight under its final name in data/ and trace/ (a
store has no rename; large files go up in parts, and an object appears only whole), and the
manifest is written last: a prefix without it is no finished dataset, whatever data/ holds.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq

from curate.card import card_text
from curate.engine.failpoints import failpoint
from curate.engine.rundir.layout import Files, RunLayout
from curate.engine.rundir.store_files import output_errors
from curate.engine.work.executor import Executor
from curate.io import output_formats, retries
from curate.manifest import Manifest, OutputEntry, RunInfo, StepEntry, build as build_manifest, read as read_manifest
from curate.recipe import Recipe
from curate.trace import merge_shards, trace_schema, versions


def shard_groups(shards: list[Path], target_bytes: int) -> list[list[Path]]:
    """Consecutive shards with one schema, grouped up to `target_bytes` each: small per-task
    shards become files of about the target size, in order."""
    groups: list[list[Path]] = []
    size, schema = 0, None
    for shard in shards:
        shard_size, shard_schema = shard.stat().st_size, pq.read_schema(shard)
        if groups and size + shard_size <= target_bytes and shard_schema == schema:
            groups[-1].append(shard)
            size += shard_size
        else:
            groups.append([shard])
            size, schema = shard_size, shard_schema
    return groups


def stage_data(
    recipe: Recipe, layout: RunLayout, shards: list[str], executor: Executor, files: Files
) -> dict[Path, Path]:
    """The final shards as `data.tmp/part-NNNNN.parquet`: large ones hard-linked, runs of small
    ones merged (in the workers), then converted to the output format there. Returns the staged
    files that are the shards themselves (staged -> shard): none once converted."""
    staging = Path(layout.data_tmp)
    files.remove(layout.data_tmp)
    files.makedirs(layout.data_tmp)
    compression = None if recipe.output.parquet_compression == "none" else recipe.output.parquet_compression
    merges, linked = [], {}
    paths = [Path(s) for s in shards]
    groups = shard_groups(paths, recipe.output.shard_mb << 20) if recipe.output.merge_shards else [[s] for s in paths]
    for i, group in enumerate(groups):
        target = staging / f"part-{i:05d}.parquet"
        if len(group) == 1:
            os.link(group[0], target)
            linked[target] = group[0]
        else:
            merges.append((group, target))
    executor.map(merge_shards, [g for g, _ in merges], [t for _, t in merges], [compression] * len(merges))
    if recipe.output.format != "parquet" or recipe.output.pack is not None:
        output_formats.convert(
            staging, recipe.output.format, recipe.output.compression, executor.map, pack=recipe.output.pack
        )
        return {}
    return linked


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def lineage() -> RunInfo:
    """Where and when the run ran, for the manifest (its end time is added when it is written)."""
    return RunInfo(host=socket.gethostname(), started_at=_now())


def _output_entry(path: Path, data: Path) -> OutputEntry:
    """One published data file (staged under `data`): its path in the run directory, bytes and
    (Parquet) rows."""
    name, size = f"data/{path.relative_to(data).as_posix()}", path.stat().st_size
    if path.suffix == ".parquet":
        return OutputEntry(path=name, bytes=size, rows=pq.ParquetFile(path).metadata.num_rows)
    return OutputEntry(path=name, bytes=size)  # `rows` unset: not written


def _upload(layout: RunLayout, traced: bool, held: dict[Path, str]) -> None:
    """The staged data/ and trace/ to the store under their final names; those the store already
    holds (`held`: staged file -> its key in the work store) are copied there, not uploaded again."""
    places = [(layout.data_tmp, layout.data)] + ([(layout.trace_tmp, layout.trace)] if traced else [])
    pairs = [
        (f, f"{published}/{f.relative_to(staged).as_posix()}")
        for staged, published in places
        for f in sorted(Path(staged).rglob("*"))
        if f.is_file()
    ]
    layout.files.copy([(held[f], target) for f, target in pairs if f in held])
    layout.files.upload([(str(f), target) for f, target in pairs if f not in held])


def publish(
    recipe: Recipe,
    layout: RunLayout,
    trace_parts: dict[str, list[str]],
    steps: list[StepEntry],
    content: dict,
    run: RunInfo,
    files: Files,
    map: Callable[..., list],
    started: float,
    still_ours=lambda: None,
    report=None,
    held: dict[Path, str] | None = None,
) -> Manifest:
    """Traces merged per step (each must hold the rows its step removed), trace/ and data/ renamed
    into place (uploaded, on a store), the manifest (the funnel in `steps`, the runner's other
    fields in `content`, `run` its lineage, the run's start at `started`) written last, once
    `still_ours()` has not raised (the run still holds its lock); the manifest as written. The
    traces are merged by `map` (the run's executor's: in its workers, as stage_data's merges). On a
    store, the staged files in `held` (work_store.held_copies) are copied from the work store,
    and `report(manifest, data, trace, target)` (if given) writes report.html to the local
    `target` from the staged files, and it is uploaded before the manifest; the output's retries
    are counted into the manifest's `store` then."""
    files.remove(layout.trace_tmp)
    files.makedirs(layout.trace_tmp)
    # one schema for every step's file (the union of their columns): the trace reads as one table
    schema = trace_schema(Path(p) for parts in trace_parts.values() for p in parts)
    # Merged in the workers, not here: a merge holds a row group of its step's trace (up to
    # MERGED_GROUP_ROWS rows or MERGED_GROUP_BYTES) and the writer's buffers, which grew the run's
    # driver with the traced rows (fineweb on 1,000 WARC files: +10 MB at its peak, 5% of it)
    labels = [label for label, parts in trace_parts.items() if parts]
    rows = map(
        partial(merge_shards, schema=schema),
        [[Path(p) for p in trace_parts[label]] for label in labels],
        [Path(layout.trace_tmp) / f"{label}.parquet" for label in labels],
    )
    traced = dict(zip(labels, rows))
    for entry in steps:
        if entry.removed != traced.get(entry.step, 0):
            raise RuntimeError(
                f"trace of {entry.step} holds {traced.get(entry.step, 0)} rows, {entry.removed} were removed"
            )
    if layout.remote:
        with output_errors(layout.root):
            _upload(layout, bool(traced), held or {})
        data = Path(layout.data_tmp)
    else:
        if traced:
            files.move(layout.trace_tmp, layout.trace)
        else:
            files.remove(layout.trace_tmp)
        files.move(layout.data_tmp, layout.data)
        data = Path(layout.data)
    failpoint("published-data")
    data_files = output_formats.data_files(data, recipe.output.format)
    content = {
        **content,
        "steps": steps,
        "run": run.model_copy(update={"ended_at": _now()}),
        "versions": versions(),
        "format": recipe.output.format,
        "data_files": len(data_files),
        "outputs": [_output_entry(Path(f), data) for f in data_files],
        "seconds": round(time.perf_counter() - started, 3),
    }
    typed = build_manifest(content)  # checked against its model (curate/manifest.py) before it is written
    if layout.remote:
        if report is not None and report(typed, data, Path(layout.trace_tmp), Path(layout.report_tmp)):
            with output_errors(layout.root):
                layout.files.upload([(layout.report_tmp, layout.report)])
        retried = retries.take_output()  # since the run started: its lease, uploads and report
        store = {
            **(typed.store or {}),
            "output_retries": sum(retried.values()),
            "output_retry_reasons": dict(sorted(retried.items())),
        }
        typed = build_manifest({**content, "store": store})
    still_ours()
    with output_errors(layout.root):
        if not layout.remote:  # the run's own card, from the manifest as written: load_dataset(RUN_DIR) reads data/
            card = card_text(layout.root, manifest=read_manifest(typed.to_bytes(), layout.manifest))
            layout.files.write_bytes(layout.card, card.encode())
        layout.files.write_bytes(layout.manifest, typed.to_bytes())
    if layout.remote:
        for path in layout.staging():
            files.remove(path)
    return typed
