"""Quality bench: containment_dedup vs brute-force exact containment, next to the MinHash baselines.

On one planted corpus (bench/corpora/dedup_corpus.py), in one run, every tool through its normal entry point
(bench/anchors/dedup_tools.py): curate's containment_dedup and minhash_dedup (`curate run`), datatrove's MinHash
pipeline with curate's shingles, bands and rows, datatrove's MinHash with its defaults, and text-dedup's
MinHash with its defaults (bench/anchors/dedup_minhash.py, in bench/.venvs/dedup), each scored against the
documents that brute-force exact containment at tau says must go (bench/corpora/dedup_truth.py): recall and
precision of removed documents, and recall per planted kind.

    python bench/sections/dedup_quality.py [--docs 20000] [--section-out PATH]
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

import pyarrow.dataset as ds

from anchors import dedup_tools as dt
from corpora import dedup_truth
import harness as h


def truth(docs: int, seed: int, tau: float) -> set[str]:
    data = dt.corpus(docs, seed)
    truth_file = data.parent / f"truth-tau{tau}.json"
    if not truth_file.exists():
        table = ds.dataset(str(data), format="parquet").to_table(columns=["id", "text"])
        truth_file.write_text(json.dumps(sorted(dedup_truth.contained_ids(table, tau))))
    return set(json.loads(truth_file.read_text()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau", type=float, default=0.8)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()

    data = dt.corpus(args.docs, args.seed)
    must_go = truth(args.docs, args.seed, args.tau)
    table = ds.dataset(str(data), format="parquet").to_table(columns=["id", "kind"])
    kind = dict(zip(table.column("id").to_pylist(), table.column("kind").to_pylist()))
    work = h.RUNS / "dedup-quality"
    runs = {
        "curate containment_dedup (tau 0.8)": dt.run_curate("containment_dedup", data, work / "containment",
                                                             args.workers, args.tau),
        "curate minhash_dedup (14x8)": dt.run_curate("minhash_dedup", data, work / "minhash", args.workers),
        "datatrove MinHash (curate's shingles, 14x8)": dt.run_anchor("datatrove", data, work / "datatrove",
                                                                     args.workers),
        "datatrove MinHash (defaults: spaCy words, 14x8)": dt.run_anchor("datatrove-defaults", data,
                                                                         work / "datatrove-defaults", args.workers),
        "text-dedup MinHash (defaults)": dt.run_anchor("text-dedup", data, work / "text-dedup", args.workers),
    }

    kinds = ["excerpt", "edited_excerpt", "near_copy", "base", "boilerplate"]
    in_truth = {k: {i for i in must_go if kind[i] == k} for k in kinds}
    lines = [
        f"Corpus: {args.docs:,} documents (seed {args.seed}); brute-force exact containment at tau={args.tau} "
        f"says {len(must_go):,} must go ({', '.join(f'{k} {len(v)}' for k, v in in_truth.items())}). "
        f"{args.workers} workers per tool; load average at the end {h.load()}.",
        "Recall/precision are of removed documents against that set; per-kind columns are recall within the kind. "
        "Wall and CPU seconds are of each tool's whole process tree (at this size, start-up is a large share: "
        "speed is compared in the dedup speed section).",
        "",
        "| tool | removed | recall | precision | " + " | ".join(f"recall {k}" for k in kinds) + " | wall s | CPU s |",
        "|---" * (6 + len(kinds)) + "|",
    ]
    notes = []
    for name, r in runs.items():
        if isinstance(r, str):
            notes.append(f"- {name}: did not run: {r}")
            continue
        tp = len(r.removed & must_go)
        per_kind = " | ".join(f"{len(r.removed & v) / len(v):.3f}" if v else "-" for v in in_truth.values())
        lines.append(f"| {name} | {len(r.removed):,} | {tp / max(1, len(must_go)):.4f} | "
                     f"{tp / max(1, len(r.removed)):.4f} | {per_kind} | {r.m.seconds:.1f} | {r.m.cpu_seconds:.1f} |")
    lines += [""] + notes if notes else []
    lines += [
        "",
        "Notes. The Jaccard tools (MinHash) remove one member of each near-copy pair but cannot see excerpts (an "
        "excerpt of 20-90% has Jaccard ~0.2-0.9 with its source): containment and MinHash are different algorithms, "
        "and this table shows what each finds. Where a near-copy is slightly larger than its source, brute force "
        "removes the source ('base' column), so a Jaccard tool that keeps the other member scores a miss and a false "
        "removal for that pair. text-dedup splits text on every single non-alphanumeric character, so a doubled "
        "space or a tab becomes an empty token and changes its 5-grams; the corpus's light edits re-wrap whitespace, "
        "which is why its near-copy recall is low here. datatrove's defaults tokenize with spaCy (blank English).",
    ]
    headlines = []
    cont = runs["curate containment_dedup (tau 0.8)"]
    if not isinstance(cont, str):
        tp = len(cont.removed & must_go)
        headlines.append([f"containment_dedup recall / precision vs brute force ({args.docs:,} docs)",
                          f"{tp / max(1, len(must_go)):.4f} / {tp / max(1, len(cont.removed)):.4f}", "",
                          "quality, not speed"])
    h.emit(args, "\n".join(lines), headlines)


if __name__ == "__main__":
    main()
