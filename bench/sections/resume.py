"""Crash and resume: a >= 1M-row `curate run` killed with SIGKILL several times, then finished with --resume.

    python bench/sections/resume.py [--files 69] [--kills 4] [--seed 0] [--workers 2]
                                  [--steps gopher_quality,exact_dedup] [--section-out PATH]

First an uninterrupted run (recipe: `--steps`) of the first `--files` corpus files (69 of the 96
hold ~1.0M rows). Then the same recipe into another output: a fresh run and `--kills - 1`
`--resume` runs, each SIGKILLed (the whole process group: driver and workers) after a random share
(5-35%, seeded) of the uninterrupted run's wall time, then a final `--resume` to the end. Pass: the
data files are byte-identical (sha256) to the uninterrupted run's, and the row counts match.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import hashlib
import random
import shutil

import harness as h


def sha256s(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=69)
    ap.add_argument("--kills", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", default="gopher_quality,exact_dedup", help="the recipe's operators, in order")
    h.add_section_args(ap)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = h.RUNS / "resume"
    inputs = work / "input"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir(parents=True)
    for f in h.corpus_files(h.corpus())[: args.files]:
        (inputs / f.name).symlink_to(f)
    steps = args.steps.split(",")
    glob = str(inputs / "*.jsonl.gz")
    ref_recipe = h.write_recipe(work / "recipe-ref.yaml", glob, work / "ref", steps)
    res_recipe = h.write_recipe(work / "recipe-resumed.yaml", glob, work / "resumed", steps)
    workers = ["--workers", str(args.workers)]

    ref = h.curate_run(ref_recipe, *workers, "--overwrite", log=work / "ref.log")
    h.require_ok(ref, "uninterrupted run")
    rows_in = h.manifest(work / "ref").rows_in
    print(f"uninterrupted: {rows_in:,} rows in {ref.seconds:.0f}s")

    attempts, spent = [], [0.0, 0.0]
    for i in range(args.kills):
        after = rng.uniform(0.05, 0.35) * ref.seconds
        flags = ["--overwrite"] if i == 0 else ["--resume"]
        m = h.curate_run(res_recipe, *workers, *flags, log=work / f"attempt-{i}.log", kill_after=after)
        killed = m.returncode == -9
        spent[0] += m.seconds
        spent[1] += m.cpu_seconds
        if not killed:
            h.require_ok(m, f"attempt {i}")
        attempts.append([i, " ".join(flags), f"{after:.1f}", "SIGKILL" if killed else f"exit {m.returncode}"])
        print(attempts[-1])
    final = h.curate_run(res_recipe, *workers, "--resume", log=work / "final.log")
    h.require_ok(final, "final --resume")
    spent[0] += final.seconds
    spent[1] += final.cpu_seconds
    attempts.append([args.kills, "--resume", "-", f"exit {final.returncode} after {final.seconds:.1f}s"])

    ref_hashes, res_hashes = sha256s(work / "ref" / "data"), sha256s(work / "resumed" / "data")
    same_rows = [(s.step, s.rows_out) for s in h.manifest(work / "ref").steps] == \
                [(s.step, s.rows_out) for s in h.manifest(work / "resumed").steps]
    identical = ref_hashes == res_hashes and bool(ref_hashes)
    body = "\n".join([
        f"{args.files} corpus files, {rows_in:,} rows; steps {' + '.join(steps)}, --workers {args.workers}; "
        f"uninterrupted run {ref.seconds:.1f}s wall, {ref.cpu_seconds:.1f} CPU-s (process tree); kill seed {args.seed}; "
        f"load average at the end {h.load()}.", "",
        h.table(["attempt", "flags", "SIGKILL after s", "outcome"], attempts), "",
        f"All attempts together: {spent[0]:.1f}s wall ({spent[0] / ref.seconds:.2f}x the uninterrupted run), "
        f"{spent[1]:.1f} CPU-s ({spent[1] / ref.cpu_seconds:.2f}x).",
        f"Data files: {len(ref_hashes)} in the uninterrupted run, {len(res_hashes)} after resuming; "
        f"sha256 identical: {'YES' if identical else 'NO'}; per-step row counts equal: {'YES' if same_rows else 'NO'}.",
    ])
    if not identical:
        differing = sorted(n for n in set(ref_hashes) | set(res_hashes) if ref_hashes.get(n) != res_hashes.get(n))
        body += f"\n\nDiffering files: {', '.join(differing[:20])}"
    h.emit(args, body, [[f"SIGKILL x{args.kills} + --resume = uninterrupted ({rows_in:,} rows)",
                         f"{spent[0] / ref.seconds:.2f}x time", f"{spent[1] / ref.cpu_seconds:.2f}x CPU",
                         "byte-identical: " + ("YES" if identical and same_rows else "NO")]])
    if not identical or not same_rows:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
