"""What the report reads of a run's Parquet files, through DuckDB: aggregations only (counts per
bin, per source, per cluster), so memory stays bounded whatever the number of rows; DuckDB
spills what does not fit (a cluster table of a large dedup) to a temporary directory."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from curate.manifest import Manifest

MEMORY = "1GB"


def quote(s: str | Path) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def files(paths: list[Path]) -> str:
    """A read_parquet() of `paths`."""
    return f"read_parquet([{', '.join(quote(p) for p in paths)}])"


@dataclass
class Run:
    """A finished run as the report reads it: its data files, each step's trace, their columns."""

    root: Path | str  # its directory, or the URI of a run on a store (named in messages)
    manifest: Manifest
    data: list[Path] = field(default_factory=list)
    traces: dict[str, Path] = field(default_factory=dict)  # step label -> trace file
    data_columns: dict[str, pa.DataType] = field(default_factory=dict)
    trace_columns: dict[str, dict[str, pa.DataType]] = field(default_factory=dict)  # the traced rows' columns

    @classmethod
    def open(cls, root: Path | str, manifest: Manifest, data: Path | None = None, trace: Path | None = None) -> "Run":
        """The run at `root`, its files in its data/ and trace/, or in `data` and `trace` (a run on
        a store, read from its files staged locally)."""
        run = cls(root, manifest)
        data = Path(root) / "data" if data is None else data
        trace = Path(root) / "trace" if trace is None else trace
        run.data = sorted(data.glob("*.parquet"))
        if run.data:
            schema = pq.read_schema(run.data[0])
            run.data_columns = dict(zip(schema.names, schema.types))
        for s in manifest.steps:
            path = trace / f"{s.step}.parquet"
            if path.is_file():
                run.traces[s.step] = path
                schema = pq.read_schema(path)
                # no `row` column: the run's output.trace_rows was false (ids and reasons only)
                row = schema.field("row").type if "row" in schema.names else pa.null()
                run.trace_columns[s.step] = {f.name: f.type for f in row} if pa.types.is_struct(row) else {}
        return run

    @property
    def text_column(self) -> str:
        return recipe_input(self.manifest).get("text_column", "text")

    def sql(self, query: str) -> list[tuple]:
        import duckdb

        with tempfile.TemporaryDirectory(prefix="curate-report-") as spill:
            con = duckdb.connect()
            try:
                con.execute(
                    f"SET memory_limit='{MEMORY}'; SET temp_directory={quote(spill)}; "
                    f"SET preserve_insertion_order=false"
                )
                return con.execute(query).fetchall()
            finally:
                con.close()

    def data_sql(self, select: str, where: str = "", tail: str = "") -> list[tuple]:
        """`select` over the output rows (their columns by name)."""
        if not self.data:
            return []
        return self.sql(f"SELECT {select} FROM {files(self.data)} {where} {tail}")

    def trace_sql(self, step: str, select: str, where: str = "", tail: str = "") -> list[tuple]:
        """`select` over the rows `step` removed: the traced row's columns by name, and the trace's
        own as _trace_id, _reason and _detail."""
        path = self.traces[step]
        row = ", unnest(t.row)" if self.trace_columns[step] else ""  # a trace of rows with no columns has none
        return self.sql(
            f"SELECT {select} FROM (SELECT t._id AS _trace_id, t.reason AS _reason, "
            f"t.detail AS _detail{row} FROM read_parquet({quote(path)}) t) {where} {tail}"
        )


ROWS_AT_BATCH = 64  # rows decoded at once where a trace's rows carry whole input rows (a page's HTML)


def batches(path: Path, batch_size: int, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """A Parquet file's rows, `batch_size` at a time, decoded on this thread. Arrow's decoding on its
    pool of threads left each thread's malloc arena holding what it had decoded: the report's sample
    rows of the fineweb recipe on 1,000 WARC files peaked 10 MB above 10 files' (`curate report`
    alone; the traces 11-35 KB on disk), on this thread 3.6 MB. The report reads a few rows of
    each file: threads save nothing here."""
    return pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns, use_threads=False)


def first_of_each(path: Path, per_value: int, scan: int, column: str = "reason") -> dict[str, list[int]]:
    """The positions of the first `per_value` rows of each value of `column` among the first
    `scan` rows of a Parquet file, from that column alone."""
    found: dict[str, list[int]] = {}
    seen = 0
    for batch in batches(path, 65_536, [column]):
        for i, value in enumerate(batch.column(0).to_pylist()[: scan - seen]):
            bucket = found.setdefault(value, [])
            if len(bucket) < per_value:
                bucket.append(seen + i)
        seen += batch.num_rows
        if seen >= scan:
            break
    return found


def rows_at(path: Path, positions: list[int], columns: list[str] | None = None) -> dict[int, dict]:
    """The rows of a Parquet file at `positions`, decoding ROWS_AT_BATCH rows at a time and
    stopping after the last: a trace's rows can hold a whole page each, and the report wants a
    few, so its memory does not grow with the rows before them."""
    wanted, seen = sorted(set(positions)), 0
    out: dict[int, dict] = {}
    if not wanted:
        return out
    for batch in batches(path, ROWS_AT_BATCH, columns):
        for p in wanted:
            if seen <= p < seen + batch.num_rows:  # a slice, not take(): no compute kernels to load
                out[p] = batch.slice(p - seen, 1).to_pylist()[0]
        seen += batch.num_rows
        if seen > wanted[-1]:
            break
    return out


def recipe_input(manifest: Manifest) -> dict:
    """The recipe's `input:` as the manifest keeps the recipe (a document of the user's, `${VAR}`s
    unexpanded, so not read through the recipe's model)."""
    return manifest.recipe.get("input", {})


def recipe_steps(manifest: Manifest) -> list[tuple[str, dict]]:
    """(operator, params) of each recipe step, in order."""
    out = []
    for step in manifest.recipe.get("steps", []):
        if isinstance(step, dict) and len(step) == 1:
            ((op, params),) = step.items()
            out.append((op, params if isinstance(params, dict) else {}))
    return out


def dumps(v) -> str:
    return json.dumps(v, default=str)
