"""gopher_quality vs datatrove (GopherQualityFilter + GopherRepetitionFilter): docs/s and agreement.

    python bench/bench_gopher.py [--docs 3000] [--batch 1000] [--workers 2]

Both sides get the same synthetic web-like documents (bench/gopher_webtext.py) split into
`--workers` contiguous shards, one process per shard, each pinned to its own core; docs/s is
all documents over the time of the slowest process (timed inside it, after loading the data and
a warm-up), by the wall clock and by the process's CPU time (steadier on a shared machine). Our processes receive the shard as a
stream of Arrow batches of `--batch` rows; datatrove's receive Documents one by one (its
normal execution). datatrove runs in bench/.venvs/gopher-anchor (see --help of the anchor).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / ".data"
ANCHOR_PYTHON = BENCH / ".venvs" / "gopher-anchor" / "bin" / "python"


def ours(docs_path: str, out_path: str, batch_size: int) -> None:
    """One worker: time gopher_quality over the shard as a stream of record batches."""
    import pyarrow as pa

    sys.path.insert(0, str(ROOT))
    from operators.filters.gopher import GopherQuality

    with open(docs_path) as f:
        texts = [json.loads(line)["text"] for line in f]
    batches = [pa.RecordBatch.from_pydict({"text": pa.array(texts[i:i + batch_size], pa.large_string())})
               for i in range(0, len(texts), batch_size)]
    op = GopherQuality()
    op.keep(batches[0].slice(0, 5))  # warm up (regex compilation); not timed
    started, cpu_started = time.perf_counter(), time.process_time()
    verdicts = [op.keep(b) for b in batches]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    kept = [bool(k) for v in verdicts for k in v.keep]
    reasons = [r for v in verdicts for r in v.reason.to_pylist()]
    with open(out_path, "w") as f:
        json.dump({"seconds": seconds, "cpu": cpu, "docs": len(texts), "kept": kept, "reasons": reasons}, f)


def _shards(n_docs: int, workers: int, seed: int) -> list[Path]:
    sys.path.insert(0, str(BENCH))
    from gopher_webtext import make_documents

    DATA.mkdir(exist_ok=True)
    paths = [DATA / f"gopher-{n_docs}-{seed}-{i}of{workers}.jsonl" for i in range(workers)]
    if not all(p.exists() for p in paths):
        docs = make_documents(n_docs, seed)
        per = -(-n_docs // workers)
        for i, path in enumerate(paths):
            with open(path, "w") as f:
                f.writelines(json.dumps({"text": t}) + "\n" for t in docs[i * per:(i + 1) * per])
    return paths


def _run_side(commands: list[list[str]], outs: list[Path]) -> dict:
    """Start one pinned process per shard, wait, merge their results; the time is the slowest's."""
    cores = sorted(os.sched_getaffinity(0))
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen(["taskset", "-c", str(cores[i % len(cores)]), *cmd], env=env)
             for i, cmd in enumerate(commands)]
    for p in procs:
        if p.wait():
            raise SystemExit(f"{commands[procs.index(p)]} failed")
    parts = [json.loads(o.read_text()) for o in outs]
    return {
        "seconds": max(p["seconds"] for p in parts),
        "cpu": max(p["cpu"] for p in parts),
        "docs": sum(p["docs"] for p in parts),
        "kept": [k for p in parts for k in p["kept"]],
        "reasons": [r for p in parts for r in p["reasons"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=2, metavar=("DOCS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return ours(*args.worker, args.batch)

    shards = _shards(args.docs, args.workers, args.seed)
    ours_out = [p.with_suffix(".ours.json") for p in shards]
    anchor_out = [p.with_suffix(".datatrove.json") for p in shards]
    us = _run_side([[sys.executable, __file__, "--batch", str(args.batch), "--worker", str(p), str(o)]
                    for p, o in zip(shards, ours_out)], ours_out)
    dt = _run_side([[str(ANCHOR_PYTHON), str(BENCH / "gopher_anchor.py"), str(p), str(o)]
                    for p, o in zip(shards, anchor_out)], anchor_out)

    n = us["docs"]
    agree = sum(a == b for a, b in zip(us["kept"], dt["kept"]))
    print(f"documents: {n} ({sum(s.stat().st_size for s in shards) / n / 1000:.1f} KB mean), "
          f"workers: {args.workers}, batch: {args.batch}")
    print(f"{'':26s} {'docs/s (wall)':>14s} {'docs/s (CPU)':>14s}")
    for name, side in (("curate gopher_quality", us), ("datatrove Gopher filters", dt)):
        print(f"{name:26s} {n / side['seconds']:14.0f} {n / side['cpu']:14.0f}  (kept {sum(side['kept']) / n:.1%})")
    print(f"speed-up: {dt['seconds'] / us['seconds']:.1f}x wall, {dt['cpu'] / us['cpu']:.1f}x CPU;   "
          f"keep/drop agreement: {agree / n:.2%}")
    pairs = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                                if ka != kb)
    print("disagreements (ours reason, datatrove reason): count")
    for (a, b), c in pairs.most_common(12):
        print(f"  {a or 'kept'}, {b or 'kept'}: {c}")
    both = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                               if not ka and not kb)
    print("dropped by both (ours reason, datatrove reason): count")
    for (a, b), c in both.most_common(12):
        print(f"  {a}, {b}: {c}")


if __name__ == "__main__":
    main()
