"""Peak memory of `curate run` (gopher_quality + exact_dedup) on ~1 GB vs ~4 GB of uncompressed JSONL.

    python bench/sections/memory.py [--workers 2] [--small-gb 1] [--large-gb 4] [--section-out PATH]

The inputs are the first files of the demo corpus (bench/.data/corpus), decompressed once into
bench/.data/corpus-jsonl/, as many as it takes to reach each size. Peak RSS is the most the whole
process tree (driver + workers) held at once, sampled every 0.1 s. Target: the 4 GB peak within 1.3x
of the 1 GB peak (memory bounded by batches in flight and spilled state, not by the input size).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import gzip
import shutil

import harness as h


def jsonl_files(total_gb: float):
    """Uncompressed copies of the first corpus files, until they hold `total_gb` GB."""
    folder = h.CORPUS_DIR.with_name(h.CORPUS_DIR.name + "-jsonl")
    folder.mkdir(parents=True, exist_ok=True)
    out, size = [], 0
    for src in h.corpus_files(h.corpus()):
        dst = folder / src.name.removesuffix(".gz")
        if not dst.exists():
            tmp = dst.with_suffix(".tmp")
            with gzip.open(src, "rb") as fin, open(tmp, "wb") as fout:
                shutil.copyfileobj(fin, fout, 16 << 20)
            tmp.rename(dst)
        out.append(dst)
        size += dst.stat().st_size
        if size >= total_gb * 1e9:
            return out
    raise SystemExit(f"the corpus holds only {size / 1e9:.2f} GB of JSONL; need {total_gb} GB")


def run(files, label, workers):
    work = h.RUNS / "memory"
    inputs = work / f"input-{label}"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir(parents=True)
    for f in files:
        (inputs / f.name).symlink_to(f)
    recipe = h.write_recipe(work / f"recipe-{label}.yaml", str(inputs / "*.jsonl"), work / f"out-{label}",
                            ["gopher_quality", "exact_dedup"])
    m = h.curate_run(recipe, "--workers", str(workers), "--overwrite", log=work / f"curate-{label}.log")
    h.require_ok(m, f"curate run ({label})")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--small-gb", type=float, default=1.0)
    ap.add_argument("--large-gb", type=float, default=4.0)
    h.add_section_args(ap)
    args = ap.parse_args()
    runs = {}
    for gb in (args.small_gb, args.large_gb):
        files = jsonl_files(gb)
        m = run(files, f"{gb:g}gb", args.workers)
        runs[gb] = (files, m)
        print(f"{gb:g} GB: {m.seconds:.0f}s, peak {m.peak_rss_gb:.2f} GB")
    small, large = runs[args.small_gb][1], runs[args.large_gb][1]
    rows = [[f"{gb:g} GB", f"{len(files)} files, {h.size_gb(files):.2f} GB", f"{m.seconds:.1f}", f"{m.cpu_seconds:.1f}",
             f"{m.peak_rss_gb:.2f}"] for gb, (files, m) in runs.items()]
    peak_ratio = large.peak_rss_gb / small.peak_rss_gb
    body = "\n".join([
        f"curate run, gopher_quality + exact_dedup, --workers {args.workers}; uncompressed JSONL input (the first "
        f"files of the demo corpus); load average at the end {h.load()}.", "",
        h.table(["input", "files", "wall s", "CPU s (tree)", "peak RSS GB (process tree)"], rows), "",
        f"Peak ratio large/small: {peak_ratio:.2f}x for {args.large_gb / args.small_gb:g}x the input (target <= 1.3x). "
        f"Time ratio large/small: {large.seconds / small.seconds:.2f}x wall, "
        f"{large.cpu_seconds / small.cpu_seconds:.2f}x CPU.",
    ])
    h.emit(args, body, [[f"peak RSS, {args.large_gb:g} GB vs {args.small_gb:g} GB input", "", "",
                         f"{peak_ratio:.2f}x (target <= 1.3x)"]])

if __name__ == "__main__":
    main()
