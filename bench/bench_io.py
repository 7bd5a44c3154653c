"""Plain read -> write: `curate run` with no steps vs bare pyarrow on the same files (JSONL.gz in, and Parquet in).

    python bench/bench_io.py [--files K] [--workers 2]

Inputs: the first K files (default: all) of the demo corpus (bench/.data/corpus), and the same rows as
Parquet (zstd; converted once into bench/.data/corpus-parquet). Bare pyarrow reads each file
(pyarrow.json.read_json / pq.ParquetFile.iter_batches) and writes it with pq.ParquetWriter(zstd), one
process per file over `--workers` processes, like curate's workers. Target: curate >= 50% of bare
pyarrow's throughput.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import time
from pathlib import Path

import pyarrow.json as pjson
import pyarrow.parquet as pq

import harness as h


def _bare_copy(src_dst: tuple[Path, Path]) -> int:
    src, dst = src_dst
    if src.suffix == ".parquet":
        source = pq.ParquetFile(src)
        with pq.ParquetWriter(dst, source.schema_arrow, compression="zstd") as writer:
            for batch in source.iter_batches(batch_size=8192):
                writer.write_batch(batch)
        return source.metadata.num_rows
    table = pjson.read_json(src)
    with pq.ParquetWriter(dst, table.schema, compression="zstd") as writer:
        writer.write_table(table)
    return table.num_rows


def bare_pyarrow(files: list[Path], out: Path, workers: int) -> tuple[float, int]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    jobs = [(f, out / (f.name.split(".")[0] + ".parquet")) for f in files]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        rows = sum(pool.map(_bare_copy, jobs, chunksize=1))
    return time.perf_counter() - start, rows


def parquet_copy_of(files: list[Path]) -> list[Path]:
    """The corpus files as Parquet (zstd), converted once."""
    folder = h.CORPUS_DIR.with_name(h.CORPUS_DIR.name + "-parquet")
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        dst = folder / (f.name.split(".")[0] + ".parquet")
        if not dst.exists():
            tmp = dst.with_suffix(".tmp")
            _bare_copy((f, tmp))
            tmp.rename(dst)
        out.append(dst)
    return out


def curate_copy(files: list[Path], work: Path, workers: int, label: str) -> h.Measured:
    inputs = work / f"input-{label}"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir(parents=True)
    for f in files:
        (inputs / f.name).symlink_to(f)
    pattern = "*.parquet" if label == "parquet" else "*.jsonl.gz"
    recipe = h.write_recipe(work / f"recipe-{label}.yaml", str(inputs / pattern), work / f"curate-{label}", [])
    m = h.curate_run(recipe, "--workers", str(workers), "--overwrite", log=work / f"curate-{label}.log")
    h.require_ok(m, f"curate run ({label})")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=0, help="use the first K corpus files (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    jsonl = h.corpus_files(h.corpus())[: args.files or None]
    parquet = parquet_copy_of(jsonl)
    work = h.RUNS / "io"
    rows = []
    for label, files in (("jsonl.gz", jsonl), ("parquet", parquet)):
        bare_s, docs = bare_pyarrow(files, work / f"bare-{label}", args.workers)
        m = curate_copy(files, work, args.workers, label)
        written = h.parquet_rows(work / f"curate-{label}" / "data")
        if written != docs:
            raise SystemExit(f"curate wrote {written} rows of {docs} ({label})")
        gb = h.size_gb(files)
        rows.append([label, f"{len(files)} files, {gb:.2f} GB, {docs:,} docs", f"{bare_s:.1f}",
                     f"{docs / bare_s:,.0f}", f"{m.seconds:.1f}", f"{docs / m.seconds:,.0f}",
                     f"{m.peak_rss_gb:.2f}", f"{bare_s / m.seconds:.0%}"])
        print(rows[-1])
    body = "\n".join([
        f"{args.workers} worker processes each; load average at the end {h.load()}.", "",
        h.table(["input", "files", "pyarrow s", "pyarrow docs/s", "curate s", "curate docs/s",
                 "curate peak RSS GB", "curate / pyarrow (target >= 50%)"], rows),
    ])
    h.append_results("bench_io: read -> write, curate (no steps) vs bare pyarrow", body)


if __name__ == "__main__":
    main()
