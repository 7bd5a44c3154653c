"""Rows kept and removed per source: per input file (from the `_id`s curate derives from the file's
name, see curate/io/readers.py; with input.id_column, from the input files' ids read again),
per hive partition, and per a column the user names (or the
domain of the URL it holds: `curate report --by COLUMN` / `--by-domain COLUMN`).

One DuckDB aggregation per grouping over the output and every trace: the TOP sources with the
most rows, the rest summed as one row, so the table is bounded whatever the number of sources.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import PurePath

import xxhash

from curate.errors import CurateError
from curate.manifest import Manifest
from curate.report.parts import figure, section, table
from curate.report.scan import Run, files, ident, quote, recipe_input

TOP = 25
OTHERS = "(all other sources)"
NONE = "(none)"
URL_HOST = r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#]+)"


@dataclass(frozen=True)
class Grouping:
    """How rows are attributed to sources: `key(columns, id_column)` is a SQL expression over a
    row's columns (`columns`: those the row has) and its `_id` (named `id_column`)."""

    title: str
    kind: str  # file | file_by_id | partition | column | domain
    columns: tuple[str, ...] = ()
    ids: str = ""  # file_by_id: SQL giving (i, f), each input id and the input file holding it

    def key(self, present: set[str], id_column: str) -> str:
        if self.kind == "file":
            return f"split_part({id_column}, ':', 1)"
        if self.kind == "file_by_id":
            return f"(SELECT ids.f FROM ids WHERE ids.i = {id_column})"
        values = [f"CAST({ident(c)} AS VARCHAR)" if c in present else "NULL" for c in self.columns]
        if self.kind == "partition":
            return (
                "concat_ws(', ', "
                + ", ".join(f"{quote(c + '=')} || coalesce({v}, '?')" for c, v in zip(self.columns, values))
                + ")"
            )
        if self.kind == "domain":
            return f"nullif(lower(regexp_extract({values[0]}, {quote(URL_HOST)}, 1)), '')"
        return values[0]


def groupings(run: Run, by: str | None = None, by_domain: str | None = None) -> list[Grouping]:
    """By input file where the `_id`s are curate's own, by hive partition where the input has one,
    and by the column the user chose."""
    out = []
    inputs = run.manifest.inputs
    if inputs and not recipe_input(run.manifest).get("id_column"):
        out.append(Grouping("by input file", "file"))
    elif inputs and (ids := input_ids(run.manifest)):
        out.append(Grouping("by input file", "file_by_id", ids=ids))
    keys = list(dict.fromkeys(k for i in inputs for k, _ in _partition(i.path)))
    if keys:
        out.append(Grouping(f"by hive partition ({', '.join(keys)})", "partition", tuple(keys)))
    for option, column in (("--by", by), ("--by-domain", by_domain)):
        if column and column not in run.data_columns and not any(column in c for c in run.trace_columns.values()):
            known = sorted(set(run.data_columns) | {c for cs in run.trace_columns.values() for c in cs})
            raise CurateError(
                f"{option}: no column {column!r} in {run.root}'s output or trace; columns are: {', '.join(known)}"
            )
    if by:
        out.append(Grouping(f"by column {by}", "column", (by,)))
    if by_domain:
        out.append(Grouping(f"by the domain of the URL in {by_domain}", "domain", (by_domain,)))
    return out


ID_SCAN_BYTES = 4 << 30  # inputs read again for their ids (input.id_column) up to this size


