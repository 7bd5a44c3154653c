"""report.html: a finished run in one file that needs no network: the funnel, lengths and bytes
and tokens in vs out (lengths.py), rows kept and removed per source (sources.py), timings,
removal reasons with sample rows, kept rows beside removed ones (kept_removed.py), duplicate
clusters (duplicates.py), QDC before and after, score histograms (scores.py), cluster tables of
pruning steps and step summaries as tables (summaries.py).

Figures are Plotly's (plotly.js is inlined once, vendored); everything drawn is aggregated first
(histograms are counts per bin, tables are bounded, samples a few rows), so the file's size
depends on the number of steps and columns, not of rows. Reading is bounded too: aggregations
run in DuckDB over the Parquet files (scan.py), and samples read at most SAMPLE_SCAN trace rows
per step or a file's first batch.
"""

from __future__ import annotations

import html
import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from curate.engine.failpoints import failpoint
from curate.errors import CurateError
from curate.manifest import Manifest, build as build_manifest, read as read_manifest
from curate.report import duplicates, kept_removed, lengths, qdc, scores, sources, summaries
from curate.report.parts import clip, figure, table
from curate.report.scan import Run, first_of_each, recipe_input, rows_at

ASSETS = Path(__file__).parent / "assets"
SAMPLES_PER_REASON = 3
SAMPLE_SCAN = 50_000
CLUSTER_ROWS = 50


def write_report(run_dir: Path, by: str | None = None, by_domain: str | None = None) -> Path:
    """report.html of a finished run; `by` / `by_domain`: a column to break rows kept and removed
    down by (its value / the domain of the URL it holds), beside input files and partitions; each
    one not given is the recipe's (`report:`, kept in the manifest), if it names one."""
    run_dir = Path(run_dir)
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.is_file():
        raise CurateError(
            f"{run_dir} is not a finished run: it has no manifest.json (run `curate run` to the end, or --resume it)"
        )
    manifest = read_manifest(manifest_path.read_bytes(), str(manifest_path))
    target = run_dir / "report.html"
    tmp = run_dir / "report.html.tmp"
    with system_pool():
        page = render(manifest, Run.open(run_dir, manifest), by, by_domain)
    tmp.write_text(page, encoding="utf-8")
    failpoint("report")
    tmp.replace(target)
    return target


def write_staged(content: dict, root: str, data: Path, trace: Path, target: Path) -> None:
    """The report of a run whose output is on a store, at `root`, from its files as staged locally
    (`data`, `trace`) before they were uploaded, with the manifest about to be written (`content`,
    read through its model): written to `target`, the same page its local run's report is."""
    manifest = build_manifest(content)
    with system_pool():
        page = render(manifest, Run.open(root, manifest, data, trace))
    target.write_text(page, encoding="utf-8")


@contextmanager
def system_pool() -> Iterator[None]:
    """Arrow's buffers from the C library's malloc while the report reads, then the pool before
    back. pyarrow's default pool, mimalloc, kept the pages of what the report decoded (a step's
    sample rows, 64 at a time, their pages of text): 10 MB at a time in a step's trace of 250
    pages, so the report's peak grew with the trace's rows (fineweb on 1,000 WARC files vs 10,
    curate report alone: +24 MB; with malloc +8 MB). The report's reads are few and bounded: the
    allocator's speed does not matter here. A `curate run` writes its report in its own process
    once the run is done: its run is unaffected."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def render(manifest: Manifest, run: Run, by: str | None = None, by_domain: str | None = None) -> str:
    """The page of `run`; `by` / `by_domain` not given: the recipe's (`report:`, kept in the manifest)."""
    import plotly.graph_objects as go

    if manifest.report is not None:
        by, by_domain = by or manifest.report.by, by_domain or manifest.report.by_domain
    sections = [
        _header(manifest),
        _funnel(go, manifest),
        lengths.render(go, run),
        sources.render(go, run, by, by_domain),
        _timings(go, manifest),
        _reasons(manifest, run),
        kept_removed.render(run),
        duplicates.render(go, run),
        _qdc(go, manifest),
        scores.render(go, run),
        _clusters(manifest),
        summaries.render(go, manifest),
    ]
    body = "\n".join(s for s in sections if s)
    title = html.escape(f"curate report: {manifest.name}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
        f'<style>{_CSS}</style>\n<script type="text/javascript">{plotly_js()}</script></head>\n'
        f"<body><h1>{title}</h1>\n{body}\n</body></html>\n"
    )


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:top;font-size:13px}th{background:#f3f3f3}td.num{text-align:right}.sample{font-family:monospace;
white-space:pre-wrap;max-width:700px}section{margin-bottom:2em}.hist{display:inline-block;width:49%;
vertical-align:top}h4.fig-title{margin:.8em 0 0;font-size:14px;font-weight:600}"""


def plotly_js() -> str:
    """plotly.js's basic bundle (bar, scatter, pie), vendored: see assets/README.md."""
    from plotly.offline import get_plotlyjs_version

    js = (ASSETS / "plotly-basic.min.js").read_text(encoding="utf-8")
    if f"v{get_plotlyjs_version()}" not in js[:200]:
        raise CurateError(
            f"report: the vendored plotly.js is not version {get_plotlyjs_version()}, the one the "
            f"installed plotly package writes figures for (see {ASSETS / 'README.md'})"
        )
    return js


