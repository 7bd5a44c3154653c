"""Progress bars (rows and rows/s per step; percent and ETA where the total is known; a stage's
tasks done, bytes read of its input and their rate, bytes written, and ETA) while a run goes, or
plain lines in a batch log, and the funnel table after it."""

from __future__ import annotations

import time

import pyarrow as pa
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from curate.engine.run.runner import Reporter, RunOptions, run
from curate.engine.tasks.context import READ_STEP
from curate.io.readers import parquet_rows
from curate.io.sources import Source, named_errors, open_parquet
from curate.io.store import map_objects
from curate.manifest import Manifest
from curate.ops import Global, Map
from curate.preflight import Preflight
from curate.recipe import Recipe
from curate.stage_progress import DEFAULT_INTERVAL, StageTracker, Ticker, bytes_text, duration, ended, plain_line
from curate.words import count


class _RowsPerSecond(ProgressColumn):
    def render(self, task) -> Text:
        if "tasks" in getattr(task, "fields", {}):
            return Text("")
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} rows/s" if speed else "", style="cyan")


class _Rows(ProgressColumn):
    def render(self, task) -> Text:
        if "tasks" in getattr(task, "fields", {}):  # a stage's bar
            return Text(task.fields["tasks"])
        return Text(f"{count(int(task.completed), 'row')} in, {int(task.fields.get('kept', 0)):,} kept")


class _Percent(ProgressColumn):
    def render(self, task) -> Text:
        return Text("" if task.total is None else f"{task.percentage:>3.0f}%")


class _Eta(TimeRemainingColumn):
    def render(self, task) -> Text:
        if "tasks" in getattr(task, "fields", {}):  # a stage's: from its tasks done and their input bytes
            return Text("" if task.fields.get("eta") is None else f"eta {task.fields['eta']}")
        return Text("" if task.total is None else f"eta {super().render(task)}")


def input_rows(sources: list[Source], limit: int | None, known: dict[Source, int] | None = None) -> int | None:
    """Rows the run will read, where file metadata tells without reading (Parquet footers, local
    Arrow streams); None otherwise (JSONL and CSV must be parsed to be counted, an Arrow stream in
    a store read whole). `known`: rows the preflight's checks read already (Preflight.rows);
    the other footers in a store are read many at once."""
    if not all(s.format == "parquet" or (s.format == "arrow_stream" and not s.is_uri) for s in sources):
        return None
    known = known or {}
    todo = [s for s in sources if s not in known]
    total = sum(known.get(s, 0) for s in sources) + sum(map_objects(_rows, todo, any(s.is_uri for s in todo)))
    return total if limit is None else min(total, limit)


def _rows(src: Source) -> int:
    if src.format == "arrow_stream":
        # batch headers only: the data is mapped, not read
        with named_errors(src.path, src.format), pa.memory_map(src.path) as mm:
            return sum(b.num_rows for b in pa.ipc.open_stream(mm))
    return parquet_rows(open_parquet(src.path, src.storage_options, src.size, src.version).metadata, src)


def _expected_rows(recipe: Recipe, read_total: int | None):
    """A function: step label -> rows it will get, where known when its bar appears, else None.

    The read step's total is the input's; a step after a Map that keeps every row gets what
    that Map got; a Global step gets every row the step before it kept, all counted by then
    because it starts only after the stage before it finished. After a Filter it is unknown
    until the stage ends."""
    labels = [READ_STEP] + [s.label for s in recipe.steps]
    expected: dict[str, int | None] = {READ_STEP: read_total}

    def rows_in(label: str, kept: dict[str, int]) -> int | None:
        if label not in expected:
            i = labels.index(label)
            step, before = recipe.steps[i - 1], recipe.steps[i - 2] if i >= 2 else None
            if issubclass(step.op_class, Global):
                expected[label] = kept.get(labels[i - 1], 0)
            elif before is None or (issubclass(before.op_class, Map) and not before.op_class.changes_rows):
                expected[label] = rows_in(labels[i - 1], kept)
            else:
                expected[label] = None
        return expected[label]

    return rows_in


