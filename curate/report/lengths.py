"""Lengths of the input vs the output (characters, and tokens where a step counted them), and
bytes and tokens in and out.

The input is what the trace and the output hold together: every row read is either kept (data/)
or removed by one step (trace/, as that step saw it). Lengths are counted per bin by DuckDB, the
bins a fixed logarithmic grid (BINS_PER_OCTAVE per doubling), so a histogram is a few hundred
numbers whatever the number of rows and needs no first pass for its range.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

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
    if pa.types.is_string(run.data_columns.get(text, pa.null())) or any(
        pa.types.is_string(c.get(text, pa.null())) for c in run.trace_columns.values()
    ):
        found.append(("characters", text, f"length({ident(text)})"))
    return found + token_measures(run)


@dataclass
class Side:
    """A side (the output, or the rows removed) of a measure: rows per bin, its sum, and the UTF-8
    bytes of the text (characters only)."""

    bins: dict[int, int] = field(default_factory=dict)
    total: int = 0
    bytes: int = 0

    def add(self, found: list[tuple]) -> None:
        for b, n, total, size in found:
            self.bins[b] = self.bins.get(b, 0) + n
            self.total += int(total or 0)
            self.bytes += int(size or 0)


def count(run: Run, column: str, expr: str, text_bytes: bool = False) -> dict[str, Side]:
    """{"output": Side, "removed": Side} of `expr` (and the UTF-8 bytes of `column`, a string
    column, with `text_bytes`), in one pass over each file (rows without `column` left out)."""
    size = f"strlen({ident(column)})" if text_bytes else "0"
    query = f"{_bin(expr)} AS b, count(*), sum({expr}), sum({size})"
    out = {"output": Side(), "removed": Side()}
    if column in run.data_columns:
        out["output"].add(run.data_sql(query, tail="GROUP BY b"))
    for step, columns in run.trace_columns.items():
        if column in columns:
            out["removed"].add(run.trace_sql(step, query, tail="GROUP BY b"))
    return out


def _figure(go, label: str, key: str, counts: dict[str, Side]) -> str:
    fig = go.Figure()
    found = [b for b in set(counts["output"].bins) | set(counts["removed"].bins) if b >= 0]  # empty texts: in the table
    bins = list(range(min(found), max(found) + 1))  # every bin between, so a gap is drawn as zero
    x = [bin_edges(b)[0] for b in bins]
    inputs = [counts["output"].bins.get(b, 0) + counts["removed"].bins.get(b, 0) for b in bins]
    for name, y, color in (
        ("input (kept + removed)", inputs, "#888"),
        ("output", [counts["output"].bins.get(b, 0) for b in bins], "#1f77b4"),
    ):
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines", line=dict(shape="hv", color=color), fill="tozeroy"))
    fig.update_layout(
        title=f"{label} per row: input vs output",
        xaxis=dict(type="log", title=f"{label} (log scale)"),
        yaxis_title="rows",
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
    )
    return f'<div class="hist">{figure(fig, f"lengths-{key}", 320)}</div>'


def render(go, run: Run) -> str:
    m = run.manifest
    rows = [
        ["files (bytes on disk)", sum(i.bytes or 0 for i in m.inputs), sum(o.bytes for o in m.outputs)],
        ["rows", m.rows_in, m.rows_out],
    ]
    figs = []
    for n, (label, column, expr) in enumerate(measures(run)):
        counts = count(run, column, expr, text_bytes=label == "characters")
        out, gone = counts["output"], counts["removed"]
        if len({b for side in (out, gone) for b in side.bins if b >= 0}) > 1:  # one bin: nothing to see
            figs.append(_figure(go, label, "chars" if label == "characters" else f"tokens-{n}", counts))
        if out.bins.get(-1, 0) + gone.bins.get(-1, 0):
            rows.append([f"rows with no {label}", out.bins.get(-1, 0) + gone.bins.get(-1, 0), out.bins.get(-1, 0)])
        if label == "characters":
            rows.append([f"text bytes ({column}, UTF-8)", out.bytes + gone.bytes, out.bytes])
        rows.append([label if label == "characters" else f"{label} (rows counted)", out.total + gone.total, out.total])
    note = (
        "<p>In: every row read (kept, or removed by a step as the trace holds it); out: the output. Tokens "
        "are those the counting step saw, so rows removed before it have none.</p>"
    )
    body = table(["", "in", "out"], rows, numeric={1, 2}) + note + "".join(figs)
    column = html.escape(repr(run.text_column))
    if not any(label == "characters" for label, _, _ in measures(run)):
        body += (
            f"<p>No characters counted: the text column {column} is not a string column of the output or the trace.</p>"
        )
    elif not figs:
        body += f"<p>No length to draw: the text column {column} has one length bin.</p>"
    return section("lengths", "Lengths, bytes and tokens: input vs output", body)
