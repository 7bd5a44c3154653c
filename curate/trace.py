"""The trace (every removed row, with its step, reason and detail), per-step stats, the manifest.

Trace files are Parquet with columns `_id, step, reason, detail` and, when
`output.trace_rows` is on, `row`: a struct of the removed row's columns, so removal is
replayable and nothing is lost. Every trace file of a run has one schema (`trace_schema`):
`row` holds every column any step traced, null where a step's row lacked it (the read step's
unparseable rows: `raw`, their text), so `pq.read_table(RUN_DIR/"trace")` reads them as one table.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.errors import CurateError
from curate.words import count


@dataclass
class StepStats:
    """Counts of one step in one task; summed over tasks for the manifest."""

    rows_in: int = 0
    rows_out: int = 0
    removed: int = 0
    expanded: int = 0  # input rows of a 1 -> n step that produced its rows_out children
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # the operator's own totals (Operator.take_counts)

    def add(self, other: "StepStats") -> None:
        self.rows_in += other.rows_in
        self.rows_out += other.rows_out
        self.removed += other.removed
        self.expanded += other.expanded
        self.seconds += other.seconds
        for k, v in other.reasons.items():
            self.reasons[k] = self.reasons.get(k, 0) + v
        for k, v in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v


def _per_row(value, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, pa.string())
    if isinstance(value, str):
        return pa.array([value] * n, pa.string())
    arr = value if isinstance(value, (pa.Array, pa.ChunkedArray)) else pa.array(value)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.string())


def removed_rows(batch: pa.RecordBatch, keep: np.ndarray, reason, detail, step: str, with_rows: bool) -> pa.RecordBatch:
    """The trace batch for the rows of `batch` where `keep` is False."""
    drop = ~keep
    n = len(keep)
    idx = pa.array(np.flatnonzero(drop))
    reasons = _per_row(reason if reason is not None else step, n).take(idx)
    details = _per_row(detail, n).take(idx)
    columns = {
        "_id": batch.column("_id").take(idx),
        "step": pa.array([step] * len(idx), pa.string()),
        "reason": reasons,
        "detail": details,
    }
    if with_rows:
        public = [name for name in batch.schema.names if not name.startswith("_")]
        rows = batch.select(public).take(idx)
        columns["row"] = pa.StructArray.from_arrays(rows.columns, names=public) if public else pa.nulls(len(idx))
    return pa.RecordBatch.from_pydict(columns)


def count_reasons(reasons: pa.Array) -> dict[str, int]:
    if len(reasons) == 0:
        return {}
    vc = pc.value_counts(reasons.fill_null("unknown"))
    return {str(v["values"]): int(v["counts"]) for v in vc.to_pylist()}


def trace_schema(parts: Iterable[Path]) -> pa.Schema | None:
    """One schema for every trace file of a run: the union of its parts' columns, `row` a struct of
    every column any step traced (null where a step's row lacked it; the read step's unparseable
    rows hold their text as `raw`), so that the trace directory reads as one table. None where the
    steps' columns cannot be one (a column of one type in one step, of another in another): each
    step's file then has its own (as None where there are no parts).

    The union is folded a part at a time, each part's schema dropped once merged: a run has parts
    by the thousand (1,000 WARC files: 1,500), and a list of their schemas held 2.5 KB a part in the
    run's driver. Arrow unifies a list the same way (the first schema's fields and metadata, each
    next schema's fields merged in turn), so the schema is the one unify_schemas gives the list."""
    unified = None
    try:
        for part in parts:
            schema = pq.read_schema(part)
            unified = pa.unify_schemas([schema] if unified is None else [unified, schema], promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return None
    return unified


MERGED_GROUP_ROWS = 65_536  # a merged trace's row groups: at most about this many rows
MERGED_GROUP_BYTES = 16 << 20  # ... or this much Arrow memory, held until the group is written


def merge_shards(
    parts: list[Path], target: Path, compression: str | None = "zstd", schema: pa.Schema | None = None
) -> int:
    """Concatenate Parquet shards into one file, streaming, atomically. Returns the row count.
    `schema`: the file's (each part cast to it), default the union of the parts'."""
    if not parts:
        return 0
    schemas = [pq.read_schema(p) for p in parts] if schema is None else [schema]
    try:
        schema = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid) as e:
        # Data shards are merged only when their schemas are equal; a step's trace holds the
        # removed rows of every input file, so input files whose columns differ in type meet here.
        raise CurateError(
            f"{target.stem}: the removed rows of input files whose columns have different "
            f"types cannot be kept in one trace file ({e}). Make the input files agree, or set "
            f"output.trace_rows: false to keep only _id, reason and detail"
        ) from None
    tmp = target.with_name(target.name + ".tmp")
    rows = 0
    group = _Group()
    with pq.ParquetWriter(tmp, schema, compression=compression, write_statistics=True) as writer:
        for part in parts:
            pf = pq.ParquetFile(part)
            for batch in pf.iter_batches():
                table = pa.Table.from_batches([batch])
                for name in schema.names:
                    if name not in table.schema.names:
                        table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
                group.add(table.select(schema.names).cast(schema))
                rows += batch.num_rows
                if group.rows >= MERGED_GROUP_ROWS or group.bytes >= MERGED_GROUP_BYTES:
                    group.write(writer)
        group.write(writer)
    tmp.replace(target)
    return rows