def input_ids(manifest: Manifest) -> str | None:
    """With input.id_column the `_id`s are the input's own and name no file: SQL reading the id
    column of every input file again (a column of a local Parquet, JSONL or CSV input, the files
    unchanged since the run and ID_SCAN_BYTES at most in all) as (i: the id, f: its file); None
    where that cannot be read."""
    spec = recipe_input(manifest)
    column, inputs = spec.get("id_column"), manifest.inputs
    if not column or sum(i.bytes or 0 for i in inputs) > ID_SCAN_BYTES:
        return None
    for i in inputs:
        try:
            if os.path.getsize(i.path) != i.bytes:
                return None
        except (OSError, TypeError):  # gone, or not a local path (a store's)
            return None
    paths = "[" + ", ".join(quote(i.path) for i in inputs) + "]"
    names = [i.path.lower() for i in inputs]
    fmt = spec.get("format")
    if fmt == "parquet" or (fmt is None and all(".parquet" in n for n in names)):
        scan = f"SELECT CAST({ident(column)} AS VARCHAR) AS i, filename AS f FROM read_parquet({paths}, filename=true)"
    elif fmt == "jsonl" or (fmt is None and all(".json" in n for n in names)):
        scan = (
            f"SELECT {ident(column)} AS i, filename AS f FROM read_json({paths}, format='newline_delimited', "
            f"columns={{{quote(column)}: 'VARCHAR'}}, filename=true, ignore_errors=true)"
        )
    elif fmt == "csv" or (fmt is None and all(".csv" in n for n in names)):
        scan = f"SELECT {ident(column)} AS i, filename AS f FROM read_csv({paths}, all_varchar=true, filename=true)"
    else:
        return None
    return f"SELECT i, any_value(f) AS f FROM ({scan}) GROUP BY i"


def _partition(path: str) -> list[tuple[str, ...]]:  # (key, value) pairs
    return [tuple(p.split("=", 1)) for p in PurePath(path).parent.parts if "=" in p and not p.startswith("=")]


def file_names(manifest: Manifest, prefixes: set[str]) -> dict[str, str]:
    """Each of `prefixes` that is the `_id` prefix of an input file -> that file's path (below the
    inputs' common directory). A file's `_id`s are xxh3(its path relative to the input's base)[:12];
    the base is not in the manifest, so every tail of the path is hashed (one of them is that
    relative path), the first file a prefix names kept. Only the prefixes asked for are kept: the
    report names its TOP sources, and a map of every tail of every file held 1.4 MB at 1,000 files
    of 9 path parts (the benchmark's)."""
    paths = [i.path for i in manifest.inputs]
    if not paths:
        return {}
    common = os.path.commonpath([os.path.dirname(p) for p in paths])
    out: dict[str, str] = {}
    for p in paths:
        parts = PurePath(p).parts
        for k in range(1, len(parts) + 1):
            prefix = xxhash.xxh3_64_hexdigest(PurePath(*parts[-k:]).as_posix().encode())[:12]
            if prefix in prefixes and prefix not in out:
                out[prefix] = os.path.relpath(p, common)
    return out


def _relative(manifest: Manifest) -> dict[str, str]:
    """Each input file's path -> its path below the inputs' common directory (as file_names)."""
    paths = [i.path for i in manifest.inputs]
    common = os.path.commonpath([os.path.dirname(p) for p in paths]) if paths else ""
    return {p: os.path.relpath(p, common) for p in paths}


def counts(run: Run, grouping: Grouping) -> list[tuple[str, str | None, int]]:
    """(source, step, rows): the output's rows (step None) and each step's removed rows of the TOP
    sources with most rows in; the others' under OTHERS."""
    parts = []
    if run.data:
        key = grouping.key(set(run.data_columns), "_id")
        parts.append(f"SELECT {key} AS k, NULL AS step FROM {files(run.data)}")
    for step, columns in run.trace_columns.items():
        trace = f"read_parquet({quote(run.traces[step])}) t"
        if grouping.kind in ("file", "file_by_id"):  # the trace's own _id column
            parts.append(f"SELECT {grouping.key(set(), 't._id')} AS k, {quote(step)} AS step FROM {trace}")
            continue
        # the traced row's fields the grouping reads, as columns (the others are NULL in its key)
        fields = ", ".join(f"t.row.{ident(c)} AS {ident(c)}" for c in grouping.columns if c in columns)
        parts.append(
            f"SELECT {grouping.key(set(columns), '_id')} AS k, {quote(step)} AS step "
            f"FROM (SELECT {fields or 'NULL AS _none'} FROM {trace})"
        )
    if not parts:
        return []
    union = " UNION ALL ".join(parts)
    ids = f"ids AS ({grouping.ids})," if grouping.kind == "file_by_id" else ""
    return run.sql(f"""
        WITH {ids} r AS (SELECT coalesce(k, {quote(NONE)}) AS k, step FROM ({union})),
             top AS (SELECT k FROM r GROUP BY k ORDER BY count(*) DESC, k LIMIT {TOP})
        SELECT coalesce(top.k, {quote(OTHERS)}) AS source, r.step, count(*)
        FROM r LEFT JOIN top ON r.k = top.k GROUP BY ALL""")


