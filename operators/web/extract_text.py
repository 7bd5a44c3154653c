"""extract_text: the main text of each web page (the `html` column) into the text column.

Extractors:
- `trafilatura` (default), called as datatrove's `Trafilatura` extractor calls it:
  `trafilatura.extract(html, favor_precision=True, include_comments=False, deduplicate=...)`,
  everything else trafilatura's default (plain text, tables kept, fallbacks on);
- `resiliparse`: `extract_plain_text(html, main_content=True)`;
- `justext`: the paragraphs jusText does not mark boilerplate, joined by blank lines (as NeMo
  Curator joins them), with the stop list `justext_stoplist`.

Deduplication. trafilatura's `deduplicate=True` counts paragraphs in one cache for the whole
process, so what a page keeps depends on which pages the same worker extracted before it: the
output would change with `--workers`, the batch size and the file order. curate never uses that
cache. `deduplicate: off` (the default) does no deduplication inside extraction;
`per_document` gives each page its own cache, so that a paragraph repeated within one page is
removed after its third copy, as trafilatura would on that page alone. Duplicates across pages
are minhash_dedup's and exact_dedup's work, which decide the same on any number of workers.

Bounds. A page is cut to its first `max_html_chars` characters before it is parsed (huge pages
are almost all markup and scripts; the cut is deterministic). With `timeout_s`, the extractor
runs in a child process (as datatrove's sandbox): a page it has not finished in `timeout_s`
seconds is traced `extract_timeout` and a fresh child takes the next page; a child that dies
(out of memory, a crash in native code) traces its page `extract_failed`. The timeout is the one
setting that can make the output depend on the machine's speed: keep it well above what a page
takes (the default, 10 s, is ~100x trafilatura's time on a large page). `timeout_s: null`
extracts in the worker itself, without that protection.

A page from which nothing is extracted is traced `no_text`. A row without html that already
has text (a WET conversion record) keeps its text. The html column is dropped unless
`keep_html`.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Callable, Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.errors import CurateError
from curate.ops import Map, Params, Result, Verdict, loaded, reads_column, writes_column


class ExtractTextParams(Params):
    html_column: str = reads_column("html", "The column holding each page's HTML (text).")
    column: str | None = writes_column(None, "Column for the extracted text; default: the recipe's text column "
                                             "(input.text_column, `text` unless set).")
    extractor: Literal["trafilatura", "resiliparse", "justext"] = Field(
        "trafilatura", description="trafilatura (datatrove's FineWeb settings), resiliparse, or justext.")
    favor_precision: bool = Field(True, description="trafilatura: prefer less text with less boilerplate "
                                                    "(datatrove's favour_precision, on in FineWeb).")
    include_comments: bool = Field(False, description="trafilatura: keep the comment sections of pages.")
    include_tables: bool = Field(True, description="trafilatura: keep the text of tables.")
    deduplicate: Literal["off", "per_document"] = Field(
        "off", description="trafilatura's paragraph deduplication: off, or within each page alone "
                           "(never its process-wide cache, which makes output depend on workers).")
    justext_stoplist: str = Field("English", description="justext: the stop-word list (a jusText language name).")
    max_html_chars: int = Field(2_000_000, gt=0, description="Characters of a page parsed at most; the rest is "
                                                             "cut before parsing.")
    timeout_s: float | None = Field(10.0, gt=0, description="Seconds a page may take, in a child process; past it "
                                                            "the page is traced extract_timeout. null: extract in "
                                                            "the worker, no timeout.")
    keep_html: bool = Field(False, description="Keep the html column beside the text.")


def build_extractor(params: dict) -> Callable[[str], str | None]:
    """The extraction function `params` (ExtractTextParams as a dict) describe: html -> text or None."""
    kind = params["extractor"]
    if kind == "trafilatura":
        try:
            import trafilatura
            from trafilatura.deduplication import LRUCache
            from trafilatura.settings import LRU_SIZE
        except ImportError as e:
            raise CurateError(f"extract_text: trafilatura cannot be imported ({e}); pip install 'curate[warc]'") from None

        per_document = params["deduplicate"] == "per_document"

        def extract(html: str) -> str | None:
            return trafilatura.extract(html, favor_precision=params["favor_precision"],
                                       include_comments=params["include_comments"],
                                       include_tables=params["include_tables"],
                                       deduplicate=LRUCache(maxsize=LRU_SIZE) if per_document else False)
        return extract
    if kind == "resiliparse":
        try:
            from resiliparse.extract.html2text import extract_plain_text
        except ImportError as e:
            raise CurateError(f"extract_text: resiliparse cannot be imported ({e}); pip install resiliparse") from None
        return lambda html: extract_plain_text(html, main_content=True)
    try:
        import justext
    except ImportError as e:
        raise CurateError(f"extract_text: justext cannot be imported ({e}); pip install 'curate[warc]'") from None
    try:
        stoplist = justext.get_stoplist(params["justext_stoplist"])
    except ValueError as e:
        raise CurateError(f"extract_text: justext_stoplist: {e}") from None

    def extract(html: str) -> str | None:
        if not html.strip():
            return None
        paragraphs = justext.justext(html, stoplist)
        return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)
    return extract


def _outcome(extract: Callable[[str], str | None], html: str) -> tuple[str, str | None]:
    try:
        return "ok", extract(html)
    except Exception as e:  # noqa: BLE001 - a page the extractor fails on is one traced row
        return "error", f"{type(e).__name__}: {e}"[:500]


STARTUP_S = 120.0  # what a child may take to start and import its extractor (a loaded machine is slow)
WINDOW_PAGES = 64  # pages sent to the sandbox in one message
WINDOW_CHARS = 8_000_000  # ... and at most this much HTML (one page alone may be larger: max_html_chars)


def _child(conn, params: dict, parent: int) -> None:
    """The sandbox's loop: say ready, then receive a page and send back its outcome, until the
    pipe closes: its parent's end closes when the parent stops it or dies, however it dies, so
    the child never outlives it by more than the page in hand. (Not lifetime.die_with_parent:
    the kernel's parent-death signal follows the thread that started the child, and a task's
    thread may end long before its process.)"""
    import signal

    # a run's worker ignores SIGTERM (its parent handles stops) and the child inherits that:
    # multiprocessing ends a daemon child with SIGTERM as its parent exits, and waits for it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with open("/proc/self/oom_score_adj", "w") as f:  # the OOM killer takes this process first
            f.write("1000")
    except OSError:
        pass
    extract = build_extractor(params)
    conn.send(("ready", None))
    while True:
        try:
            pages = conn.recv()
        except (EOFError, OSError):
            return
        for html in pages:  # one answer a page, as soon as it is done: the parent times each page
            conn.send(_outcome(extract, html))


class _Sandbox:
    """One child process that extracts a page at a time; replaced after a timeout or a crash.

    The child is spawned, not forked: a worker holds threads, and a fork taken while one of
    them holds a lock hangs the child (it did, on the first try). A page is sent only once the
    child has answered the one before (or said it is ready), so a send never waits on a child
    that is not reading."""

    def __init__(self, params: dict, timeout: float):
        self.params = params
        self.timeout = timeout
        self.process = None
        self.conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent_end, child_end = ctx.Pipe()
        self.process = ctx.Process(target=_child, args=(child_end, self.params, os.getpid()), daemon=True)
        self.process.start()
        child_end.close()
        self.conn = parent_end
        try:
            ready = self.conn.poll(STARTUP_S) and self.conn.recv()[0] == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            code = self.process.exitcode
            self.stop()
            raise CurateError(f"extract_text: the {self.params['extractor']} process did not start in {STARTUP_S:g} s "
                              f"(exit code {code})")

    def extract(self, html: str) -> tuple[str, str | None]:
        """("ok", text or None), ("error", message), ("timeout", None) or ("crashed", message)."""
        return self.extract_many([html])[0]

    def extract_many(self, pages: list[str]) -> list[tuple[str, str | None]]:
        """The outcome of each page (see `extract`). Pages go to the child a window at a time, in one
        message it reads whole before it starts on them, and come back one by one: each page has
        `timeout` seconds from the answer before it (in bench/sections/webcrawl.py one round trip a page
        cost 6 points of trafilatura's pages per CPU-second; a window, nothing measurable). After a timeout or a crash the rest of the
        window goes to a fresh child."""
        out: list[tuple[str, str | None]] = []
        while len(out) < len(pages):
            if self.process is not None and not self.process.is_alive():  # died between pages: no page's doing
                self.stop()
            if self.process is None:
                self._start()
            window, chars = [], 0
            for html in pages[len(out):len(out) + WINDOW_PAGES]:
                if window and chars + len(html) > WINDOW_CHARS:
                    break
                window.append(html)
                chars += len(html)
            try:
                self.conn.send(window)
                for _ in window:
                    if not self.conn.poll(self.timeout):
                        self.stop()
                        out.append(("timeout", None))
                        break
                    out.append(self.conn.recv())
            except (EOFError, OSError) as e:
                code = self.process.exitcode if self.process is not None else None
                self.stop()
                out.append(("crashed", f"the extractor's process died "
                                       f"({'exit code ' + str(code) if code is not None else e})"))
        return out

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            self.conn.close()
        except OSError:
            pass
        self.process.join(0.5)  # it exits when its pipe closes, unless busy on a page
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.process, self.conn = None, None

    close = stop  # what teardown calls on what an operator loaded (curate/loaded.py)


class ExtractText(Map):
    """Extracts each page's main text from its HTML."""

    name = "extract_text"
    Params = ExtractTextParams

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counts: dict[str, int] = {}

    def computed_provides(self) -> tuple[str, ...]:
        return () if self.params.column else (self.text_column,)

    @property
    def out_column(self) -> str:
        return self.params.column or self.text_column

    # Loaded in this order: the extractor even with a sandbox, so that a missing package fails
    # the step in setup, not in a child.
    @loaded
    def extract_fn(self):
        """html -> text or None, in this process."""
        return build_extractor(self.params.model_dump())

    @loaded
    def sandbox(self) -> _Sandbox | None:
        """The child process that extracts when pages have a timeout."""
        return _Sandbox(self.params.model_dump(), self.params.timeout_s) if self.params.timeout_s is not None else None

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        fields = [f for f in schema if self.params.keep_html or f.name != self.params.html_column]
        fields = [f for f in fields if f.name != self.out_column] + [pa.field(self.out_column, pa.string())]
        return pa.schema(fields)

    def _outcomes(self, pages: list[str]) -> list[tuple[str, str | None]]:
        pages = [p[: self.params.max_html_chars] for p in pages]
        if self.sandbox is not None:
            return self.sandbox.extract_many(pages)
        return [_outcome(self.extract_fn, p) for p in pages]

    def process(self, batch: pa.RecordBatch) -> Result:
        html = batch.column(self.params.html_column)
        if not (pa.types.is_string(html.type) or pa.types.is_large_string(html.type) or pa.types.is_null(html.type)):
            raise CurateError(f"extract_text: column '{self.params.html_column}' must be text, it is {html.type}")
        at = batch.schema.get_field_index(self.out_column)
        before = batch.column(at).to_pylist() if at >= 0 else [None] * batch.num_rows
        texts, reasons, details = [], [], []
        pages = html.to_pylist()
        outcomes = iter(self._outcomes([p for p in pages if p is not None]))
        for page, had in zip(pages, before):
            reason = detail = None
            if page is None:
                text = had if isinstance(had, str) else None  # a WET record: its text is the page's
                if not text:
                    reason, detail = "no_text", "no html and no text"
            else:
                status, value = next(outcomes)
                text = value if status == "ok" else None
                if status == "timeout":
                    reason, detail = "extract_timeout", f"not extracted in {self.params.timeout_s:g} s"
                elif status in ("error", "crashed"):
                    reason, detail = "extract_failed", value
                elif not (text and text.strip()):
                    text, reason, detail = None, "no_text", f"{self.params.extractor} found no main text"
            self.counts[reason or "extracted"] = self.counts.get(reason or "extracted", 0) + 1
            texts.append(text)
            reasons.append(reason)
            details.append(detail)
        out = batch
        if not self.params.keep_html:
            out = out.drop_columns([self.params.html_column])
        column = pa.array(texts, pa.string())
        at = out.schema.get_field_index(self.out_column)
        out = out.set_column(at, self.out_column, column) if at >= 0 else out.append_column(self.out_column, column)
        keep = np.array([r is None for r in reasons], bool)
        return Result(out, Verdict(keep, pa.array(reasons, pa.string()), pa.array(details, pa.string())))

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = self.counts, {}
        return counts
