"""Text for `curate ops` (operators and their parameters) and `curate inspect` (datasets and runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
from rich.table import Table

from curate import registry
from curate.errors import CurateError
from curate.ops import column_role
from curate.words import count


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    return text or str(annotation).replace("typing.", "")


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
_COLUMN_ROLES = {"reads": "input column", "writes": "output column"}


def _type_and_range(info) -> str:
    """`float | None, >= 0, <= 1`: the type, and the range Field(ge=..., le=...) puts on it; `str,
    input column` for a parameter naming columns (reads_column, writes_column)."""
    bounds = [f"{sign} {getattr(m, key)}" for m in info.metadata for key, sign in _BOUNDS if hasattr(m, key)]
    role = _COLUMN_ROLES.get(column_role(info) or "")
    return ", ".join([_type_name(info.annotation), *bounds, *([role] if role else [])])


SUMMARY_CHARS = 160


def summary(cls) -> str:
    """The first sentence of the operator's docstring (else of its module's), whole, not its first
    line: a sentence that wraps in the docstring would be cut mid-way. Without its leading
    "NAME:" (the listing names it), and, past SUMMARY_CHARS, without its parentheses."""
    import re

    doc = (cls.__doc__ or sys.modules[cls.__module__].__doc__ or "").strip()
    paragraph = " ".join(doc.split("\n\n")[0].split())
    paragraph = re.sub(rf"^{re.escape(cls.name)}(\s*\([^)]*\))?:\s*", "", paragraph) if cls.name else paragraph
    text = _first_sentence(paragraph)
    if len(text) > SUMMARY_CHARS:
        text = re.sub(r"\s*\([^()]*\)", "", text)
    return text[:1].upper() + text[1:]


def _first_sentence(text: str) -> str:
    """Up to the first full stop outside parentheses, quotes and `code` (not that of "e.g.")."""
    depth, quoted, code = 0, False, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == '"':
            quoted = not quoted
        elif ch == "." and not depth and not quoted and (i + 1 == len(text) or text[i + 1] == " "):
            if text[max(0, i - 4) : i + 1].endswith(("e.g.", "i.e.", " al.", "vs.", "etc.")):
                continue
            return text[: i + 1]
    return text


def operator_list() -> Table:
    table = Table(title="operators (curate ops NAME for parameters)")
    table.add_column("name")
    table.add_column("kind")
    table.add_column("summary")
    for name in registry.names():
        try:
            cls = registry.get(name)
        except ImportError as e:  # an operator whose optional extra is not installed
            from rich.markup import escape

            from curate.extras import install_hint

            package = getattr(e, "package", None) or e.name
            why = f"needs {package}: {install_hint(package)}" if package else str(e)
            table.add_row(name, "?", escape(f"(unavailable: {why})"))
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
        table.add_row(field_name, _type_and_range(info), default, info.description or "")
    res = cls.resources
    table.caption = f"resources: cpus={res.cpus}, gpus={res.gpus}" + (
        f", memory={res.memory_gb} GB" if res.memory_gb else ""
    )
    return table


# Up to this many rows, distinct values are counted exactly; above, duckdb's HyperLogLog
# estimate is shown (and labelled so), which costs one pass and little memory.
EXACT_DISTINCT_ROWS = 1_000_000


def inspect_path(path: Path) -> list:
    """A run directory's funnel, then the schema, row count and per-column summary of the data.

    Parquet is summarized from its files; other inputs (JSONL, CSV, a Hugging Face dataset) are
    read the way `curate run` reads them (so `_id` shows), into memory."""
    import glob

    import duckdb

    from curate.io.sources import discover

    spec = str(path)
    if not spec.startswith("hf:") and not glob.has_magic(spec) and not Path(spec).exists():
        raise CurateError(f"{spec}: not found")
    out = []
    path = Path(spec)
    if (path / "_work").is_dir() and not (path / "manifest.json").is_file():
        # manifest.json is written last: whatever data/ holds, this run is not finished
        raise CurateError(
            f"{spec}: an unfinished curate run (no manifest.json); continue it with "
            f"`curate run RECIPE --output {spec} --resume`"
        )
    if (path / "manifest.json").is_file():
        from curate.manifest import read as read_manifest
        from curate.progress import funnel_table
        from curate.report.terminal import qdc_tables

        manifest = read_manifest((path / "manifest.json").read_bytes(), str(path / "manifest.json"))
        out.append(funnel_table(manifest))
        out.extend(qdc_tables(manifest))
        path = path / "data"
        spec = str(path)
    sources = discover(spec)
    con = duckdb.connect()
    if all(s.format == "parquet" for s in sources):
        files = [s.path for s in sources]
        try:
            rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            schema = pq.read_schema(files[0])
        except Exception as e:
            raise CurateError(f"{spec}: not readable as Parquet: {e}") from None
        con.read_parquet(files, union_by_name=True).create_view("data")
        note = ""
    else:
        table, unparseable = _read_all(sources)
        rows, schema = table.num_rows, table.schema
        con.register("data", table)
        note = f"; {unparseable:,} lines could not be parsed" if unparseable else ""
    schema_table = Table(title=f"{spec}: {count(rows, 'row')} in {count(len(sources), 'file')}{note}")
    schema_table.add_column("column")
    schema_table.add_column("type")
    for f in schema:
        schema_table.add_row(f.name, str(f.type))
    out.append(schema_table)
    out.append(_summary(con, rows))
    return out


def _read_all(sources) -> tuple:
    """Every row of `sources` as curate's readers give them, and the number of unparseable rows."""
    import pyarrow as pa

    from curate.io.readers import read_source

    tables, unparseable = [], 0
    for source in sources:
        batches = []
        for batch, bad in read_source(source):
            unparseable += len(bad) if bad is not None else 0
            if batch is not None and batch.num_rows:
                batches.append(batch)
        if batches:
            tables.append(pa.Table.from_batches(batches))
    if not tables:
        raise CurateError(f"{sources[0].path}: no rows could be read")
    return pa.concat_tables(tables, promote_options="permissive"), unparseable


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _summary(con, rows: int) -> Table:
    summary = con.sql("SUMMARIZE data").fetchall()
    exact = rows <= EXACT_DISTINCT_ROWS
    if exact:
        counts = ", ".join(f"count(DISTINCT {_quoted(r[0])})" for r in summary)
        distinct = con.execute(f"SELECT {counts} FROM data").fetchone()
    else:
        distinct = [r[4] for r in summary]  # approx_unique
    table = Table(title="per-column summary")
    for col in ("column", "type", "min", "max", "distinct" if exact else "distinct (estimate)", "mean", "null %"):
        table.add_column(col)

    def clip(v) -> str:
        return (str(v)[:40] + "...") if v is not None and len(str(v)) > 40 else ("" if v is None else str(v))

    # r: column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage
    for r, n in zip(summary, distinct):
        table.add_row(r[0], r[1], clip(r[2]), clip(r[3]), f"{n:,}", clip(r[5]), f"{float(r[11]):.1f}")
    return table
