"""curate.Run: a finished run as the Python API gives it (curate.run, curate.open_run): where it
is, its manifest (typed), and its output and trace as tables (pyarrow, polars), read from a local
directory or a store.

Nothing heavy is imported at module level: pyarrow and polars load when a table is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.errors import CurateError

if TYPE_CHECKING:  # for annotations only: importing them here would make `import curate` slow
    import polars
    import pyarrow

    from curate import recipe as recipe_module
    from curate.manifest import Manifest


# The files of each output format that hold its rows as a table (webdataset: the metadata Parquet
# written beside each tar; megatron holds token ids only, no table).
_TABLE_FILES = {
    "parquet": (".parquet",),
    "jsonl": (".jsonl", ".jsonl.gz", ".jsonl.zst"),
    "hf": (".arrow",),
    "webdataset": (".parquet",),
}


@dataclass
class Run:
    """A finished run: where it is, its manifest, and its output and trace as tables."""

    path: Any  # the run directory: a Path, or the URI of an output on a store
    manifest: Manifest = field(repr=False)  # typed: .to_dict() gives it as written
    recipe: "recipe_module.Recipe | None" = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = self.path if _is_uri(str(self.path)) else Path(self.path)

    @property
    def local(self) -> bool:
        return isinstance(self.path, Path)

    @property
    def rows_in(self) -> int:
        return self.manifest.rows_in

    @property
    def rows_out(self) -> int:
        return self.manifest.rows_out

    @property
    def report_path(self) -> Path:
        return self._local_path() / "report.html"

    def data_files(self) -> list[str]:
        """The output files holding the rows as a table, in the manifest's order (paths, or URIs)."""
        fmt = self.manifest.format
        if fmt not in _TABLE_FILES:
            raise CurateError(
                f"{self.path}: a {fmt} output holds token ids, not a table; read its "
                f"data/part-NNNNN.bin/.idx with megatron-core's IndexedDataset"
            )
        names = [o.path for o in self.manifest.outputs]
        return [self._join(n) for n in names if n.endswith(_TABLE_FILES[fmt])]

    def to_arrow(self) -> "pyarrow.Table":
        """The output rows as one Arrow table (read whole into memory: for a large run, read
        `data_files()` in pieces, or `scan()` lazily)."""
        import pyarrow as pa

        tables = [self._read(f) for f in self.data_files()]
        if not tables:
            return pa.table({})
        return pa.concat_tables(tables, promote_options="permissive")

    def to_dataset(self) -> "pyarrow.dataset.Dataset":
        """The output as a pyarrow dataset over its files, read lazily (filter and project before
        reading: `run.to_dataset().to_table(columns=[...], filter=...)`)."""
        import pyarrow.dataset as ds

        if self.manifest.format in ("parquet", "webdataset"):
            return ds.dataset(self.data_files(), format="parquet", filesystem=self._fs())
        return ds.dataset(self.to_arrow())  # JSON lines, Arrow streams: read once, held in memory

    def to_polars(self) -> "polars.DataFrame":
        import polars as pl

        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)  # what a Table gives
        return frame

    def scan(self) -> "polars.LazyFrame":
        """The output as a lazy polars frame (Parquet outputs: read only what a query needs)."""
        import polars as pl

        if self.manifest.format in ("parquet", "webdataset"):
            return pl.scan_parquet(self.data_files(), storage_options=self._storage_options() or None)
        return self.to_polars().lazy()

    def trace(self, step: str | None = None) -> "pyarrow.Table":
        """The removed rows (trace/), of every step or of one (`"02_gopher_quality"`, or the
        operator's name): _id, step, reason, detail, and the row as it was."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = [s.step for s in self.manifest.steps]
        if step is not None:
            chosen = [n for n in names if n == step or n.partition("_")[2] == step]
            if not chosen:
                raise KeyError(f"no step {step!r} in this run (steps: {', '.join(names)})")
            names = chosen
        tables = []
        for name in names:
            path = self._join(f"trace/{name}.parquet")
            if self._exists(path):
                tables.append(pq.read_table(path, filesystem=self._fs()))
        if not tables:
            return pa.table(
                {
                    "_id": pa.array([], pa.string()),
                    "step": pa.array([], pa.string()),
                    "reason": pa.array([], pa.string()),
                    "detail": pa.array([], pa.string()),
                }
            )
        # Each step's rows carry the row's columns as that step saw them: unify what differs
        return pa.concat_tables(tables, promote_options="permissive")

    def funnel(self) -> list[dict]:
        """Per step: rows in and out, removed, seconds and the reasons (the manifest's `steps`)."""
        keys = ("step", "kind", "rows_in", "rows_out", "removed", "seconds", "reasons")
        return [{key: getattr(s, key) for key in keys} for s in self.manifest.steps]

    def warnings(self) -> list[str]:
        """What `curate run` warns about after this run (repeated ids, every row removed)."""
        from curate.trace import emptied_by

        said = []
        if self.manifest.duplicate_ids is not None:
            said.append(
                f"{self.manifest.duplicate_ids.message} (manifest.json duplicate_ids; "
                f"input.on_duplicate_id: fail refuses them)"
            )
        emptied = emptied_by([s.model_dump() for s in self.manifest.steps])
        if emptied:
            said.append(f"every row was removed: {emptied}")
        return said

    def _repr_markdown_(self) -> str:  # a notebook shows the funnel
        def top(reasons: dict | None) -> str:
            return ", ".join(f"{k} ({v:,})" for k, v in sorted((reasons or {}).items(), key=lambda kv: -kv[1])[:3])

        rows = "\n".join(
            f"| {s['step']} | {s['rows_in']:,} | {s['rows_out']:,} | {s['removed']:,} | {top(s['reasons'])} |"
            for s in self.funnel()
        )
        return (
            f"**{self.manifest.name}** in `{self.path}`: {self.rows_in:,} rows in, "
            f"{self.rows_out:,} out\n\n| step | in | out | removed | top reasons |\n"
            f"|---|---:|---:|---:|---|\n{rows}"
        )

    # -- paths on disk or on a store -----------------------------------------------------------

    def _local_path(self) -> Path:
        if not self.local:
            raise CurateError(f"{self.path} is on a store: its report.html is there, beside data/")
        return self.path

    def _join(self, name: str) -> str:
        return f"{str(self.path).rstrip('/')}/{name}" if not self.local else str(self.path / name)

    def _storage_options(self) -> dict:
        return dict(self.recipe.output.storage_options) if self.recipe is not None else {}

    def _fs(self):
        """None locally (pyarrow's own files); for a URI the output store's fsspec filesystem, made
        as the run made it (output.storage_options, its retry policy)."""
        if self.local:
            return None
        from curate.io.store import filesystem

        return filesystem(str(self.path), self._storage_options(), side="output")[0]

    def _exists(self, path: str) -> bool:
        return Path(path).is_file() if self.local else self._fs().exists(path)

    def _read(self, path: str) -> "pyarrow.Table":
        import pyarrow as pa
        import pyarrow.parquet as pq

        if path.endswith(".parquet"):
            return pq.read_table(path, filesystem=self._fs())
        opened = open(path, "rb") if self.local else self._fs().open(path, "rb")
        with opened as raw:
            if path.endswith(".arrow"):  # datasets' save_to_disk shards are Arrow streams
                return pa.ipc.open_stream(raw).read_all()
            import pyarrow.json as pj

            codec = "gzip" if path.endswith(".gz") else "zstd" if path.endswith(".zst") else None
            stream = pa.CompressedInputStream(raw, codec) if codec else raw
            return pj.read_json(stream)


def _is_uri(path: str) -> bool:
    return "://" in path
