"""On a terminal, a run shows a bar per step with rows and rows/s; the funnel table follows the manifest."""

import io

from rich.console import Console

from curate import preflight, recipe
from curate.engine.run.runner import RunOptions
from curate.manifest import Manifest
from curate.progress import funnel_table, run_with_progress
from tests.conftest import write_jsonl


def test_progress_shows_rows_per_second_for_each_step(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in ["x", "y", "x"] * 50])
    r = recipe.load(text=f"input: {{path: '{tmp_path}/a.jsonl'}}\noutput: {{path: '{tmp_path}/o'}}\n"
                         "steps:\n  - sql_filter: {where: \"text <> 'y'\"}\n  - exact_dedup: {}\n")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None, highlight=False)
    manifest = run_with_progress(r, RunOptions(workers=1), console)
    shown = screen.getvalue()
    for label, counts in (("00_read", "150 rows in, 150 kept"), ("01_sql_filter", "150 rows in, 100 kept"),
                          ("02_exact_dedup", "100 rows in, 1 kept")):
        assert label in shown and counts in shown
    table = io.StringIO()
    assert isinstance(manifest, Manifest)  # what the runner returns, passed on
    Console(file=table, width=150).print(funnel_table(manifest))
    assert "exact_duplicate (99)" in table.getvalue()


def test_rows_per_second_column_renders_the_measured_speed():
    from types import SimpleNamespace

    from curate.progress import _RowsPerSecond

    assert str(_RowsPerSecond().render(SimpleNamespace(finished_speed=None, speed=12345.6))) == "12,346 rows/s"
    assert str(_RowsPerSecond().render(SimpleNamespace(finished_speed=None, speed=None))) == ""


def test_bars_show_percent_and_eta_where_the_total_is_known(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["x", "y", "x"] * 50}), tmp_path / "a.parquet")
    r = recipe.load(text=f"input: {{path: '{tmp_path}/a.parquet'}}\noutput: {{path: '{tmp_path}/o'}}\n"
                         "steps:\n  - normalize_text: {}\n  - sql_filter: {where: \"text <> 'y'\"}\n"
                         "  - sql_filter: {where: 'true'}\n  - exact_dedup: {}\n  - sql_filter: {where: 'true'}\n")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160, color_system=None, highlight=False)
    run_with_progress(r, RunOptions(workers=1), console, preflight.inputs(r))
    last = {}
    for line in screen.getvalue().replace("\r", "\n").splitlines():
        for label in ("00_read", "01_normalize_text", "02_sql_filter", "03_sql_filter", "04_exact_dedup",
                      "05_sql_filter"):
            if label in line:
                last[label] = line
    # The Parquet footers give the rows read; every row passes the first step and a Map; a Global
    # step gets all the rows the steps before it kept. A step after a filter in a stage has no total.
    for label in ("00_read", "01_normalize_text", "02_sql_filter", "04_exact_dedup"):
        assert "100%" in last[label] and "eta" in last[label], last[label]
    for label in ("03_sql_filter", "05_sql_filter"):
        assert "%" not in last[label] and "eta" not in last[label], last[label]


def test_input_rows_are_known_for_parquet_only():
    from curate.io.sources import Source
    from curate.progress import input_rows

    assert input_rows([Source("a.jsonl", "jsonl", "a.jsonl")], None) is None


def test_the_preflight_s_footer_reads_give_the_bars_their_total(tmp_path, monkeypatch):
    """The footers the preflight read for the schemas are not read again for the total (in a
    store each is a request or more): the preflight reads every file's, the first one's too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import curate.progress

    for i in range(4):
        pq.write_table(pa.table({"text": [f"{i}-{j}" for j in range(i + 1)]}), tmp_path / f"{i}.parquet")
    r = recipe.load(text=f"input: {{path: '{tmp_path}/*.parquet'}}\noutput: {{path: '{tmp_path}/o'}}\nsteps: []\n")
    checked = preflight.check(r)
    read_again = []
    real = curate.progress.open_parquet
    monkeypatch.setattr(curate.progress, "open_parquet", lambda path, *a: read_again.append(path) or real(path, *a))
    assert curate.progress.input_rows(checked.sources, None, checked.rows) == 1 + 2 + 3 + 4
    assert read_again == []
