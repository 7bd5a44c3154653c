"""MinHash signing (operators/dedup/minhash.py `signatures`, both dedup steps' hot loop) in blocks
of rows that stay in the CPU's cache vs one pass over a whole batch per permutation (the code
before, kept here as the baseline), on the shingle sets of demo-corpus documents.

    python bench/sections/minhash_signing.py [--docs 30000] [--batch 8192] [--repeats 3] [--section-out PATH]

Both run in this process, one thread, on the same batches (word 5-gram shingles of the first
`--docs` documents of the corpus, as containment_dedup and minhash_dedup shingle them: 128
permutations, seed 0), interleaved `--repeats` times (figures: the medians); the signatures must
be equal, value for value. Shingling is done once, before, and not timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import statistics
import time

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.json as pj

from sections import global_memory as gm
import harness as h
from curate_operators.dedup.minhash import EMPTY, signatures
from curate_operators.dedup.minhash import permutations as make_permutations
from curate_operators.dedup.shingles import ShingleSpec, shingle_sets


def whole_batch_signatures(sets, a, b):
    """The code before: one pass over every hash of the batch per permutation."""
    sizes = sets.sizes
    out = np.full((len(sizes), len(a)), EMPTY, dtype=np.uint64)
    nonempty = np.flatnonzero(sizes > 0)
    if len(nonempty) == 0:
        return out
    starts = sets.offsets[nonempty]
    for i in range(len(a)):
        v = sets.values * a[i]
        v += b[i]
        out[nonempty, i] = np.minimum.reduceat(v, starts)
    return out


def timed(fn, batches, a, b) -> tuple[float, float, list]:
    wall, cpu = time.perf_counter(), time.process_time()
    sigs = [fn(s, a, b) for s in batches]
    return time.perf_counter() - wall, time.process_time() - cpu, sigs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=30_000)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=3)
    h.add_section_args(ap)
    args = ap.parse_args()
    folder = gm.text_corpus(args.docs, 2)
    columns, read = [], 0
    for path in h.corpus_files(folder):
        if read >= args.docs:
            break
        columns.append(pj.read_json(path).column("text"))
        read += len(columns[-1])
    texts = pl.from_arrow(pa.chunked_array([c for col in columns for c in col.chunks])).head(args.docs)
    spec = ShingleSpec(kind="word", n=5)
    batches = [shingle_sets(texts.slice(i, args.batch), spec) for i in range(0, len(texts), args.batch)]
    a, b = make_permutations(128, 0)
    sides = {"blocks of rows (now)": signatures, "whole batch per permutation (before)": whole_batch_signatures}
    runs: dict[str, list] = {name: [] for name in sides}
    for _ in range(args.repeats):
        for name, fn in sides.items():
            runs[name].append(timed(fn, batches, a, b))
    now, before = (runs[name] for name in sides)
    if not all(np.array_equal(x, y) for x, y in zip(now[-1][2], before[-1][2])):
        raise SystemExit("the signatures differ")
    hashes = sum(len(s.values) for s in batches)
    med = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)) for name, rs in runs.items()}
    rows = [[name, f"{wall:.2f}", f"{cpu:.2f}", f"{hashes * 128 / wall / 1e6:,.0f}",
             ", ".join(f"{r[0]:.2f}" for r in runs[name])] for name, (wall, cpu) in med.items()]
    flags = open("/proc/cpuinfo").read().split("flags", 1)[-1].split("\n", 1)[0].split()
    body = "\n".join([
        f"{len(texts):,} demo documents ({folder.name}), {len(batches)} batches of {args.batch:,}, {hashes:,} shingle "
        f"hashes; 128 permutations; one thread; {args.repeats} interleaved rounds (medians). The CPU has "
        f"{'AVX-512' if 'avx512f' in flags else 'no AVX-512'}. Signatures equal value for value.",
        "",
        h.table(["signing", "wall s", "CPU s", "M hash-permutations/s", "walls"], rows),
    ])
    (wall_now, cpu_now), (wall_before, cpu_before) = med.values()
    h.emit(args, body, [[f"MinHash signing, blocks of rows vs a whole batch per permutation ({len(texts):,} docs)",
                         h.ratio(wall_before, wall_now), h.ratio(cpu_before, cpu_now), "the same signatures"]])


if __name__ == "__main__":
    main()