def run_with_progress(
    recipe: Recipe,
    opts: RunOptions,
    console: Console,
    checked: list[Source] | Preflight | None = None,
    interval: float = DEFAULT_INTERVAL,
    source_rows: dict[Source, int] | None = None,
) -> Manifest:
    """Run with a bar per step and one per stage (tasks done, ETA) on a terminal; elsewhere (a
    batch log) a plain line every `interval` seconds. The input files (`checked`: the preflight's
    check of them, or the files) give the bars their totals where known (`source_rows`: those the
    preflight read, Preflight.rows); a resumed run has none, as its finished tasks report no rows.
    Returns what runner.run returns: the manifest, saying where the run went."""
    sources = checked.sources if isinstance(checked, Preflight) else checked
    terminal = console.is_terminal
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description:<28}"),
        BarColumn(bar_width=20),
        _Percent(),
        _Rows(),
        _RowsPerSecond(),
        TimeElapsedColumn(),
        _Eta(),
        console=console,
        transient=False,
        disable=not terminal,
    )
    known = sources is not None and not opts.resume
    expected = _expected_rows(
        recipe, input_rows(sources, opts.limit, source_rows) if known and sources is not None else None
    )
    bars: dict[str, TaskID] = {}
    kept: dict[str, int] = {}
    seen: dict[str, tuple[float, int]] = {}  # label -> (first rows at, rows in): the batch log's rate
    last: list[str] = []  # the label that got rows last
    stages = StageTracker()
    started = time.monotonic()

    def rows(label: str, rows_in: int, rows_out: int) -> None:
        if label not in bars:
            bars[label] = progress.add_task(label, total=expected(label, kept) if known else None, kept=0)
        kept[label] = kept.get(label, 0) + rows_out
        first, total = seen.get(label, (time.monotonic(), 0))
        seen[label] = (first, total + rows_in)
        last[:] = [label]
        progress.update(bars[label], advance=rows_in, kept=kept[label])

    def status(message: str) -> None:
        # printed, not console.log'ed: a log line carries no link to this source file
        console.print(Text.assemble((time.strftime("[%X] "), "log.time"), message) if terminal else message)

    def show(state: dict) -> None:
        label = f"stage {state['stage']}"
        if label not in bars:
            bars[label] = progress.add_task(label, total=100.0)
        eta = None if state["eta"] is None else duration(state["eta"])
        progress.update(
            bars[label],
            completed=state["percent"],
            tasks=f"{state['done']}/{count(state['tasks'], 'task')}, {bytes_text(state)}",
            eta=eta,
        )

    shown: list[dict] = []  # the stage bar shown last, as it was

    def stage_bar() -> None:
        state = stages.state()
        if state is None or "fitting" in state:  # the status line says so; the bars keep their end
            return
        if shown and shown[0]["stage"] != state["stage"]:  # the stage before ended: its bar says so
            show(ended(shown[0]))
        shown[:] = [state]
        show(state)

    def log_line(state: dict | None) -> None:
        label = last[0] if last else None
        first, total = seen.get(label, (0.0, 0)) if label is not None else (0.0, 0)
        rate = total / max(time.monotonic() - first, 1e-9) if label else 0.0
        console.print(plain_line(time.monotonic() - started, state, label, total, rate), markup=False, highlight=False)

    def stage_started(*args, **kwargs) -> None:
        # A stage shorter than the interval would never show: the batch log gets its end line
        # when the next one starts (its tasks are all done by then).
        stages.poll()
        before = stages.state()
        stages.start(*args, **kwargs)
        if before is not None and "fitting" not in before and not terminal:
            log_line(ended(before))

    def fitting(stage: int, label: str) -> None:
        stages.poll()
        before = stages.state()
        if before is not None and "fitting" not in before and not terminal:
            log_line(ended(before))  # as when a stage starts: the stage before gets its end line
        stages.fitting(stage, label)
        status(f"stage {stage}: fitting {label}")

    def tick() -> None:
        stages.poll()
        stage_bar() if terminal else log_line(stages.state())

    with progress:
        with Ticker(1.0 if terminal else interval, tick):
            reporter = Reporter(rows=rows, status=status, stage=stage_started, fitting=fitting)
            manifest = run(recipe, opts, reporter, checked)
        # the bars and the batch log end where the run did, however short it was
        stages.finish(sum(o.bytes for o in manifest.outputs))
        stage_bar() if terminal else log_line(stages.state())
    return manifest


def funnel_table(manifest: Manifest) -> Table:
    table = Table(title=f"{manifest.name}: {count(manifest.rows_in, 'row')} in, {manifest.rows_out:,} out")
    table.add_column("step", no_wrap=True)
    for col in ("in", "out", "removed", "%", "seconds"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("top reasons; counts", overflow="fold")
    for s in manifest.steps:
        reasons = sorted(s.reasons.items(), key=lambda kv: -kv[1])[:2]
        share = 100 * s.removed / s.rows_in if s.rows_in else 0.0
        # what a step counted (tokens, redactions: its manifest `counts`) beside what it removed
        said = [f"{k} ({v:,})" for k, v in reasons] + [f"{k} {v:,}" for k, v in (s.counts or {}).items()]
        table.add_row(
            s.step,
            f"{s.rows_in:,}",
            f"{s.rows_out:,}",
            f"{s.removed:,}",
            f"{share:.1f}",
            f"{s.seconds:.2f}",
            ", ".join(said),
        )
    # Steps run in parallel, so their seconds add up to more than the run took.
    table.caption = (
        f"seconds: each step's time summed over workers (with its fit, for a global step); "
        f"the run took {manifest.seconds:.1f}s"
    )
    return table
