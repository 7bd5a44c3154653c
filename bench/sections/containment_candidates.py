"""containment_dedup's candidate pairs where LSH Ensemble bands one MinHash row a band: a pair
asked to share two bands (the default) vs one (the rule before; `ContainmentPlan(max_hits=1)`),
on the demo corpus: candidate pairs by size-class gap, the documents each rule removes, and the
fit's time. Both rules plan for the same miss target (max_miss at the threshold), so the
removed documents should barely differ while the pairs to verify fall.

    python bench/sections/containment_candidates.py [--docs 300000] [--section-out PATH]

The fit runs in this process (its pieces serial, duckdb on --workers threads), on the corpus
files of bench/sections/global_memory.py, read as a run reads them (_ord, _id, text).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import resource
import shutil
import time
from functools import partial

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

from sections import global_memory as gm
import harness as h
from curate_operators.dedup import containment
from curate_operators.dedup.lsh import ContainmentPlan

RULES = {"two shared bands (default)": 2, "one shared band (before)": 1}


def batches(folder):
    first = 0
    for path in h.corpus_files(folder):
        table = pj.read_json(path)
        for b in table.to_batches(max_chunksize=20_000):
            ords = pa.array(np.arange(first, first + len(b), dtype=np.int64))
            first += len(b)
            yield pa.record_batch([ords, b.column("id"), b.column("text")], names=["_ord", "_id", "text"])


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def fit(folder, work, max_hits: int, workers: int) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    original = containment.ContainmentPlan
    containment.ContainmentPlan = partial(ContainmentPlan, max_hits=max_hits)
    try:
        wall, c = time.perf_counter(), cpu()
        step = containment.ContainmentDedup(containment.ContainmentParams(workers=workers), text_column="text")
        decisions = step.fit(batches(folder), work)
        wall, c = time.perf_counter() - wall, cpu() - c
    finally:
        containment.ContainmentPlan = original
    con = duckdb.connect()
    by_gap = dict(con.execute(f"""
        WITH part AS (SELECT DISTINCT ord, part FROM read_parquet('{work}/buckets/r3-*/*.parquet'))
        SELECT pb.part - pa.part AS gap, count(*) FROM read_parquet('{work}/candidates.parquet') c
        JOIN part pa ON pa.ord = c.a JOIN part pb ON pb.ord = c.b GROUP BY 1 ORDER BY 1""").fetchall())
    removed = set(pq.read_table(decisions.path).column("_ord").to_pylist())
    return {"wall": wall, "cpu": c, "by_gap": by_gap, "removed": removed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=300_000)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    folder = gm.text_corpus(args.docs, args.workers)
    plan = ContainmentPlan(128, 0.8, 0.01, 1.41)
    results = {name: fit(folder, h.RUNS / "containment-candidates" / str(hits), hits, args.workers)
               for name, hits in RULES.items()}
    gaps = sorted(set().union(*(r["by_gap"] for r in results.values())))
    two, one = results.values()
    lines = [f"Corpus: {args.docs:,} demo documents ({folder.name}); tau 0.8, 128 permutations, max_miss 0.01, "
             f"partition ratio 1.41 (the defaults). Banding per size-class gap (rows a band, bands, bands a pair must "
             f"share), default rule: " + ", ".join(f"{g}: {plan.gap_banding[g]}" for g in range(10)) + ".", "",
             h.table(["size-class gap", *RULES], [[str(g), *(f"{r['by_gap'].get(g, 0):,}" for r in results.values())]
                                                  for g in gaps]
                     + [["all", *(f"{sum(r['by_gap'].values()):,}" for r in results.values())]]),
             "",
             h.table(["rule", "candidate pairs", "removed", "fit wall s", "fit CPU s"],
                     [[name, f"{sum(r['by_gap'].values()):,}", f"{len(r['removed']):,}", f"{r['wall']:.1f}",
                       f"{r['cpu']:.1f}"] for name, r in results.items()]),
             "",
             f"Removed by one rule only: {len(one['removed'] - two['removed']):,} by one band alone, "
             f"{len(two['removed'] - one['removed']):,} by two bands alone. Load average at the end: {h.load()}."]
    pairs_two, pairs_one = (sum(r["by_gap"].values()) for r in results.values())
    h.emit(args, "\n".join(lines), [[f"containment candidate pairs, two shared bands vs one ({args.docs:,} docs)",
                                      h.ratio(one["wall"], two["wall"]), h.ratio(one["cpu"], two["cpu"]),
                                      f"{pairs_two:,} vs {pairs_one:,} pairs; removed {len(two['removed']):,} vs "
                                      f"{len(one['removed']):,}"]])


if __name__ == "__main__":
    main()
