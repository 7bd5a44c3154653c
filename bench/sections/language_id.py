"""language_id (py3langid): accuracy on real text in 120+ languages, and documents per second.

    python bench/sections/language_id.py [--pages 2000] [--section-out PATH]

The sample is article 1 of the Universal Declaration of Human Rights in every language that
gflanguages (Google Fonts' language data, on PyPI) translates and py3langid knows, one text per
language in its most-spoken script (tests/operators/filters/udhr.py, shared with the tests).
Speed is measured in this process, on one core, after a warm-up: on the sample (short texts)
and on `--pages` synthetic web pages of bench/corpora/gopher_webtext.py (a few KB each), in full and
with max_chars: 1000.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import collections
import time

import harness as h

sys.path.insert(0, str(h.REPO))


def timed(op, texts: list[str], batch: int = 1000):
    import pyarrow as pa

    batches = [pa.RecordBatch.from_pydict({"text": pa.array(texts[i:i + batch], pa.string())})
               for i in range(0, len(texts), batch)]
    op.process(batches[0].slice(0, 5))  # warm up
    started, cpu = time.perf_counter(), time.process_time()
    out = [op.process(b) for b in batches]
    return out, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2000)
    h.add_section_args(ap)
    args = ap.parse_args()
    import importlib.metadata as md

    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from corpora.gopher_webtext import make_documents
    from curate_operators.filters.language_id import LanguageId
    from tests.operators.filters.udhr import udhr_sample

    sample = udhr_sample(set(LanguageIdentifier.from_model_file(MODEL_FILE).nb_classes))
    op = LanguageId()
    op.setup()
    out, seconds, cpu = timed(op, [t for _, t in sample])
    found = [lang for b in out for lang in b.column("language").to_pylist()]
    right = sum(f == code for f, (code, _) in zip(found, sample))
    misses = collections.Counter((code, f) for f, (code, _) in zip(found, sample) if f != code)

    pages = make_documents(args.pages, 0)
    rows = [["UDHR article 1 (mean %d chars)" % (sum(len(t) for _, t in sample) / len(sample)), len(sample),
             f"{len(sample) / seconds:,.0f}", f"{len(sample) / cpu:,.0f}"]]
    for label, params in (("full text", {}), ("max_chars: 1000", {"max_chars": 1000})):
        page_op = LanguageId(LanguageId.Params(**params))
        page_op.setup()
        _, s, c = timed(page_op, pages)
        rows.append([f"web pages, {label} (mean {sum(map(len, pages)) / len(pages):,.0f} chars)", len(pages),
                     f"{len(pages) / s:,.0f}", f"{len(pages) / c:,.0f}"])
    body = "\n".join([
        f"py3langid {md.version('py3langid')} (its shipped model, probabilities normalised), gflanguages "
        f"{md.version('gflanguages')}; one process, one core; load average at the end {h.load()}.", "",
        f"Accuracy on UDHR article 1 in {len(sample)} languages: **{right / len(sample):.1%}** "
        f"({len(sample) - right} wrong).", "",
        "Misses (true language, found):", "",
        h.table(["language", "found", "texts"], [[a, b, c] for (a, b), c in misses.most_common()]) if misses else "(none)",
        "", "Speed:", "", h.table(["texts", "documents", "docs/s (wall)", "docs/s (CPU)"], rows), "",
        "The misses are languages the model barely separates from a close neighbour (Bosnian/Serbian/Croatian, "
        "Egyptian/Standard Arabic, Southern/Northern Sotho, a French creole/Haitian), and Sanskrit, whose "
        "gflanguages entries all have population 0, so the sample takes it in the first script by id, which is "
        "not Devanagari.",
    ])
    h.emit(args, body, [[f"language_id accuracy, UDHR in {len(sample)} languages", f"{right / len(sample):.1%}",
                         "", f"{rows[2][2]} web pages/s (max_chars 1000)"]])


if __name__ == "__main__":
    main()