def _header(m: Manifest) -> str:
    rows: list[list] = [
        ["rows in", m.rows_in],
        ["rows out", m.rows_out],
        ["seconds", m.seconds],
        ["data files", m.data_files],
        ["recipe fingerprint", m.recipe_fingerprint],
        ["seed", m.seed],
        ["report written", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())],
    ]
    return f'<section id="summary"><h2>Run</h2>{table(["", ""], rows)}</section>'


def _funnel(go, m: Manifest) -> str:
    steps = m.steps
    first = max(steps[0].rows_out, 1) if steps else 1
    # A funnel drawn with centred horizontal bars (the basic plotly.js bundle has no funnel trace).
    fig = go.Figure(
        go.Bar(
            y=[s.step for s in steps],
            x=[s.rows_out for s in steps],
            orientation="h",
            base=[-s.rows_out / 2 for s in steps],
            marker_color="#1f77b4",
            text=[f"{s.rows_out:,} ({100 * s.rows_out / first:.1f}%)" for s in steps],
            textposition="inside",
            insidetextanchor="middle",
            hoverinfo="text+y",
        )
    )
    fig.update_layout(
        title="rows after each step", yaxis=dict(autorange="reversed"), xaxis=dict(showticklabels=False, zeroline=False)
    )
    return f'<section id="funnel"><h2>Funnel</h2>{figure(fig, "funnel", 120 + 40 * len(steps))}</section>'


def _timings(go, m: Manifest) -> str:
    steps = m.steps
    fig = go.Figure(go.Bar(x=[s.seconds for s in steps], y=[s.step for s in steps], orientation="h"))
    fig.update_layout(
        title="seconds per step (summed over workers; a global step includes its fit)", yaxis=dict(autorange="reversed")
    )
    return f'<section id="timings"><h2>Timings</h2>{figure(fig, "timings", 120 + 30 * len(steps))}</section>'


def _text_field(row: dict | None, text_column: str) -> str:
    if not row:
        return ""
    value = row.get(text_column)
    if not isinstance(value, str):
        value = next((v for v in row.values() if isinstance(v, str) and len(v) > 20), json.dumps(row, default=str))
    return clip(value)


def _samples(path: Path, text_column: str) -> dict[str, list[tuple[str, str, str]]]:
    """A few (id, detail, text) per reason, from the first SAMPLE_SCAN rows of a step's trace."""
    columns = [c for c in ("_id", "reason", "detail", "row") if c in pq.ParquetFile(path).schema_arrow.names]
    chosen = first_of_each(path, SAMPLES_PER_REASON, SAMPLE_SCAN)
    rows = rows_at(path, [p for ps in chosen.values() for p in ps], columns)
    return {
        reason: [
            (rows[p].get("_id", ""), rows[p].get("detail", ""), _text_field(rows[p].get("row"), text_column))
            for p in ps
        ]
        for reason, ps in chosen.items()
    }


