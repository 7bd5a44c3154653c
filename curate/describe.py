"""Text for `curate ops` (operators and their parameters) and `curate inspect` (datasets and runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.table import Table

from curate import registry
from curate.errors import CurateError


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    return text or str(annotation).replace("typing.", "")


def summary(cls) -> str:
    """The first line of the operator's docstring (else of its module's)."""
    doc = (cls.__doc__ or sys.modules[cls.__module__].__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def operator_list() -> Table:
    table = Table(title="operators (curate ops NAME for parameters)")
    table.add_column("name")
    table.add_column("kind")
    table.add_column("summary")
    for name in registry.names():
        try:
            cls = registry.get(name)
        except ImportError as e:  # an operator whose optional extra is not installed
            table.add_row(name, "?", f"(unavailable: {e})")
            continue
        table.add_row(name, cls.kind, summary(cls))
    return table


def describe_operator(name: str) -> Table:
    cls = registry.get(name, "curate ops")
    table = Table(title=f"{name} ({cls.kind}): {summary(cls)}", title_justify="left")
    for col in ("parameter", "type", "default", "description"):
        table.add_column(col)
    for field_name, info in cls.Params.model_fields.items():
        default = "(required)" if info.is_required() else repr(info.get_default(call_default_factory=True))
        table.add_row(field_name, _type_name(info.annotation), default, info.description or "")
    res = cls.resources
    table.caption = f"resources: cpus={res.cpus}, gpus={res.gpus}" + (f", memory={res.memory_gb} GB" if res.memory_gb else "")
    return table


def inspect_path(path: Path) -> list:
    import duckdb
    import pyarrow.parquet as pq

    path = Path(path)
    out = []
    if (path / "manifest.json").is_file():
        from curate.progress import funnel_table

        out.append(funnel_table(json.loads((path / "manifest.json").read_text())))
        path = path / "data"
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise CurateError(f"{path}: no Parquet files here")
    try:
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        schema = pq.read_schema(files[0])
    except Exception as e:
        raise CurateError(f"{path}: not readable as Parquet: {e}") from None
    schema_table = Table(title=f"{path}: {rows:,} rows in {len(files)} files")
    schema_table.add_column("column")
    schema_table.add_column("type")
    for f in schema:
        schema_table.add_row(f.name, str(f.type))
    out.append(schema_table)
    listing = ", ".join(f"'{f}'" for f in files)
    summary = duckdb.sql(f"SUMMARIZE SELECT * FROM read_parquet([{listing}], union_by_name=true)").fetchall()
    table = Table(title="per-column summary")
    for col in ("column", "type", "min", "max", "distinct~", "mean", "null %"):
        table.add_column(col)
    for r in summary:  # column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage
        clip = lambda v: (str(v)[:40] + "...") if v is not None and len(str(v)) > 40 else ("" if v is None else str(v))
        table.add_row(r[0], r[1], clip(r[2]), clip(r[3]), f"{r[4]:,}", clip(r[5]), f"{float(r[11]):.1f}")
    out.append(table)
    return out
