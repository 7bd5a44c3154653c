"""curate vs datatrove vs Data-Juicer: Gopher quality filtering + exact dedup on the same demo corpus files.

    python bench/sections/pipeline.py [--files K] [--workers 2] [--tools curate,datatrove,datajuicer] [--curate-all]
                                   [--section-out PATH]

Reads the first K files (default: all) of the demo corpus in bench/.data/corpus (1.4M docs, 96 JSONL.gz
files, ~1.8 GB; generated on first use). Every tool gets the same files through a folder of symlinks,
and `--workers` processes: curate `--workers`, datatrove LocalPipelineExecutor tasks=workers=N,
Data-Juicer np=N. Reports wall seconds and CPU seconds of each tool's whole process tree (the CPU figure is the steadier one on
shared cores), docs/s, peak RSS of the process tree, docs kept, curate's speed-up over each anchor by wall
and by CPU (target >= 3x), and curate's recall of the planted rows. Each tool runs through its normal entry
point: `curate run` on a recipe, datatrove's LocalPipelineExecutor, Data-Juicer's `dj-process --config`.
`--curate-all` adds a curate run over the whole corpus (when K files are fewer), for the anchors are
too slow on 2 cores to run on all of it in a session. Set up the anchors first: bash bench/anchors/setup.sh.
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
import shutil

import harness as h

ANCHORS = {"datatrove": "anchors/datatrove_pipeline.py", "datajuicer": "anchors/datajuicer_pipeline.py"}


def link_inputs(files, folder):
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).symlink_to(f)
    return folder


def run_curate(inputs, work, workers):
    out = work / "curate-out"
    recipe = h.write_recipe(work / "recipe.yaml", str(inputs / "*.jsonl.gz"), out, ["gopher_quality", "exact_dedup"])
    m = h.curate_run(recipe, "--workers", str(workers), "--overwrite", log=work / "curate.log")
    h.require_ok(m, "curate run")
    return m, h.parquet_rows(out / "data"), _recall(out)


def _recall(out):
    """Share of each planted group curate removed (from the trace: removed rows keep their columns)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    kept = ds.dataset(out / "data").to_table(columns=["planted"]).column("planted")
    kept_counts = {r["values"]: r["counts"] for r in pc.value_counts(kept).to_pylist() if r["values"] is not None}
    kept_counts[None] = kept.null_count
    return kept_counts, h.manifest(out)


