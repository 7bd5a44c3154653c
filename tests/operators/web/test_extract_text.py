"""extract_text: the same text as a direct call of the extractor with the same settings, on every
page; no_text, timeouts and crashes traced; output bytes independent of workers and batches."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

trafilatura = pytest.importorskip("trafilatura")

from curate_operators.web.extract_text import ExtractText  # noqa: E402
from tests.operators.web.warcs import hard_cases, real_pages, real_records, wet_records, write_warc  # noqa: E402


def _pages() -> list[str]:
    pages = [b.decode("utf-8") for b in real_pages().values()]
    pages += ["<html><body>" + "<div>" * 2000 + "<p>" + "Deep down there is a sentence. " * 20 + "</p>" +
              "</div>" * 2000 + "</body></html>", "", "<html><body><nav>Home | About</nav></body></html>"]
    return pages


def _run(op: ExtractText, pages: list[str | None], text: list[str | None] | None = None):
    columns = {"html": pa.array(pages, pa.string())}
    if text is not None:
        columns["text"] = pa.array(text, pa.string())
    op.setup()
    try:
        out, verdict = op.process(pa.RecordBatch.from_pydict(columns))
    finally:
        op.teardown()
    return out, verdict


def _direct(html: str, **settings) -> str | None:
    return trafilatura.extract(html, favor_precision=True, include_comments=False, deduplicate=False, **settings)


@pytest.mark.parametrize("timeout_s", [None, 30.0], ids=["in-process", "sandbox"])
def test_equals_a_direct_trafilatura_call(timeout_s):
    pages = _pages()
    out, verdict = _run(ExtractText(ExtractText.Params(timeout_s=timeout_s)), pages)
    expected = [_direct(p) if p else None for p in pages]
    expected = [e if e and e.strip() else None for e in expected]
    assert out.column("text").to_pylist() == expected
    assert "html" not in out.schema.names
    assert verdict.keep.tolist() == [e is not None for e in expected]
    assert sum(e is not None for e in expected) >= 7  # the real pages have main text
    reasons = verdict.reason.to_pylist()
    assert {reasons[i] for i, e in enumerate(expected) if e is None} == {"no_text"}


def test_per_document_dedup_is_a_fresh_cache_per_page():
    from trafilatura.deduplication import LRUCache
    from trafilatura.settings import LRU_SIZE

    para = "<p>" + "This paragraph is repeated many times on the very same page, far more than trafilatura allows. " \
                   "It is long enough to be checked for duplicates." + "</p>"
    page = "<html><body><article>" + "<p>An opening paragraph that stays, with some words in it.</p>" + para * 6 + \
           "</article></body></html>"
    pages = [page] * 5 + _pages()[:3]
    op = ExtractText(ExtractText.Params(deduplicate="per_document", timeout_s=None))
    out, _ = _run(op, pages)
    expected = [trafilatura.extract(p, favor_precision=True, include_comments=False,
                                    deduplicate=LRUCache(maxsize=LRU_SIZE)) for p in pages]
    assert out.column("text").to_pylist() == expected
    # every copy of the page gives the same text: no cache carried from one page to the next
    assert len(set(out.column("text").to_pylist()[:5])) == 1
    # whereas trafilatura's process-wide cache (datatrove's deduplicate=True) drops later copies
    from trafilatura.meta import reset_caches

    reset_caches()
    shared = [trafilatura.extract(p, favor_precision=True, include_comments=False, deduplicate=True) for p in pages[:5]]
    reset_caches()
    assert len(set(shared)) > 1


def test_resiliparse_and_justext_equal_direct_calls():
    pages = [p for p in _pages() if p]
    resiliparse = pytest.importorskip("resiliparse.extract.html2text")
    out, _ = _run(ExtractText(ExtractText.Params(extractor="resiliparse", timeout_s=None)), pages)
    want = [resiliparse.extract_plain_text(p, main_content=True) for p in pages]
    assert out.column("text").to_pylist() == [w if w.strip() else None for w in want]
    justext = pytest.importorskip("justext")
    out, _ = _run(ExtractText(ExtractText.Params(extractor="justext", timeout_s=None)), pages)
    stop = justext.get_stoplist("English")
    want = ["\n\n".join(p.text for p in justext.justext(h, stop) if not p.is_boilerplate) for h in pages]
    assert out.column("text").to_pylist() == [w if w.strip() else None for w in want]


def test_wet_text_kept_and_rows_without_either_traced():
    out, verdict = _run(ExtractText(ExtractText.Params(timeout_s=None)), [None, None], text=["wet text", None])
    assert out.column("text").to_pylist() == ["wet text", None]
    assert verdict.keep.tolist() == [True, False] and verdict.reason.to_pylist()[1] == "no_text"


def test_big_page_cut_before_parsing():
    body = "<p>" + "A sentence of the enormous page, repeated over and over again. " * 20 + "</p>\n"
    page = "<html><body><article>" + body * 25_000 + "</article></body></html>"  # ~32 MB
    op = ExtractText(ExtractText.Params(max_html_chars=100_000, timeout_s=None))
    out, _ = _run(op, [page])
    assert out.column("text").to_pylist() == [_direct(page[:100_000])]


def test_timeout_traced_and_next_page_extracted():
    slow = "<html><body>" + "<div><p>" + "word " * 50 + "</p>" * 1 + "</div>" * 1 + \
           "".join(f"<div><p>Paragraph {i} with some text to keep the extractor busy for a while.</p></div>"
                   for i in range(20_000)) + "</body></html>"
    op = ExtractText(ExtractText.Params(timeout_s=0.05))
    out, verdict = _run(op, [slow, slow])
    assert verdict.reason.to_pylist() == ["extract_timeout", "extract_timeout"]
    assert "0.05 s" in verdict.detail.to_pylist()[0]
    assert op.take_counts() == {"extract_timeout": 2}
    # a fresh child after each timeout: a normal page afterwards is extracted
    op = ExtractText(ExtractText.Params(timeout_s=30.0))
    page = _pages()[0]
    op.setup()
    try:
        assert op.sandbox.extract(slow[:200])[0] == "ok"
        op.sandbox.stop()
        out, verdict = op.process(pa.RecordBatch.from_pydict({"html": pa.array([page], pa.string())}))
    finally:
        op.teardown()
    assert out.column("text").to_pylist() == [_direct(page)]


def test_crashed_child_traced_and_replaced():
    import threading

    slow = "<html><body>" + "".join(f"<div><p>Paragraph {i} with some text to keep the extractor busy.</p></div>"
                                    for i in range(60_000)) + "</body></html>"
    op = ExtractText(ExtractText.Params(timeout_s=60.0))
    op.setup()
    try:
        op.sandbox._start()
        threading.Timer(0.3, op.sandbox.process.kill).start()  # as the OOM killer would, mid-page
        status, why = op.sandbox.extract(slow)
        assert status == "crashed" and "died" in why
        # the next page gets a fresh child; one found dead between pages is replaced, not blamed on a page
        assert op.sandbox.extract("<html><body><p>x</p></body></html>")[0] == "ok"
        op.sandbox.process.kill()
        op.sandbox.process.join()
        assert op.sandbox.extract("<html><body><p>x</p></body></html>")[0] == "ok"
    finally:
        op.teardown()


def _run_recipe(cli, tmp_path: Path, inputs: Path, name: str, workers: int, batch_rows: int) -> bytes:
    out = tmp_path / name
    recipe = tmp_path / f"{name}.yaml"
    recipe.write_text(f"name: x\ninput:\n  path: {inputs}\n  batch_rows: {batch_rows}\noutput:\n  path: {out}\n"
                      f"steps:\n  - extract_text: {{deduplicate: per_document}}\n")
    res = cli("run", recipe, "-w", str(workers))
    assert res.exit_code == 0, res.output
    return b"".join(p.read_bytes() for p in sorted((out / "data").glob("*.parquet")))


def test_output_bytes_independent_of_workers_and_batch_rows(cli, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    write_warc(inputs / "a.warc.gz", real_records() + hard_cases())
    write_warc(inputs / "b.warc", list(reversed(real_records())))
    write_warc(inputs / "c.wet.gz", wet_records())
    one = _run_recipe(cli, tmp_path, inputs, "w1", 1, 8192)
    two = _run_recipe(cli, tmp_path, inputs, "w2", 2, 3)
    assert hashlib.sha256(one).hexdigest() == hashlib.sha256(two).hexdigest()
    rows = pq.read_table(tmp_path / "w1" / "data").to_pylist()
    assert len(rows) > 15 and all(r["text"] for r in rows)


def test_killed_mid_run_then_resumed_gives_the_same_bytes(tmp_path):
    """A WARC run killed (main process alone) after its first task: the workers and their
    extractor processes end with it, and --resume writes the uninterrupted run's bytes."""
    from tests.curate.engine import faultkit

    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(2):
        write_warc(inputs / f"p{i}.warc.gz", real_records())
    text = f"input: {{path: '{inputs}'}}\noutput: {{path: '{{out}}'}}\nsteps:\n  - extract_text: {{}}\n"
    paths = {}
    for name in ("ref", "killed"):
        paths[name] = tmp_path / f"{name}.yaml"
        paths[name].write_text(text.replace("{out}", str(tmp_path / name)))
    assert faultkit.start(paths["ref"]).wait() == 0
    proc = faultkit.start(paths["killed"], failpoint="task-done")
    assert faultkit.wait_for_failpoint(proc), proc.stderr.read().decode()
    below = faultkit.kill(proc, whole_group=False)
    assert below and faultkit.alive(below) == []  # workers and sandbox children end with the run
    resumed = faultkit.start(paths["killed"], "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert faultkit.digest(tmp_path / "killed") == faultkit.digest(tmp_path / "ref")
