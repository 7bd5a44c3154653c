"""The DataComp baselines' funnels: every recipes/datacomp-*.yaml through `curate run` on one generated
corpus of image-caption pairs (tests/recipes/datacomp_inputs.py: img2dataset-style tar shards of
coloured JPEGs and PNGs of several sizes, English and German captions, some too short), with a tiny
open_clip model of random weights, a tiny fastText language-ID model trained on the spot, and as
the reference set the tiny model's embeddings of two of the colours. Nothing can be downloaded
here, so the CLIP scores are those of random weights: the funnels show what each baseline's
steps remove and why, and the seconds of each step, not the quality of a real model's choice.

    python bench/sections/datacomp.py [--pairs 2000] [--k 16]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import os
import types

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness import (CURATE, RUNS, add_section_args, emit, load, machine, manifest, require_ok,  # noqa: E402
                     run_measured, table)

from curate.manifest import StepEntry  # noqa: E402
from tests.recipes import datacomp_inputs  # noqa: E402


def reasons(step: StepEntry) -> str:
    top = sorted(step.reasons.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{reason} ({count:,})" for reason, count in top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--k", type=int, default=16, help="image_cluster_filter's clusters")
    add_section_args(ap)
    args = ap.parse_args()
    runs = RUNS / "datacomp"
    runs.mkdir(parents=True, exist_ok=True)
    datacomp_inputs.prepare(runs, types.SimpleNamespace(setenv=os.environ.__setitem__), rows=args.pairs)
    body = (f"Machine: {machine()}.\n\n{args.pairs:,} generated pairs in 2 tar shards; open_clip tiny model of random "
            f"weights; fastText language ID trained on the generated captions; image_cluster_filter k={args.k}. "
            "Random CLIP weights: the funnels show the steps' work and reasons, not a real model's choice.\n\n")
    headlines = []
    for recipe in sorted(datacomp_inputs.RECIPES.glob("datacomp-*.yaml")):
        name, out = recipe.stem, runs / f"out-{recipe.stem}"
        sets = [a.replace("k=4", f"k={args.k}") for a in datacomp_inputs.recipe_args(name, runs)]
        m = run_measured([*CURATE, "run", str(recipe), *sets, "--output", str(out), "--overwrite", "-w", "2",
                          "--no-report"], log=runs / f"{name}.log")
        require_ok(m, f"curate run {name}")
        steps = manifest(out).steps
        rows = [[s.op, f"{s.rows_in:,}", f"{s.rows_out:,}", f"{s.removed:,}", f"{s.seconds:.1f}", reasons(s)]
                for s in steps]
        kept = steps[-1].rows_out
        body += f"### {name}\n\nwall {m.seconds:.1f} s, CPU {m.cpu_seconds:.1f} s; kept {kept:,} of {args.pairs:,}\n\n"
        body += table(["step", "in", "out", "removed", "seconds", "top reasons"], rows) + "\n\n"
        headlines.append([f"{name} on {args.pairs:,} generated pairs", f"{m.seconds:.1f} s", f"{m.cpu_seconds:.1f} s",
                          f"kept {kept / args.pairs:.1%}"])
        print(f"{name}: kept {kept} (load {load()})", flush=True)
    emit(args, body, headlines)


if __name__ == "__main__":
    main()
