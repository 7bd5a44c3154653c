"""The run's own dataset metrics (recipe `metrics:`): what they add to the quickstart, and what they say.

    python bench/sections/run_metrics.py [--docs-files 7] [--repeats 3] [--workers 2] [--section-out PATH]

`curate run` of the quickstart (normalize_text, gopher_quality, exact_dedup) on the first K demo-corpus
files (14,583 docs each: 7 = 102k), with and without `metrics: true` (the defaults: KMV sketches of
4096 n-gram hashes, a 2,000-row sample, self-BLEU on 200). Rounds alternate the order; medians of wall
and CPU-seconds of the process tree. The manifest's dataset_metrics.cpu_seconds is the feature's own
CPU: the tasks summarising rows (summed over workers) plus measuring the merged samples at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import json

import harness as h

sys.path.insert(0, str(h.REPO))

STEPS = ["normalize_text: {}", "gopher_quality: {}", "exact_dedup: {}"]
VARIANTS = {"quickstart": "", "quickstart + metrics: true": "metrics: true"}
SHOWN = ["rows", "distinct_1", "distinct_2", "distinct_3", "distinct_4", "compression_ratio", "self_bleu", "sample"]


def recipe(path: Path, inputs: str, out: Path, extra: str) -> Path:
    path.write_text("\n".join(["name: bench", f"input: {{path: {json.dumps(inputs)}, text_column: text, id_column: id}}",
                               f"output: {{path: {json.dumps(str(out))}}}", extra, "steps:",
                               *(f"  - {s}" for s in STEPS)]) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs-files", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    a = ap.parse_args()
    work = h.BENCH / ".runs" / "run-metrics"
    inputs = work / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    for p in inputs.iterdir():
        p.unlink()
    for f in h.corpus_files(h.corpus(a.workers))[:a.docs_files]:
        (inputs / f.name).symlink_to(f)
    names = list(VARIANTS)
    results: dict[str, list] = {k: [] for k in names}
    manifest = None
    for r in range(a.repeats):
        for name in names[r % 2:] + names[:r % 2]:
            key = names.index(name)
            out = work / f"out-{key}"
            m = h.curate_run(recipe(work / f"{key}.yaml", str(inputs / "*.jsonl.gz"), out, VARIANTS[name]),
                             "--workers", str(a.workers), "--overwrite", "--no-report", log=work / f"{key}.log")
            h.require_ok(m, name)
            results[name].append((m.seconds, m.cpu_seconds))
            if VARIANTS[name]:
                manifest = h.manifest(out)
    rows, heads = [], []
    for name, w, c, dw, dc in h.medians_vs_first(results):
        rows.append([name, f"{w:.1f}", f"{c:.1f}", dw, dc])
        if name != "quickstart":
            heads.append([f"metrics: true vs the quickstart ({a.docs_files * 14_583 // 1000}k docs)", dw, dc,
                          "off by default: it costs more than a few percent"])
    dm = manifest.entry("dataset_metrics")
    figures = [[k, dm["input"].get(k), dm["output"].get(k)] for k in SHOWN]
    body = (f"First {a.docs_files} demo-corpus files (~{a.docs_files * 14_583:,} docs), --workers {a.workers}, medians "
            f"of {a.repeats} rounds (order alternated); the machine's 2 cores are shared with other jobs (load "
            f"{h.load()} at the end), so wall times are noisy.\n\n"
            + h.table(["recipe", "wall s", "CPU s", "wall vs quickstart", "CPU vs quickstart"], rows)
            + f"\n\nThe last run's manifest: dataset_metrics.cpu_seconds = {dm['cpu_seconds']:.1f} (summarising "
              f"{dm['input']['rows'] + dm['output']['rows']:,} rows in the tasks, summed over workers, plus measuring "
              f"the merged samples at the end).\n\n"
            + h.table(["metric", "input", "output"], figures))
    h.emit(a, body, heads)


if __name__ == "__main__":
    main()
