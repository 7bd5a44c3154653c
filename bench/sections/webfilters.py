"""c4_quality and fineweb_quality vs datatrove's C4QualityFilter and FineWebQualityFilter.

    python bench/sections/webfilters.py [--docs 3000] [--batch 1000] [--workers 2] [--section-out PATH]

The same documents and harness as sections/gopher.py (synthetic web-like pages of
bench/corpora/gopher_webtext.py, `--workers` contiguous shards, one pinned process per shard on each
side, timed inside the process after loading and a warm-up); datatrove's filters run with their
published defaults through filter.run() in bench/.venvs/datatrove. Reports keep/drop agreement
and docs per wall- and CPU-second for both sides.
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
import json
import time

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
ANCHOR = {"c4": "datatrove C4QualityFilter", "fineweb": "datatrove FineWebQualityFilter"}
OURS = {"c4": "curate_operators.filters.c4:C4Quality", "fineweb": "curate_operators.filters.fineweb:FineWebQuality"}


def ours(which: str, docs_path: str, out_path: str, batch_size: int) -> None:
    """One worker: time our filter over the shard as a stream of record batches."""
    import importlib

    import pyarrow as pa

    sys.path.insert(0, str(ROOT))
    module, _, name = OURS[which].partition(":")
    op = getattr(importlib.import_module(module), name)()
    with open(docs_path) as f:
        texts = [json.loads(line)["text"] for line in f]
    batches = [pa.RecordBatch.from_pydict({"text": pa.array(texts[i:i + batch_size], pa.large_string())})
               for i in range(0, len(texts), batch_size)]
    op.setup()
    op.keep(batches[0].slice(0, 5))  # warm up; not timed
    started, cpu_started = time.perf_counter(), time.process_time()
    verdicts = [op.keep(b) for b in batches]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    verdicts = [v[1] if isinstance(v, tuple) else v for v in verdicts]
    kept = [bool(k) for v in verdicts for k in v.keep]
    reasons = [r for v in verdicts for r in v.reason.to_pylist()]
    with open(out_path, "w") as f:
        json.dump({"seconds": seconds, "cpu": cpu, "docs": len(texts), "kept": kept, "reasons": reasons}, f)


DIFFERENCES = {
    "c4": "Known definition differences: sentences are counted by a regex (runs of . ! ? followed by a space or the "
          "line's end) where datatrove runs spaCy's sentencizer over each kept line, so the two counts differ on "
          "what spaCy's tokenizer reads as abbreviations: a single letter before the stop (\"... for a. Is\") "
          "ends a sentence here but not in spaCy, which can leave a page one sentence short of 5 there.",
    "fineweb": "Known definition differences: words (for the newline/word ratio) are `\\w+` runs and single "
               "punctuation marks where datatrove uses spaCy's English tokenizer (contractions, URLs and "
               "hyphenated words split differently); terminal punctuation is the Unicode Sentence_Terminal "
               "property (datatrove's list differs by 3 Khmer signs and 14 characters of newer Unicode versions).",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=3, metavar=("FILTER", "DOCS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--section-out", type=Path)
    args = ap.parse_args()
    if args.worker:
        return ours(*args.worker, args.batch)

    sys.path.insert(0, str(BENCH))
    import harness as h
    from sections.gopher import ANCHOR_PYTHON, _run_side, _shards

    shards = _shards(args.docs, args.workers, args.seed)
    parts, headlines = [], []
    for which in ("c4", "fineweb"):
        ours_out = [p.with_suffix(f".{which}.ours.json") for p in shards]
        anchor_out = [p.with_suffix(f".{which}.datatrove.json") for p in shards]
        us = _run_side([[sys.executable, __file__, "--batch", str(args.batch), "--worker", which, str(p), str(o)]
                        for p, o in zip(shards, ours_out)], ours_out)
        dt = _run_side([[str(ANCHOR_PYTHON), str(BENCH / "anchors/datatrove_webfilters.py"), which, str(p), str(o)]
                        for p, o in zip(shards, anchor_out)], anchor_out)
        n = us["docs"]
        agree = sum(a == b for a, b in zip(us["kept"], dt["kept"]))
        op = OURS[which].rpartition(":")[0].rpartition(".")[2]
        rows = [[name, f"{n / side['seconds']:,.0f}", f"{n / side['cpu']:,.0f}", f"{side['seconds']:.2f}",
                 f"{side['cpu']:.2f}", f"{sum(side['kept']) / n:.1%}"]
                for name, side in ((f"curate {op}_quality", us), (ANCHOR[which], dt))]
        wall, cpu = h.ratio(dt["seconds"], us["seconds"]), h.ratio(dt["cpu"], us["cpu"])
        rows.append(["**curate speed-up**", f"**{wall}**", f"**{cpu}**", "", "", ""])
        pairs = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                                    if ka != kb)
        both = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                                   if not ka and not kb)
        parts += [f"### {op}_quality vs {ANCHOR[which]}", "",
                  h.table(["", "docs/s (wall)", "docs/s (CPU)", "wall s", "CPU s", "kept"], rows), "",
                  f"Keep/drop agreement with datatrove: **{agree / n:.2%}** ({n - agree} of {n} differ).", "",
                  "Disagreements (our reason, datatrove's):", "",
                  h.table(["ours", "datatrove", "documents"],
                          [[a or "kept", b or "kept", c] for (a, b), c in pairs.most_common(10)]) if pairs else "(none)",
                  "", "Dropped by both (our reason, datatrove's), most common:", "",
                  h.table(["ours", "datatrove", "documents"], [[a, b, c] for (a, b), c in both.most_common(6)])
                  if both else "(none)", "", DIFFERENCES[which], ""]
        headlines.append([f"{op}_quality vs {ANCHOR[which]} ({n:,} docs)", wall, cpu,
                          f"operator level; agreement {agree / n:.2%}"])
    body = "\n".join([
        f"{args.docs:,} synthetic web-like documents (bench/corpora/gopher_webtext.py, the gopher section's), {args.workers} "
        f"shards, one pinned process per shard and core on each side; ours gets Arrow batches of {args.batch} rows, "
        f"datatrove Documents through filter.run() with its published defaults. Times are of the slowest process's "
        f"timed loop, wall and CPU; load average at the end {h.load()}.", "", *parts])
    h.emit(args, body, headlines)


if __name__ == "__main__":
    main()
