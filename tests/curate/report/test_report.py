"""report.html: written after a run (or by `curate report`), self-contained, and drawn by a browser."""

from __future__ import annotations

import io
import re
import shutil

import pytest

from curate.demo import generate
from tests.conftest import write_jsonl, write_recipe
from tests.curate.report.devtools import Browser, chromium

RECIPE = """
name: qdc-report
seed: 0
input: {{path: "{data}/*.jsonl.gz", text_column: text, id_column: id}}
output: {{path: "{out}"}}
metrics: {{sample: 300, bleu_sample: 40, clusters: 4}}
steps:
  - quality_heuristics: {{}}
  - complexity_scores: {{metrics: [words, mattr]}}
  - embed: {{backend: hash, dim: 64}}
  - dataset_metrics: {{embedding_column: _embedding, score_columns: [quality_heuristic, complexity_mattr],
                      sample: 300, bleu_sample: 40, clusters: 4}}
  - gopher_quality: {{}}
  - exact_dedup: {{}}
  - qdc_select: {{fraction: 0.5, quality: {{quality_heuristic: 1}}, complexity: {{complexity_mattr: 1}}}}
  - dataset_metrics: {{embedding_column: _embedding, score_columns: [quality_heuristic, complexity_mattr],
                      sample: 300, bleu_sample: 40, clusters: 4}}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    pytest.importorskip("faiss")
    from typer.testing import CliRunner

    from curate.cli import app

    tmp = tmp_path_factory.mktemp("report")
    generate(tmp / "demo", docs=400, files=2, seed=0)
    recipe = write_recipe(tmp / "r.yaml", RECIPE.format(data=tmp / "demo", out=tmp / "out"))
    res = CliRunner().invoke(app, ["run", str(recipe), "-w", "2"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return tmp / "out"


def test_run_writes_a_self_contained_report(run_dir):
    page = (run_dir / "report.html").read_text()
    assert "<script src" not in page and "<link" not in page  # nothing fetched: scripts and styles inline
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)  # the page itself, not the bundle's strings
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", markup)
    for section in ("funnel", "lengths", "sources", "timings", "reasons", "kept-removed", "qdc", "histograms",
                    "step-summaries"):
        assert f'<section id="{section}"' in page
    assert "gopher_" in page and "qdc_not_selected" in page  # removal reasons, from the manifest
    assert "doc-" in page  # sample rows from the trace (their ids)
    assert "quality_heuristic" in page and "vendi" in page
    assert "run: input vs output" in page  # the run's own metrics (recipe `metrics:`)


def test_no_report_flag_and_report_command(cli, run_dir, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "report.html").unlink()
    res = cli("report", copy)
    assert res.exit_code == 0 and (copy / "report.html").is_file()


def test_run_with_no_report_writes_none(cli, tmp_path):
    generate(tmp_path / "demo", docs=30, files=1, seed=0)
    recipe = write_recipe(tmp_path / "r.yaml", f"""
name: plain
input: {{path: "{tmp_path}/demo/*.jsonl.gz", text_column: text}}
output: {{path: "{tmp_path}/out"}}
steps: [exact_dedup: {{}}]
""")
    assert cli("run", recipe, "--no-report").exit_code == 0
    assert not (tmp_path / "out" / "report.html").exists()


def test_a_failing_report_is_a_warning_not_a_failed_run(cli, tmp_path, monkeypatch):
    import curate.report.report as report

    def broken(run_dir):
        raise ValueError("plot exploded")

    monkeypatch.setattr(report, "write_report", broken)
    generate(tmp_path / "demo", docs=30, files=1, seed=0)
    recipe = write_recipe(tmp_path / "r.yaml", f"""
