"""Run the MinHash anchors on a Parquet corpus (id, text); print JSON {seconds, removed: [ids]}.

Runs inside bench/.venvs/dedup (bench/setup_dedup_anchors.sh):

    bench/.venvs/dedup/bin/python bench/dedup_anchors.py datatrove DATA WORK --workers 2
    bench/.venvs/dedup/bin/python bench/dedup_anchors.py text-dedup DATA WORK --workers 2

datatrove: its documented 4-stage MinHash pipeline (signatures, buckets, cluster, filter) with
the default MinhashConfig (5-grams, 14 bands x 8 rows), LocalPipelineExecutor.
text-dedup: `python -m text_dedup.minhash` with its defaults (5-grams, 250 permutations,
threshold 0.7 -> bands/rows from its optimal_param), reading the Parquet files through
Hugging Face datasets.
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path


def all_ids(data: Path) -> list[str]:
    import pyarrow.dataset as ds

    return ds.dataset(str(data), format="parquet").to_table(columns=["id"]).column("id").to_pylist()


def run_datatrove(data: Path, work: Path, workers: int) -> set[str]:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                  MinhashDedupFilter, MinhashDedupSignature)
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import JsonlWriter

    config = MinhashConfig()
    tasks = len(glob.glob(str(data / "*.parquet")))

    def reader():
        return ParquetReader(str(data), text_key="text", id_key="id", glob_pattern="*.parquet")

    stages = [
        LocalPipelineExecutor(pipeline=[reader(), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
                              tasks=tasks, workers=workers, logging_dir=str(work / "logs/1")),
        LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=config)],
                              tasks=config.num_buckets, workers=workers, logging_dir=str(work / "logs/2")),
        LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"), config=config)],
                              tasks=1, workers=1, logging_dir=str(work / "logs/3")),
        LocalPipelineExecutor(pipeline=[reader(), MinhashDedupFilter(input_folder=str(work / "remove"),
                                                                     exclusion_writer=JsonlWriter(str(work / "removed"), compression=None)),
                                        JsonlWriter(str(work / "kept"), compression=None)],
                              tasks=tasks, workers=workers, logging_dir=str(work / "logs/4")),
    ]
    for stage in stages:
        stage.run()
    removed = set()
    for f in glob.glob(str(work / "removed" / "*.jsonl")):
        with open(f) as fh:
            removed.update(json.loads(line)["id"] for line in fh)
    return removed


def run_text_dedup(data: Path, work: Path, workers: int) -> set[str]:
    out = work / "out"
    subprocess.run(
        [sys.executable, "-m", "text_dedup.minhash", "--path", "parquet", "--data_files", str(data / "*.parquet"),
         "--split", "train", "--cache_dir", str(work / "cache"), "--column", "text", "--output", str(out),
         "--num_proc", str(workers)],
        check=True, stdout=subprocess.DEVNULL,
    )
    from datasets import load_from_disk

    kept = set(load_from_disk(str(out))["id"])
    return set(all_ids(data)) - kept


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=["datatrove", "text-dedup"])
    ap.add_argument("data", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    started = time.perf_counter()
    removed = (run_datatrove if args.tool == "datatrove" else run_text_dedup)(args.data, args.work, args.workers)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "removed": sorted(removed)}))


if __name__ == "__main__":
    main()
