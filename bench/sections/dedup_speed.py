"""Dedup speed and memory, like for like: curate's minhash_dedup vs datatrove's MinHash, same shingles, bands, rows.

    python bench/sections/dedup_speed.py [--docs 250000] [--workers 2] [--scale-docs N ...] [--section-out PATH]

One planted corpus (bench/corpora/dedup_corpus.py; Parquet shards with id, text, kind, source_id), read by every
tool from the same files; each tool writes the kept documents as Parquet (zstd) and keeps the removed ones
(curate: its trace, which stores removed rows; datatrove: the filter's exclusion_writer, Parquet zstd).
Each runs through its normal entry point as its own process tree, measured by bench/harness/ (wall, CPU
seconds of the whole tree, peak RSS), with `--workers` processes:

- curate minhash_dedup: `curate run` on a one-step recipe, word 5-grams (NFKC, lowercase, \\w+ words),
  14 bands x 8 rows, all set explicitly in the recipe;
- datatrove MinHash: its 4 stages on LocalPipelineExecutor with the same shingles (a tokenizer that splits
  words as curate does, normalisation set to lowercase + whitespace), 14 buckets x 8 hashes
  (bench/anchors/dedup_minhash.py, `datatrove`);
- curate containment_dedup (tau 0.8), `curate run`, beside datatrove's MinHash: a different algorithm
  (containment finds excerpts that Jaccard cannot), so its ratio is not like for like.

`--scale-docs`: curate-only runs on other corpus sizes, for the scaling of both curate operators.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse

from anchors import dedup_tools as dt
import harness as h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=250_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale-docs", type=int, nargs="*", default=[])
    h.add_section_args(ap)
    args = ap.parse_args()

    data = dt.corpus(args.docs, args.seed)
    work = h.RUNS / "dedup-speed"
    runs = {
        "curate minhash_dedup (curate run)": dt.run_curate("minhash_dedup", data, work / "minhash", args.workers),
        "datatrove MinHash (same shingles, 14x8)": dt.run_anchor("datatrove", data, work / "datatrove", args.workers),
        "curate containment_dedup (curate run)": dt.run_curate("containment_dedup", data, work / "containment",
                                                                args.workers),
    }
    algorithm = {"curate minhash_dedup (curate run)": "MinHash LSH, Jaccard",
                 "datatrove MinHash (same shingles, 14x8)": "MinHash LSH, Jaccard",
                 "curate containment_dedup (curate run)": "containment >= 0.8 (different algorithm)"}
    rows, notes, headlines = [], [], []
    for name, r in runs.items():
        if isinstance(r, str):
            notes.append(f"- {name}: did not run: {r}")
            continue
        m = r.m
        rows.append([name, algorithm[name], f"{args.docs:,}", f"{m.seconds:.1f}", f"{args.docs / m.seconds:,.0f}",
                     f"{m.cpu_seconds:.1f}", f"{args.docs / m.cpu_seconds:,.0f}", f"{m.peak_rss_gb:.2f}",
                     f"{len(r.removed):,}"])
    scale = []
    for n in sorted(args.scale_docs):
        d = dt.corpus(n, args.seed)
        for op in ("minhash_dedup", "containment_dedup"):
            r = dt.run_curate(op, d, work / f"scale-{op}", args.workers)
            scale.append([f"curate {op} (curate run)", f"{n:,}", f"{r.m.seconds:.1f}", f"{n / r.m.seconds:,.0f}",
                          f"{r.m.cpu_seconds:.1f}", f"{n / r.m.cpu_seconds:,.0f}", f"{r.m.peak_rss_gb:.2f}",
                          f"{len(r.removed):,}"])

    lines = [f"Corpus: {args.docs:,} planted documents (seed {args.seed}), "
             f"{len(list(data.glob('*.parquet')))} Parquet files; {args.workers} workers per tool; load average at "
             f"the end {h.load()}. CPU s: user + system of the tool's whole process tree.", "",
             h.table(["tool", "algorithm", "documents", "wall s", "docs/s (wall)", "CPU s", "docs/CPU-s",
                      "peak RSS GB (tree)", "removed"], rows)]
    mh, dtr, ct = (runs[k] for k in runs)
    ratio_rows = []
    if not isinstance(mh, str) and not isinstance(dtr, str):
        w, c = h.ratio(dtr.m.seconds, mh.m.seconds), h.ratio(dtr.m.cpu_seconds, mh.m.cpu_seconds)
        ratio_rows.append(["curate minhash_dedup vs datatrove MinHash (like for like)", w, c])
        headlines.append([f"MinHash dedup, curate vs datatrove, same shingles/bands/rows ({args.docs:,} docs)", w, c,
                          "like for like"])
    if not isinstance(ct, str) and not isinstance(dtr, str):
        w, c = h.ratio(dtr.m.seconds, ct.m.seconds), h.ratio(dtr.m.cpu_seconds, ct.m.cpu_seconds)
        ratio_rows.append(["curate containment_dedup vs datatrove MinHash (different algorithms)", w, c])
        headlines.append([f"containment_dedup vs datatrove MinHash ({args.docs:,} docs)", w, c,
                          "different algorithms"])
    if ratio_rows:
        lines += ["", h.table(["comparison", "curate speed-up, wall", "curate speed-up, CPU"], ratio_rows)]
    if not isinstance(mh, str) and not isinstance(dtr, str):
        check = dt.check_tokens(data)
        lines += ["", "Same work on both sides: "
                  + (f"on the first {check['docs']:,} documents, datatrove's tokenizer setting gives the same word list "
                     f"as curate's shingling for {check['same']:,}. " if check else "")
                  + f"curate removed {len(mh.removed):,} documents, datatrove {len(dtr.removed):,}; documents in a "
                  f"duplicate cluster: {len(mh.clustered):,} and {len(dtr.clustered):,}, Jaccard of the two sets "
                  f"{dt.jaccard(mh.clustered, dtr.clustered):.3f}. The two draw different random permutations (and hash "
                  "n-grams differently), so pairs near the LSH threshold fall on either side at random; of curate's "
                  "(removed, kept) pairs, by curate's estimated Jaccard, those datatrove also put in one cluster:", "",
                  h.table(["estimated Jaccard", "curate pairs", "same datatrove cluster", "share"],
                          dt.pair_agreement(mh, dtr))]
    if scale:
        lines += ["", "Scaling (curate only):", "",
                  h.table(["tool", "documents", "wall s", "docs/s (wall)", "CPU s", "docs/CPU-s", "peak RSS GB",
                           "removed"], scale)]
    lines += [""] + notes if notes else []
    lines += ["", "Which member of a cluster is kept differs: curate keeps the best-ranked (`prefer`, then the "
              "smallest _id), datatrove the root of its union-find. datatrove's run also writes cluster ids "
              "(save_cluster_id / load_cluster_ids) to compare clusters; curate's trace names each removed "
              "document's kept member by default."]
    h.emit(args, "\n".join(lines), headlines)


if __name__ == "__main__":
    main()