def _reasons(m: Manifest, run: Run) -> str:
    text_column = recipe_input(m).get("text_column", "text")
    parts = []
    for s in m.steps:
        if not s.reasons:
            continue
        path = run.traces.get(s.step)
        samples = _samples(path, text_column) if path is not None else {}
        rows: list[list] = []
        for reason, count in sorted(s.reasons.items(), key=lambda kv: -kv[1]):
            examples = samples.get(reason, [])
            rows.append([reason, count, f"{100 * count / max(s.rows_in, 1):.1f}%"])
            parts_html = "".join(
                f'<tr><td></td><td colspan="2" class="sample">{html.escape(str(i))} — '
                f"{html.escape(str(d or ''))}\n{html.escape(t)}</td></tr>"
                for i, d, t in examples
            )
            rows[-1].append(parts_html)
        reasons_table = (
            "<table><tr><th>reason</th><th>rows</th><th>of step input</th></tr>"
            + "".join(
                f'<tr><td>{html.escape(r)}</td><td class="num">{c:,}</td><td class="num">{p}</td></tr>{ex}'
                for r, c, p, ex in rows
            )
            + "</table>"
        )
        parts.append(f"<h3>{html.escape(s.step)}</h3>{reasons_table}")
    if not parts:
        return '<section id="reasons"><h2>Removal reasons</h2><p>No row was removed.</p></section>'
    return (
        '<section id="reasons"><h2>Removal reasons (with sample rows from the trace)</h2>'
        + "".join(parts)
        + "</section>"
    )


def _qdc(go, m: Manifest) -> str:
    from plotly.subplots import make_subplots

    blocks = []
    for n, c in enumerate(qdc.comparisons(m)):
        metrics = qdc.metric_names(c)
        if not metrics:
            continue
        before, after = c.labels
        rows = [[k, c.before.get(k), c.after.get(k)] for k in metrics]
        header = ["metric", before] + ([after] if after else [])
        metrics_table = table(header, [r[: len(header)] for r in rows], numeric={1, 2})
        cols = min(len(metrics), 5)
        fig = make_subplots(rows=-(-len(metrics) // cols), cols=cols, subplot_titles=metrics)
        for i, k in enumerate(metrics):
            names = [before] + ([after] if after else [])
            values = [c.before.get(k)] + ([c.after.get(k)] if after else [])
            fig.add_trace(
                go.Bar(
                    x=["before", "after"][: len(values)],
                    y=values,
                    marker_color=["#888", "#1f77b4"],
                    hovertext=names,
                    showlegend=False,
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
        blocks.append(
            f"<h3>{html.escape(c.title)}</h3>{metrics_table}"
            f"{figure(fig, f'qdc-{n}', 220 * (-(-len(metrics) // cols)) + 60)}"
        )
    if not blocks:
        return (
            '<section id="qdc"><h2>Quality, diversity, complexity</h2><p>No dataset metrics in this run: '
            "add <code>metrics: true</code> to the recipe to measure its input and output, or dataset_metrics "
            "steps where the recipe should be measured.</p></section>"
        )
    return (
        '<section id="qdc"><h2>Quality, diversity, complexity: before and after</h2>' + "".join(blocks) + "</section>"
    )


def _clusters(m: Manifest) -> str:
    """Per-cluster tables of pruning steps (tables in their summaries: lists of rows or dicts of
    columns), their first CLUSTER_ROWS rows."""
    parts = []
    for s in m.steps:
        summary = s.summary
        if not isinstance(summary, dict):
            continue
        for key, value in summary.items():
            if (
                isinstance(value, dict)
                and value
                and all(isinstance(v, list) for v in value.values())
                and len({len(v) for v in value.values()}) == 1
            ):  # columns, e.g. density_prune's clusters
                value = [dict(zip(value, r)) for r in zip(*value.values())]
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                header = list(value[0])
                rows = [[r.get(h) for h in header] for r in value[:CLUSTER_ROWS]]
                more = f"<p>first {CLUSTER_ROWS} of {len(value):,}</p>" if len(value) > CLUSTER_ROWS else ""
                parts.append(
                    f"<h3>{html.escape(s.step)}: {html.escape(key)}</h3>"
                    f"{table(header, rows, numeric=set(range(len(header))))}{more}"
                )
    if not parts:
        return ""
    return '<section id="clusters"><h2>Clusters of pruning steps</h2>' + "".join(parts) + "</section>"
