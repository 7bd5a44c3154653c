"""Progress bars (rows and rows/s per step) while a run goes, and the funnel table after it."""

from __future__ import annotations

from rich.console import Console
from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from curate.engine.runner import Reporter, RunOptions, run
from curate.recipe import Recipe


class _RowsPerSecond(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} rows/s" if speed else "", style="cyan")


class _Rows(ProgressColumn):
    def render(self, task) -> Text:
        return Text(f"{int(task.completed):,} rows in, {int(task.fields.get('kept', 0)):,} kept")


def run_with_progress(recipe: Recipe, opts: RunOptions, console: Console) -> dict:
    progress = Progress(SpinnerColumn(), TextColumn("{task.description:<28}"), _Rows(), _RowsPerSecond(),
                        TimeElapsedColumn(), console=console, transient=False, disable=not console.is_terminal)
    bars: dict[str, int] = {}

    def rows(label: str, rows_in: int, rows_out: int) -> None:
        if label not in bars:
            bars[label] = progress.add_task(label, total=None, kept=0)
        task = progress._tasks[bars[label]]
        progress.update(bars[label], advance=rows_in, kept=task.fields["kept"] + rows_out)

    def status(message: str) -> None:
        progress.console.log(message) if console.is_terminal else console.print(message)

    with progress:
        return run(recipe, opts, Reporter(rows=rows, status=status))


def funnel_table(manifest: dict) -> Table:
    table = Table(title=f"{manifest['name']}: {manifest['rows_in']:,} rows in, {manifest['rows_out']:,} out")
    table.add_column("step", no_wrap=True)
    for col in ("in", "out", "removed", "%", "seconds"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("top reasons", overflow="fold")
    for s in manifest["steps"]:
        reasons = sorted(s["reasons"].items(), key=lambda kv: -kv[1])[:2]
        share = 100 * s["removed"] / s["rows_in"] if s["rows_in"] else 0.0
        table.add_row(s["step"], f"{s['rows_in']:,}", f"{s['rows_out']:,}", f"{s['removed']:,}", f"{share:.1f}",
                      f"{s['seconds']:.2f}", ", ".join(f"{k} ({v:,})" for k, v in reasons))
    return table
