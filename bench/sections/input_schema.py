"""What deciding the input's schema from every file costs (curate/io/input_schema.py): a run of
`normalize_text` over JSONL.gz demo files at this commit beside the same run at the commit
before the schema scan (cab126b, checked out in a worktree under bench/.runs/), interleaved.

    python bench/sections/input_schema.py [--docs 200000] [--files 8] [--rounds 3] [--section-out PATH]

The scan reads each JSON file whole before the run (threads, a few files at once), so a JSONL
input is parsed twice: once for its types, once for its rows. CPU-seconds are the whole process
tree's (harness.run_measured); the outputs' row counts must agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import subprocess

import harness as h

BEFORE = "cab126b"  # main before the whole-input schema


def worktree(commit: str) -> Path:
    place = h.RUNS / f"worktree-{commit}"
    if not place.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(place), commit], cwd=h.REPO, check=True,
                       capture_output=True)
    return place


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    files = h.demo_files("schema", args.docs, args.files)
    glob = str(files[0].parent / "*.jsonl.gz")
    trees = {"curate (this commit)": h.REPO, f"curate at {BEFORE}": worktree(BEFORE)}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    rows = {}
    load_before = h.load()
    for r in range(args.rounds):
        for name, tree in trees.items():
            out = h.RUNS / f"schema-{r}-{abs(hash(name))}"
            recipe = h.write_recipe(h.RUNS / f"schema-{abs(hash(name))}.yaml", glob, out, ["normalize_text"])
            m = h.run_measured([sys.executable, "-m", "curate.cli", "run", str(recipe), "-w", str(args.workers),
                                "--overwrite", "--no-report"], cwd=tree)
            h.require_ok(m, name)
            results[name].append((m.seconds, m.cpu_seconds))
            rows[name] = h.parquet_rows(out / "data")
    assert len(set(rows.values())) == 1, rows
    table = h.table(["variant", "wall s (median)", "CPU s (median)", "wall vs this commit", "CPU vs this commit"],
                    [[n, f"{w:.1f}", f"{c:.1f}", dw, dc] for n, w, c, dw, dc in h.medians_vs_first(results)])
    body = (f"## The whole-input schema's cost (JSONL.gz read twice)\n\n"
            f"`python bench/sections/input_schema.py --docs {args.docs} --files {args.files} --rounds {args.rounds}`\n\n"
            f"- Machine: {h.machine()}; load average {load_before} before, {h.load()} after\n"
            f"- {args.docs:,} demo documents in {args.files} JSONL.gz files, `normalize_text`, -w {args.workers}, "
            f"{args.rounds} interleaved rounds; {next(iter(rows.values())):,} rows out in both\n\n{table}\n")
    h.emit(args, body)


if __name__ == "__main__":
    main()