name: plain
input: {{path: "{tmp_path}/demo/*.jsonl.gz", text_column: text}}
output: {{path: "{tmp_path}/out"}}
steps: [exact_dedup: {{}}]
""")
    res = cli("run", recipe)
    assert res.exit_code == 0
    assert "report.html not written" in res.stderr and "plot exploded" in res.stderr
    assert (tmp_path / "out" / "manifest.json").is_file()


def test_report_of_an_unfinished_run_is_a_clear_error(cli, tmp_path):
    res = cli("report", tmp_path)
    assert res.exit_code == 2 and "no manifest.json" in res.stderr


def test_report_size_does_not_grow_with_rows(run_dir):
    # Histograms are counts per bin and samples a few per reason: the page is the bundle plus a little.
    assert (run_dir / "report.html").stat().st_size < 2_000_000


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_renders_the_report_without_errors_or_network(run_dir):
    pytest.importorskip("websockets")
    browser = Browser()
    try:
        browser.open(run_dir / "report.html")
        assert browser.errors() == []
        external = [u for u in browser.requests() if not u.startswith(("file:", "data:", "about:"))]
        assert external == []
        steps = browser.evaluate("document.querySelectorAll('#fig-funnel g.point').length")
        assert steps == 9  # read + 8 steps, one bar each
        assert browser.evaluate("document.querySelectorAll('.hist .main-svg').length") >= 2
        for figure in ("#fig-funnel", "#fig-hist-0"):
            drawn = drawn_fraction(browser, figure)  # bars and text on a white page
            assert drawn > 0.03, f"{figure}: only {drawn:.1%} of its area is drawn"
    finally:
        browser.close()


def drawn_fraction(browser: Browser, selector: str) -> float:
    """The share of the element's area darker than a white page (bars, lines, text, borders)."""
    from PIL import Image

    box = browser.evaluate(f"(() => {{const r = document.querySelector({selector!r}).getBoundingClientRect();"
                           f"return {{x: r.x + scrollX, y: r.y + scrollY, width: r.width, "
                           f"height: r.height}}}})()")
    assert box["width"] > 100 and box["height"] > 30, f"{selector}: {box}"
    histogram = Image.open(io.BytesIO(browser.screenshot(box))).convert("L").histogram()
    return sum(histogram[:200]) / sum(histogram)


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_draws_lengths_sources_and_duplicates(small_dir):
    pytest.importorskip("websockets")
    browser = Browser(width=800)  # narrow: side-by-side figures leave a title little room beside the toolbar
    try:
        browser.open(small_dir / "report.html")
        assert browser.errors() == []
        assert [u for u in browser.requests() if not u.startswith(("file:", "data:", "about:"))] == []
        for section in ("lengths", "sources", "kept-removed", "duplicates"):
            assert browser.evaluate(f"!!document.getElementById({section!r})"), section
        assert browser.evaluate("document.querySelectorAll('#fig-lengths-chars .scatterlayer .trace').length") == 2
        assert drawn_fraction(browser, "#fig-lengths-chars") > 0.03  # the input and output curves, filled
        assert drawn_fraction(browser, "table.sources") > 0.03  # its borders and text
        rows = browser.evaluate("document.querySelector('table.sources').querySelectorAll('tr').length")
        assert rows == 3  # by input file: a header and the two files
        # No toolbar covers a title: titles are headings above their figure, outside the plot.
        overlaps = browser.evaluate("""(() => {
            const boxes = s => [...document.querySelectorAll(s)].map(e => e.getBoundingClientRect());
            const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            const bars = boxes('.modebar'), titles = boxes('h4.fig-title, .gtitle');
            return titles.length ? bars.filter(b => titles.some(t => hit(b, t))).length : -1})()""")
        assert overlaps == 0
    finally:
        browser.close()


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_the_browser_check_sees_console_errors_and_network_requests(tmp_path):
    pytest.importorskip("websockets")
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); fetch('http://127.0.0.1:9/x.js').catch(() => {});"
                    "</script></body></html>")
    browser = Browser()
    try:
        browser.open(page)
        assert any("boom" in e for e in browser.errors())
        assert "http://127.0.0.1:9/x.js" in browser.requests()
    finally:
        browser.close()


def test_inspect_shows_qdc_before_and_after(cli, run_dir):
    res = cli("inspect", run_dir)
    assert res.exit_code == 0, res.output
    assert "dataset metrics: 04_dataset_metrics vs 08_dataset_metrics" in res.stdout
    assert "run: input vs output" in res.stdout and "input (400 rows)" in res.stdout
    assert "07_qdc_select: input vs selection" in res.stdout
    assert "vendi" in res.stdout and "distinct_2" in res.stdout


def test_report_command_breaks_rows_down_by_a_chosen_column(cli, small_dir, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(small_dir, copy)
    assert cli("report", copy, "--by-domain", "url").exit_code == 0
    assert "by the domain of the URL in url" in (copy / "report.html").read_text()
    res = cli("report", copy, "--by", "site")
    assert res.exit_code == 2 and "--by: no column 'site'" in res.stderr and "url" in res.stderr


def test_a_run_reports_the_breakdowns_its_recipe_names(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("URL_COLUMN", "url")
    write_jsonl(tmp_path / "in.jsonl", [{"text": "long enough to stay", "url": "https://a.example.com/1"},
                                        {"text": "cut", "url": "https://b.example.org/2"}])
    text = (f"input: {{path: '{tmp_path}/in.jsonl'}}\noutput: {{path: '{tmp_path}/out'}}\n"
            f"steps:\n  - sql_filter: {{where: 'length(text) > 5'}}\n")
    res = cli("run", write_recipe(tmp_path / "r.yaml", text + "report: {by_domain: '${URL_COLUMN}'}\n"))
    assert res.exit_code == 0, res.output
    html = (tmp_path / "out" / "report.html").read_text()
    assert "by the domain of the URL in url" in html and "b.example.org" in html
    monkeypatch.delenv("URL_COLUMN")  # the manifest keeps the choice as the run expanded it
    assert cli("report", tmp_path / "out").exit_code == 0  # `curate report` reads the recipe's choice too
    assert "by the domain of the URL in url" in (tmp_path / "out" / "report.html").read_text()
    res = cli("run", write_recipe(tmp_path / "r.yaml", text + "report: {by: site}\n"), "--overwrite")
    assert res.exit_code == 2 and "report.by: no column 'site'" in " ".join(res.stderr.split()), res.stderr
    assert "url" in res.stderr and "Traceback" not in res.output


def test_the_report_reads_the_manifest_by_the_fields_its_model_declares(run_dir, monkeypatch):
    """The report reads a runner-written manifest through its model, by declared fields only (an
    observer's entry through entry()): a field renamed in the model while the runner still writes
    the old name would be kept as an extra and read from there; here that is an error."""
    from curate import manifest as model
    from curate.report.report import write_report

    written = model.read((run_dir / "manifest.json").read_bytes(), "manifest.json")
    parts = [written, written.run, *written.steps, *written.inputs, *written.outputs]
    assert {k for p in parts for k in p.model_extra or {}} == {"dataset_metrics"}  # the one observer's entry

    def declared_only(self, name):
        raise AttributeError(f"{type(self).__name__} declares no field {name!r} (read an extra with entry())")

    monkeypatch.setattr(model._Open, "__getattr__", declared_only, raising=False)
    page = write_report(run_dir).read_text(encoding="utf-8")
    for shown in ("run: input vs output", "dataset metrics: 04_dataset_metrics vs 08_dataset_metrics",
                  "07_qdc_select: input vs selection", 'id="reasons"', 'id="step-summaries"'):
        assert shown in page, shown
