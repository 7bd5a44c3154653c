"""QDC summaries of a run for the terminal (`curate inspect RUN_DIR`), from its manifest."""

from __future__ import annotations

from rich.table import Table

from curate.manifest import Manifest
from curate.report import qdc


def qdc_tables(manifest: Manifest) -> list[Table]:
    tables = []
    for c in qdc.comparisons(manifest):
        before, after = c.labels
        table = Table(title=c.title)
        table.add_column("metric")
        table.add_column(before, justify="right")
        if after:
            table.add_column(after, justify="right")
        for metric in qdc.metric_names(c):
            cells = [metric, _fmt(c.before.get(metric))] + ([_fmt(c.after.get(metric))] if after else [])
            table.add_row(*cells)
        tables.append(table)
    return tables


def _fmt(v) -> str:
    return "" if v is None else f"{v:,.4g}" if isinstance(v, float) else f"{v:,}"
