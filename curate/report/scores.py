"""A histogram of every score column (quality_*, complexity_*, diversity_*) of the output, over the
input's where the first dataset_metrics measured it. Counted per bin by DuckDB (a range, then
counts), never the column's values in memory; a score of one value (or none) is left out."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from curate.report import qdc
from curate.report.parts import figure, section
from curate.report.scan import Run, ident

SCORE = re.compile(r"^(quality|complexity|diversity)_")
BINS = 30


def columns(run: Run) -> list[str]:
    return [
        n for n, t in run.data_columns.items() if SCORE.match(n) and (pa.types.is_integer(t) or pa.types.is_floating(t))
    ]


def output_histogram(run: Run, column: str, edges: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(counts, edges) of the column's finite values: on `edges` (the input's) where they are equal
    bins holding every value, else on BINS bins of its range; None when it holds one value or none."""
    v = f"CAST({ident(column)} AS DOUBLE)"
    lo, hi = run.data_sql(f"min({v}), max({v})", where=f"WHERE isfinite({v})")[0]
    if lo is None or lo == hi:
        return None
    uniform = edges is not None and len(edges) > 1 and np.allclose(np.diff(edges), edges[1] - edges[0])
    if edges is None or not (uniform and lo >= edges[0] and hi <= edges[-1]):
        edges = np.linspace(lo, hi, BINS + 1)
    n, width = len(edges) - 1, float(edges[1] - edges[0])
    counts = np.zeros(n, dtype=np.int64)
    for b, c in run.data_sql(
        f"least(greatest(floor(({v} - {float(edges[0])!r}) / {width!r}), 0), {n - 1})::BIGINT AS b, count(*)",
        where=f"WHERE isfinite({v})",
        tail="GROUP BY b",
    ):
        counts[b] = c
    return counts, edges


def render(go, run: Run) -> str:
    before = qdc.histograms_before(run.manifest)
    figs: list[str] = []
    for name in sorted(set(columns(run)) | set(before)):
        fig = go.Figure()
        edges = None
        drawn = 0
        if name in before:
            b = before[name]["histogram"]
            edges = np.asarray(b["edges"])
            drawn += sum(1 for c in b["counts"] if c) > 1
            fig.add_trace(
                go.Bar(
                    x=(edges[:-1] + edges[1:]) / 2,
                    y=b["counts"],
                    width=np.diff(edges),
                    name="input (first dataset_metrics)",
                    opacity=0.5,
                    marker_color="#888",
                )
            )
        after = output_histogram(run, name, edges) if name in run.data_columns else None
        if after is not None:
            counts, e = after
            drawn += 1
            fig.add_trace(
                go.Bar(
                    x=(e[:-1] + e[1:]) / 2,
                    y=counts,
                    width=np.diff(e),
                    name="output",
                    opacity=0.7,
                    marker_color="#1f77b4",
                )
            )
        if not drawn:  # constant or empty on both sides: nothing to see
            continue
        fig.update_layout(title=name, barmode="overlay", bargap=0, xaxis_title=name, yaxis_title="rows")
        figs.append(f'<div class="hist">{figure(fig, f"hist-{len(figs)}", 300)}</div>')
    if not figs:
        return section(
            "histograms",
            "Score histograms",
            "<p>The output has no quality_*, complexity_* or diversity_* column that varies.</p>",
        )
    return section("histograms", "Score histograms", "".join(figs))