class _Group:
    """Parts' batches gathered into one row group of the merged file: a row group per task's part
    made a trace of 1,000 WARC files 500 row groups of one or two rows, whose footer (2 MB) the
    writer held to the end and every reader parsed. A group ends between parts' batches, which
    do not depend on batch sizes or workers, so neither do the groups."""

    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self.rows = self.bytes = 0

    def add(self, table: pa.Table) -> None:
        self.tables.append(table)
        self.rows += table.num_rows
        self.bytes += table.nbytes

    def write(self, writer: pq.ParquetWriter) -> None:
        if self.tables:
            table = pa.concat_tables(self.tables)
            writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.tables, self.rows, self.bytes = [], 0, 0


def check_conservation(steps: list[dict]) -> None:
    """rows in = rows out + rows removed at every step (for a 1 -> n step: rows in = rows that
    produced children + rows removed, its rows out being the children), and each step gets what
    the last one gave."""
    previous_out = None
    for s in steps:
        if "expanded" in s:
            if s["rows_in"] != s["expanded"] + s["removed"]:
                raise RuntimeError(
                    f"conservation violated at {s['step']}: {s['rows_in']} in != "
                    f"{s['expanded']} expanded + {s['removed']} removed"
                )
        elif s["rows_in"] != s["rows_out"] + s["removed"]:
            raise RuntimeError(
                f"conservation violated at {s['step']}: {s['rows_in']} in != "
                f"{s['rows_out']} out + {s['removed']} removed"
            )
        if previous_out is not None and s["rows_in"] != previous_out:
            raise RuntimeError(
                f"conservation violated before {s['step']}: got {s['rows_in']} rows, "
                f"the previous step gave {previous_out}"
            )
        previous_out = s["rows_out"]


def _emptying_step(steps: list[dict]) -> dict | None:
    """The manifest's entry of the step that removed the last rows; None when rows are left, or
    none came in."""
    return next((s for s in steps if s["rows_in"] and not s["rows_out"]), None)


def emptied_by(steps: list[dict]) -> str | None:
    """Which step (of the manifest's `steps`) removed the last rows, with its main reasons."""
    last = _emptying_step(steps)
    if last is None:
        return None
    reasons = sorted(last["reasons"].items(), key=lambda kv: -kv[1])[:3]
    why = ", ".join(f"{k} ({v:,})" for k, v in reasons)
    # steps[0] is the read step; steps[i] is the recipe's steps[i - 1]
    place = "reading the input" if last["kind"] == "read" else f"steps[{steps.index(last) - 1}].{last['op']}"
    return f"{place} removed the last {count(last['rows_in'], 'row')}" + (f" ({why})" if why else "")


def check_not_emptied(steps: list[dict], allow_empty: bool) -> None:
    """A run whose steps removed every row it read is almost always a mistake (a threshold, a
    language code, a column); it stops here, before publishing, unless the recipe allows it."""
    last = _emptying_step(steps)
    if last is None or allow_empty:
        return
    check = "the input files" if last["kind"] == "read" else "that step's parameters"
    raise CurateError(
        f"{emptied_by(steps)}, so the output would be empty. Check {check}, or set "
        f"`allow_empty: true` in the recipe to publish an empty output (--resume then "
        f"publishes this run as it is, with its trace)"
    )


# Packages whose versions can change a run's bytes (readers, hashing, numerics, models), recorded
# in the manifest where installed; looked up in the package metadata, never imported.
SHAPING_PACKAGES = (
    "polars",
    "duckdb",
    "numpy",
    "xxhash",
    "regex",
    "orjson",
    "scipy",
    "scikit-learn",
    "faiss-cpu",
    "tokenizers",
    "torch",
    "transformers",
    "sentence-transformers",
    "open_clip_torch",
    "py3langid",
)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import curate

    out = {"curate": curate.__version__, "python": platform.python_version(), "pyarrow": pa.__version__}
    for name in SHAPING_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out