def run_anchor(name, inputs, work, workers):
    """(Measured, kept) or (None, why it did not run)."""
    python = h.VENVS / name / "bin" / "python"
    if not python.exists():
        return None, f"{python} is missing (bash bench/anchors/setup.sh creates it)"
    m = h.run_measured([str(python), str(h.BENCH / ANCHORS[name]), str(inputs), str(work / f"{name}-work"),
                        str(workers)], log=work / f"{name}.log")
    if m.returncode != 0:
        tail = m.output.strip().splitlines()[-1:] or [""]
        return None, f"failed with exit {m.returncode} after {m.seconds:.0f}s: {tail[0][:300]}"
    return m, json.loads(m.output.strip().splitlines()[-1])["kept"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=0, help="use the first K corpus files (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tools", default="curate,datatrove,datajuicer")
    ap.add_argument("--curate-all", action="store_true", help="also run curate on every corpus file")
    h.add_section_args(ap)
    args = ap.parse_args()
    tools = args.tools.split(",")

    corpus = h.corpus()
    all_files = h.corpus_files(corpus)
    files = all_files[: args.files or None]
    work = h.RUNS / "pipeline"
    inputs = link_inputs(files, work / "input")
    planted = _planted_totals(files)
    docs = sum(planted.values())
    gb = h.size_gb(files)
    print(f"{len(files)} files, {docs:,} docs, {gb:.2f} GB gz; workers {args.workers}; load {h.load()}")

    results = {}
    if "curate" in tools:
        m, kept, (kept_planted, manifest) = run_curate(inputs, work, args.workers)
        results["curate"] = (m, kept)
    for name in ANCHORS:
        if name in tools:
            results[name] = run_anchor(name, inputs, work, args.workers)
            print(name, results[name])

    rows, headlines, failed = [], [], []
    if args.curate_all and len(files) < len(all_files):
        m, kept, _ = run_curate(link_inputs(all_files, work / "input-all"), work, args.workers)
        all_docs = h.CORPUS["docs"]
        rows.append([f"curate, all {len(all_files)} files ({all_docs:,} docs, {h.size_gb(all_files):.2f} GB)",
                     f"{m.seconds:.1f}", f"{all_docs / m.seconds:,.0f}", f"{m.cpu_seconds:.1f}",
                     f"{all_docs / m.cpu_seconds:,.0f}", f"{m.peak_rss_gb:.2f}", f"{kept:,}", "", ""])
    ours = results.get("curate", (None, 0))[0]
    for name, (m, kept) in results.items():
        if m is None:
            failed.append(f"- {name}: did not run: {kept}")
            continue
        wall_ratio = cpu_ratio = ""
        if name != "curate" and ours is not None:
            wall_ratio, cpu_ratio = h.ratio(m.seconds, ours.seconds), h.ratio(m.cpu_seconds, ours.cpu_seconds)
            headlines.append([f"gopher + exact dedup, curate vs {name} ({docs:,} docs)", wall_ratio, cpu_ratio,
                              "target >= 3x"])
        rows.append([name, f"{m.seconds:.1f}", f"{docs / m.seconds:,.0f}", f"{m.cpu_seconds:.1f}",
                     f"{docs / m.cpu_seconds:,.0f}", f"{m.peak_rss_gb:.2f}", f"{kept:,}", wall_ratio, cpu_ratio])
    body = [f"Input: first {len(files)} demo-corpus files, {docs:,} docs, {gb:.2f} GB JSONL.gz; {args.workers} "
            f"workers per tool; load average at the end {h.load()}. CPU s: user + system of the tool's whole "
            "process tree.", "",
            h.table(["tool", "wall s", "docs/s (wall)", "CPU s", "docs/CPU-s", "peak RSS GB (tree)", "docs kept",
                     "curate speed-up, wall", "curate speed-up, CPU"], rows)]
    if failed:
        body += [""] + failed
    if "curate" in results:
        recall = [[k or "(good: false positives)", f"{n:,}", f"{n - kept_planted.get(k, 0):,}",
                   f"{(n - kept_planted.get(k, 0)) / n:.4f}"]
                  for k, n in sorted(planted.items(), key=lambda kv: kv[0] or "~")]
        steps = [[s.step, f"{s.rows_in:,}", f"{s.rows_out:,}", f"{s.seconds:.1f}"] for s in manifest.steps]
        body += ["", "curate per step (manifest.json):", "", h.table(["step", "rows in", "rows out", "seconds"], steps),
                 "", "curate recall of the planted rows (exact_dedup's default normalization, NFC + whitespace collapse, "
                 "catches the duplicate_normalized rows that differ in whitespace only; those lower-cased need "
                 "lowercase: true):",
                 "", h.table(["planted", "rows", "removed", "recall"], recall)]
    body += ["", "datatrove: JsonlReader -> GopherRepetitionFilter -> GopherQualityFilter -> JsonlWriter -> "
             "ExactDedupSignature | ExactFindDedups | JsonlReader -> ExactDedupFilter -> ParquetWriter(zstd); "
             "tokenizer spacy.blank('en'). Data-Juicer: words_num, special_characters, alphanumeric, stopwords "
             "(Gopher's 8 words, local file), character_repetition, word_repetition filters (tokenization off) + "
             "document_deduplicator; no mean-word-length filter exists in Data-Juicer. Kept counts differ because "
             "the rule sets differ (see bench/anchors/datatrove_pipeline.py, datajuicer_pipeline.py)."]
    print()
    h.emit(args, "\n".join(body), headlines)


def _lines(files):
    import gzip

    for f in files:
        with gzip.open(f, "rb") as fh:
            yield from fh


def _planted_totals(files):
    """Rows of the input per planted kind (None: good rows). The input is the corpus's first files, which
    hold the original of every duplicate in them (an original is the first copy in corpus order)."""
    import collections

    import orjson

    counts = collections.Counter()
    for line in _lines(files):
        counts[orjson.loads(line)["planted"]] += 1
    return counts


if __name__ == "__main__":
    main()
