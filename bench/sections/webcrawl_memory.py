"""Memory of a WARC run as the number of WARC files grows (issue 47: "memory flat in the number of WARC files").

    python bench/sections/webcrawl_memory.py [--files 10,100,1000] [--pages-per-file 2] [--workers 2] [--section-out PATH]

The input: N small .warc.gz files of `--pages-per-file` pages each, the tests' real pages
(tests/operators/web/pages, from trafilatura's sdist) under distinct URLs, written with the tests'
warcio helpers; every file is alike, so the work per file is constant and only the count changes.
The run: recipes/fineweb.yaml as shipped (url_filter with a one-line block list -> extract_text with
trafilatura in its sandbox -> language_id -> gopher_quality -> c4_quality -> fineweb_quality ->
minhash_dedup -> pii_redact -> Parquet), `curate run -w WORKERS`, each count twice: as shipped (the
run, then report.html written by the same process) and with --no-report (the run alone).
Memory: the resident bytes of every process of the run's tree, sampled every 0.1 s from /proc
(bench/harness.run_measured): the driver (the `curate run` process), the largest other process (a
worker or an extraction sandbox), and the whole tree at its peak. Also wall and CPU seconds.
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

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

import harness as h  # noqa: E402

RECIPE = h.REPO / "recipes" / "fineweb.yaml"


def build(directory: Path, files: int, per_file: int) -> Path:
    """`files` .warc.gz files of `per_file` real pages each, under `directory`/warc."""
    from tests.operators.web.warcs import Rec, real_pages, write_warc

    real = list(real_pages().items())
    inputs = directory / "warc"
    inputs.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        recs = []
        for k in range(per_file):
            name, body = real[(f * per_file + k) % len(real)]
            recs.append(Rec(f"https://real.example/{f}/{k}/{name}", body))
        write_warc(inputs / f"crawl-{f:05d}.warc.gz", recs)
    return inputs


def run(directory: Path, inputs: Path, workers: int, name: str, *args: str) -> tuple[h.Measured, h.Manifest]:
    """recipes/fineweb.yaml over `inputs` (a copy of the recipe with the input, the output
    (`directory`/`name`) and a block list filled in), `curate run` given `args` too; the
    measurement and the run's manifest."""
    blocklist = directory / "blocklist.txt"
    blocklist.write_text("blocked.example\n")
    out = directory / name
    recipe = directory / f"{name}.yaml"
    text = RECIPE.read_text().replace("${WARC:-data/warc}", json.dumps(str(inputs)))
    text = text.replace("${URL_BLOCKLIST}", json.dumps(str(blocklist))).replace("out/fineweb", json.dumps(str(out)))
    recipe.write_text(text)
    m = h.curate_run(recipe, "-w", str(workers), *args, log=directory / f"{name}.log")
    h.require_ok(m, "curate run of recipes/fineweb.yaml")
    return m, h.manifest(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="10,100,1000", help="WARC file counts, comma-separated")
    ap.add_argument("--pages-per-file", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    import tempfile

    counts = [int(x) for x in args.files.split(",")]
    load_before = h.load()
    root = h.RUNS / "webcrawl-memory"
    root.mkdir(parents=True, exist_ok=True)
    rows, drivers, runs, others = [], [], [], []
    for n in counts:
        with tempfile.TemporaryDirectory(dir=root) as t:
            directory = Path(t)
            inputs = build(directory, n, args.pages_per_file)
            m, manifest = run(directory, inputs, args.workers, "out")
            bare, _ = run(directory, inputs, args.workers, "no-report", "--no-report")
        steps = manifest.steps
        pages_in = steps[0].rows_in if steps else n * args.pages_per_file
        rows_out = steps[-1].rows_out if steps else 0
        drivers.append(m.peak_driver_gb)
        runs.append(bare.peak_driver_gb)
        others.append(m.peak_process_other_gb)
        rows.append([f"{n:,}", f"{pages_in:,}", f"{rows_out:,}", f"{m.seconds:.1f}", f"{m.cpu_seconds:.1f}",
                     f"{1000 * m.peak_driver_gb:.0f}", f"{1000 * bare.peak_driver_gb:.0f}",
                     f"{1000 * m.peak_process_other_gb:.0f}", f"{1000 * m.peak_rss_gb:.0f}", f"{m.processes}"])
        print(rows[-1], flush=True)
    table = h.table(["WARC files", "pages read", "rows out", "wall s", "CPU s (tree)", "driver peak MB",
                     "driver peak MB, --no-report", "largest other process MB", "tree peak MB", "processes seen"],
                    rows)

    def growth(peaks: list[float]) -> float:
        return peaks[-1] / peaks[0] if peaks[0] else float("nan")

    def slope(peaks: list[float]) -> float:  # KB a file between the two largest counts
        return 1e6 * (peaks[-1] - peaks[-2]) / (counts[-1] - counts[-2]) if len(counts) > 1 else float("nan")

    report_mb = [1000 * (d - r) for d, r in zip(drivers, runs)]
    body = (f"{args.pages_per_file} pages a file (the tests' real pages, distinct URLs), "
            f"`curate run -w {args.workers}` "
            f"of recipes/fineweb.yaml (a one-line block list; language_id's default backend); each count twice, as "
            f"shipped (the run, then report.html written by the same process) and with --no-report (the run alone); "
            f"the other columns are the first's. Load average {load_before} before, {h.load()} after (shared cores). "
            f"Peak resident MB sampled every 0.1 s from /proc: the driver (the `curate run` process), the largest "
            f"of its other processes (workers, extraction sandboxes), the whole tree.\n\n{table}\n\n"
            f"From {counts[0]:,} to {counts[-1]:,} files ({counts[-1] // counts[0]}x the files and pages): the "
            f"run's driver (--no-report) peaks x{growth(runs):.3f} ({slope(runs):.0f} KB a file between the two "
            f"largest counts), as shipped x{growth(drivers):.3f} ({slope(drivers):.0f} KB a file); the largest "
            f"other process x{growth(others):.3f}; report.html, written by the same process once the run is done, "
            f"adds {report_mb[0]:.0f} MB to the driver's peak at {counts[0]:,} files and {report_mb[-1]:.0f} MB at "
            f"{counts[-1]:,}.\n\n"
            f"What the driver no longer holds (issue 47). Of a finished task, anything but its shards' paths and "
            f"row counts (it folds each task's result into the run's sums as it comes, in task order: "
            f"curate/engine/run/execution.py's _Folded; it kept every TaskResult, with a StepStats for each of the "
            f"{len(steps)} step labels, until its stage ended). The trace parts' schemas (curate/trace.py "
            f"trace_schema folds them a part at a time: a list of the 1,500 parts' schemas at 1,000 files held "
            f"3.7 MB). The merging of each step's trace parts: publish.py hands the merges to the run's workers, "
            f"as the data's (a merge holds a row group of a step's removed rows, up to 65,536 rows or 16 MB, and "
            f"the writer's buffers: +10 MB at the driver's peak at 1,000 files); that one is moved, not gone, it "
            f"is the largest other process's growth here, bounded by the group, not by the files. "
            f"minhash_dedup's docs rows as a file per batch of its fit: its DuckDB joins in the driver (the ranks, "
            f"the decisions' join) held state per file and per row group read, 250 files of 2 rows at 1,000 WARC "
            f"files; the driver now writes one docs.parquet in batch order, 65,536 rows a row group "
            f"(operators/dedup/signature_pass.py), and the joins read it as they read 3 files. The plan's JSON "
            f"(_work/plan.json, written at each stage's start) encoded at once by json.dumps: 1,000 tasks' "
            f"entries peaked 2.1 MB for 0.2 MB of bytes, now encoded a piece at a time (Plan.json_bytes). "
            f"The input files' fingerprints for --resume's check, no longer kept for the run (0.2 MB). Measured "
            f"outside this section, the driver's VmHWM (the kernel's count of its peak) with --no-report, 10 vs "
            f"1,000 files: +7.0 MiB before these last three, +3.7 MiB with one docs file, +2.8 MiB with the "
            f"fingerprints and the plan's JSON too (222.7 vs 225.5 MiB, 233.5 vs 236.5 MB: sampled every 0.1 s, "
            f"the table above misses more of the 10 files' peak, a moment of the fit's DuckDB joins in a short "
            f"run). Of "
            f"report.html: Arrow decoding its sample rows on its thread pool (each thread's malloc arena kept what "
            f"it decoded: `curate report` alone on the 1,000 files' run peaked 9.9 MiB above the 10 files', now "
            f"3.6-5.3 MiB over several runs; curate/report/scan.py batches; the traces are 11-35 KB on disk, so "
            f"what grew was the arenas, not the sample rows as read before) and on mimalloc (report.py "
            f"system_pool: it kept the pages of every sample decoded); the map from `_id` prefixes to input "
            f"files, every tail of every path (9,000 entries, 1.4 MB at 1,000 files), now only the sources its "
            f"table shows (sources.py file_names).\n\n"
            f"What still grows, measured outside this section. The run's driver (+2.8 MiB VmHWM at 1,000 files, "
            f"at its peak in minhash_dedup's fit): Python objects kept per input file, 1.5 MB at the fit's start "
            f"(tracemalloc, 1,000 vs 10 files): the Source entries and the plan's tasks (0.5 MB; the plan and the "
            f"manifest list every input file, by design), the progress display's samples (0.6 MB; rich keeps at "
            f"most 1,000 a bar, so they stop growing there), what pickling the tasks for the workers left on them "
            f"(0.13 MB), the preflight's schema of each file (0.05 MB); and the fit's Jaccard estimates, which "
            f"gather the duplicates' signatures (about 1 MB for the 499 duplicates at 1,000 files: this corpus's "
            f"rows grow with its files; 64 MB a chunk at most). The report (3.6-5.3 MiB, `curate report` alone): the "
            f"manifest read with an entry per input file (0.9 MB), and about 1 MB in each of the sections that "
            f"read the traces and the data (sources, removal reasons, kept and removed rows, duplicates): not "
            f"Python objects (its heap grows 0.4 MB), not memory freed and kept by malloc (malloc_trim after each "
            f"section lowers both counts alike), and not DuckDB's allocator flush threshold or its threads (tried, "
            f"no change); not broken down further.\n")
    h.emit(args, body, [[f"fineweb recipe peak RSS, {counts[0]:,} -> {counts[-1]:,} WARC files", "", "",
                         f"driver x{growth(runs):.3f} (x{growth(drivers):.3f} with report.html), "
                         f"largest worker/sandbox x{growth(others):.3f}"]])


if __name__ == "__main__":
    main()
