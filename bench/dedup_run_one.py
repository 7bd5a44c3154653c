"""One curate dedup run in its own process (for the speed bench): fit, apply, write kept rows.

Default: the operator driven directly over the corpus files. --engine: the same step as a
one-step recipe through the local engine (`curate run`: stage shards, worker processes,
trace, manifest). Prints JSON {removed, seconds}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import dedup_drive  # noqa: E402
from operators.dedup.containment import ContainmentDedup  # noqa: E402
from operators.dedup.minhash_dedup import MinhashDedup  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("op", choices=["containment_dedup", "minhash_dedup"])
    ap.add_argument("data", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", action="store_true", help="run as a recipe through the local engine")
    args = ap.parse_args()
    if args.engine:
        return run_engine(args)
    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "out").mkdir(parents=True)
    cls = ContainmentDedup if args.op == "containment_dedup" else MinhashDedup
    op = cls(cls.Params(workers=args.workers))
    started = time.perf_counter()
    state = op.fit(dedup_drive.batches(args.data), args.work / "fit")
    removed = 0
    writer = None
    for batch in dedup_drive.batches(args.data):
        verdict = op.apply(batch, state)
        removed += int((~verdict.keep).sum())
        kept = batch.filter(pa.array(verdict.keep)).select(["_id", "text"])
        if writer is None:
            writer = pq.ParquetWriter(args.work / "out" / "part-00000.parquet", kept.schema, compression="zstd")
        writer.write_batch(kept)
    if writer is not None:
        writer.close()
    print(json.dumps({"removed": removed, "seconds": time.perf_counter() - started}))


def run_engine(args) -> None:
    from curate import recipe
    from curate.engine.runner import RunOptions, run

    r = recipe.load(text=f"""
input: {{path: '{args.data}/*.parquet', id_column: id}}
output: {{path: '{args.work}'}}
steps:
  - {args.op}: {{workers: {args.workers}}}
""")
    started = time.perf_counter()
    manifest = run(r, RunOptions(workers=args.workers, overwrite=True))
    removed = sum(step["removed"] for step in manifest["steps"])
    print(json.dumps({"removed": removed, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
