"""Lengths of the input vs the output (characters, and tokens where a step counted them), and
bytes and tokens in and out.

The input is what the trace and the output hold together: every row read is either kept (data/)
or removed by one step (trace/, as that step saw it). Lengths are counted per bin by DuckDB, the
bins a fixed logarithmic grid (BINS_PER_OCTAVE per doubling), so a histogram is a few hundred
numbers whatever the number of rows and needs no first pass for its range.
"""

from __future__ import annotations

import html

import pyarrow as pa

from curate.report.parts import figure, section, table
from curate.report.scan import Run, ident, recipe_steps

BINS_PER_OCTAVE = 4


def _bin(expr: str) -> str:
    """The bin of a length: -1 for 0 (or null), else floor(log2(n) * BINS_PER_OCTAVE)."""
    return f"CASE WHEN coalesce({expr}, 0) <= 0 THEN -1 ELSE floor(log2({expr}) * {BINS_PER_OCTAVE})::BIGINT END"


def bin_edges(b: int) -> tuple[float, float]:
    return (0.0, 1.0) if b < 0 else (2 ** (b / BINS_PER_OCTAVE), 2 ** ((b + 1) / BINS_PER_OCTAVE))


def token_measures(run: Run) -> list[tuple[str, str, str]]:
    """(label, column, SQL of a row's tokens) for each column a token_count or tokenize step wrote."""
    out = []
    for op, params in recipe_steps(run.manifest):
        if op == "token_count":
            column = params.get("column", "token_count")
            out.append((f"tokens ({column})", column, ident(column)))
        elif op == "tokenize":
            column = params.get("column", "input_ids")
            out.append((f"tokens ({column})", column, f"len({ident(column)})"))
    return list({c: (label, c, sql) for label, c, sql in out}.values())


def measures(run: Run) -> list[tuple[str, str, str]]:
    """(label, column, SQL of a row's length): characters of the text column, then token counts."""
    text = run.text_column
    found = []
    if pa.types.is_string(run.data_columns.get(text, pa.null())) or \
            any(pa.types.is_string(c.get(text, pa.null())) for c in run.trace_columns.values()):
        found.append(("characters", text, f"length({ident(text)})"))
    return found + token_measures(run)


def histogram(run: Run, column: str, expr: str) -> dict[str, dict[int, int]]:
    """{"output": {bin: rows}, "removed": {bin: rows}} of `expr` (rows without `column` left out)."""
    query = f"{_bin(expr)} AS b, count(*)"
    out = {"output": {}, "removed": {}}
    if column in run.data_columns:
        out["output"] = dict(run.data_sql(query, tail="GROUP BY b"))
    for step, columns in run.trace_columns.items():
        if column in columns:
            for b, n in run.trace_sql(step, query, tail="GROUP BY b"):
                out["removed"][b] = out["removed"].get(b, 0) + n
    return out


def totals(run: Run, column: str, expr: str) -> dict[str, int]:
    """Sum of `expr` over the output and over the removed rows."""
    out = {"output": 0, "removed": 0}
    if column in run.data_columns:
        out["output"] = int(run.data_sql(f"coalesce(sum({expr}), 0)")[0][0] or 0)
    for step, columns in run.trace_columns.items():
        if column in columns:
            out["removed"] += int(run.trace_sql(step, f"coalesce(sum({expr}), 0)")[0][0] or 0)
    return out


def _text_bytes(run: Run) -> dict[str, int]:
    text = run.text_column
    return totals(run, text, f"strlen({ident(text)})")


def _figure(go, label: str, key: str, counts: dict[str, dict[int, int]]) -> str:
    fig = go.Figure()
    found = [b for b in set(counts["output"]) | set(counts["removed"]) if b >= 0]  # empty texts: in the table
    bins = list(range(min(found), max(found) + 1))  # every bin between, so a gap is drawn as zero
    x = [bin_edges(b)[0] for b in bins]
    inputs = [counts["output"].get(b, 0) + counts["removed"].get(b, 0) for b in bins]
    for name, y, color in (("input (kept + removed)", inputs, "#888"),
                           ("output", [counts["output"].get(b, 0) for b in bins], "#1f77b4")):
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines", line=dict(shape="hv", color=color),
                                 fill="tozeroy"))
    fig.update_layout(title=f"{label} per row: input vs output", xaxis=dict(type="log", title=f"{label} (log scale)"),
                      yaxis_title="rows", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
    return f"<div class=\"hist\">{figure(fig, f'lengths-{key}', 320)}</div>"


def render(go, run: Run) -> str:
    m = run.manifest
    rows = [["files (bytes on disk)", sum(i.get("bytes", 0) for i in m.get("inputs", [])),
             sum(o.get("bytes", 0) for o in m.get("outputs", []))],
            ["rows", m.get("rows_in"), m.get("rows_out")]]
    figs = []
    for n, (label, column, expr) in enumerate(measures(run)):
        counts = histogram(run, column, expr)
        if len({b for side in counts.values() for b in side if b >= 0}) > 1:  # one bin: nothing to see
            figs.append(_figure(go, label, "chars" if label == "characters" else f"tokens-{n}", counts))
        empty = counts["output"].get(-1, 0) + counts["removed"].get(-1, 0)
        if empty:
            rows.append([f"rows with no {label}", empty, counts["output"].get(-1, 0)])
        if label == "characters":
            t = _text_bytes(run)
            rows.append([f"text bytes ({column}, UTF-8)", t["output"] + t["removed"], t["output"]])
        t = totals(run, column, expr)
        rows.append([f"{label}" + ("" if label == "characters" else " (rows counted)"),
                     t["output"] + t["removed"], t["output"]])
    note = ("<p>In: every row read (kept, or removed by a step as the trace holds it); out: the output. Tokens "
            "are those the counting step saw, so rows removed before it have none.</p>")
    body = table(["", "in", "out"], rows, numeric={1, 2}) + note + "".join(figs)
    column = html.escape(repr(run.text_column))
    if not any(label == "characters" for label, _, _ in measures(run)):
        body += (f"<p>No characters counted: the text column {column} is not a string column of the output "
                 f"or the trace.</p>")
    elif not figs:
        body += f"<p>No length to draw: the text column {column} has one length bin.</p>"
    return section("lengths", "Lengths, bytes and tokens: input vs output", body)