def rows(run: Run, grouping: Grouping) -> list[list]:
    """Table rows: source, rows in, kept, removed, % kept, the steps that removed most."""
    counted = counts(run, grouping)
    names = (
        file_names(run.manifest, {source for source, _, _ in counted})
        if grouping.kind == "file"
        else _relative(run.manifest)
        if grouping.kind == "file_by_id"
        else {}
    )
    per: dict[str, dict] = {}
    for source, step, n in counted:
        entry = per.setdefault(names.get(source, source), {"kept": 0, "removed": {}})
        if step is None:
            entry["kept"] += n
        else:
            entry["removed"][step] = entry["removed"].get(step, 0) + n
    out = []
    for source, e in per.items():
        removed = sum(e["removed"].values())
        total = e["kept"] + removed
        by = ", ".join(f"{s} {n:,}" for s, n in sorted(e["removed"].items(), key=lambda kv: -kv[1])[:3])
        out.append([source, total, e["kept"], removed, f"{100 * e['kept'] / max(total, 1):.1f}%", by])
    out.sort(key=lambda r: (r[0] == OTHERS, -r[1], r[0]))
    return out


def _figure(go, title: str, key: str, table_rows: list[list]) -> str:
    names = [r[0] for r in table_rows]
    fig = go.Figure(
        [
            go.Bar(y=names, x=[r[2] for r in table_rows], name="kept", orientation="h", marker_color="#1f77b4"),
            go.Bar(y=names, x=[r[3] for r in table_rows], name="removed", orientation="h", marker_color="#d62728"),
        ]
    )
    fig.update_layout(
        title=f"rows kept and removed {title}",
        barmode="stack",
        yaxis=dict(autorange="reversed"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
    )
    return figure(fig, f"sources-{key}", 120 + 24 * len(names))


def render(go, run: Run, by: str | None = None, by_domain: str | None = None) -> str:
    parts = []
    for n, g in enumerate(groupings(run, by, by_domain)):
        table_rows = rows(run, g)
        if not table_rows:
            continue
        header = ["source", "rows in", "kept", "removed", "kept %", "removed most by"]
        parts.append(
            f"<h3>{html.escape(g.title)}</h3>"
            f"{table(header, table_rows, numeric={1, 2, 3, 4}, css='sources')}"
            f"{_figure(go, g.title, str(n), table_rows) if len(table_rows) > 1 else ''}"
        )
    if not parts:
        return section(
            "sources",
            "Sources",
            "<p>No source to tell rows apart by: the input's ids are its own "
            "(input.id_column), its files could not be read again for them (gone or changed since "
            "the run, on a store, over 4 GB, or of a format other than Parquet, JSONL and CSV), and "
            "it has no hive partition; <code>curate report --by COLUMN</code> "
            "(or <code>--by-domain URL_COLUMN</code>) groups by a column.</p>",
        )
    note = (
        "<p>Rows in: kept plus removed (after a step that splits rows, such as <code>chunk</code>, its "
        "children count).</p>"
    )
    return section("sources", "Sources: rows kept and removed", note + "".join(parts))
