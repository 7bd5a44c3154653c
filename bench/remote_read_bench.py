"""Inputs on an object store: `curate run` (no steps) reading from a loopback moto S3 server vs a
bare read of the same objects, and listing a prefix of many objects.

    python bench/remote_read_bench.py [--gb 1.0] [--objects 100000] [--workers 2] [--section-out PATH]

Data: the first demo-corpus files that make `--gb` of JSONL.gz, and the same rows as Parquet
(zstd, 64k-row groups), put under s3://bench/jsonl/ and s3://bench/parquet/ on a moto server (a
subprocess, ray_store_bench.Moto). Each side reads every object and writes it as local Parquet:
  local    `curate run` with no steps on the same files on local disk (its fixed costs: start-up,
           workers, publishing; no store);
  curate   `curate run` with no steps, `--workers` processes (its own reading: Parquet by range
           requests through fsspec/s3fs, JSONL.gz streamed in blocks);
  bare     one process per object list, `--workers` threads: Parquet with pyarrow.fs.S3FileSystem
           (native C++ S3) and pq.read_table, JSONL.gz through s3fs and pyarrow.json, each
           written with pq.write_table.
CPU seconds are the process tree's (harness.run_measured), beside the moto server's own.
Listing: `--objects` empty objects under one prefix; curate's listing (sources.discover, which
pages through it with fsspec) vs s3fs's find alone, in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness as h
from ray_store_bench import Moto

BARE = r"""
import json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
import pyarrow as pa, pyarrow.fs as pafs, pyarrow.json as pjson, pyarrow.parquet as pq
fmt, prefix, out, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import s3fs
fs = s3fs.S3FileSystem()
keys = sorted(fs.find(prefix))
native = pafs.S3FileSystem(endpoint_override=os.environ["FSSPEC_S3_ENDPOINT_URL"], scheme="http",
                           access_key="bench", secret_key="bench", region="us-east-1")
def one(i_key):
    i, key = i_key
    if fmt == "parquet":
        table = pq.read_table(key, filesystem=native)
    else:
        with fs.open(key, "rb", block_size=8 << 20) as f:
            table = pjson.read_json(pa.input_stream(pa.PythonFile(f, mode="r"), compression="gzip"))
    pq.write_table(table, f"{out}/part-{i:05d}.parquet", compression="zstd")
    return table.num_rows
with ThreadPoolExecutor(workers) as pool:
    rows = sum(pool.map(one, enumerate(keys)))
print(json.dumps({"rows": rows}))
"""


def inputs(gb: float) -> tuple[list[Path], Path]:
    """The first demo-corpus files making `gb` GB of JSONL.gz, and the same rows as Parquet files."""
    files, total = [], 0
    for f in h.corpus_files(h.corpus()):
        if total >= gb * 1e9:
            break
        files.append(f)
        total += f.stat().st_size
    parquet = h.DATA / f"remote-read-parquet-{h.CORPUS_DIR.name}"
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    for f in files:
        target = parquet / f.name.replace(".jsonl.gz", ".parquet")
        if not target.exists():
            parquet.mkdir(parents=True, exist_ok=True)
            pq.write_table(pjson.read_json(f), target, compression="zstd", row_group_size=65536)
    return files, parquet


def linked(files: list[Path]) -> Path:
    """A directory of links to `files` (the first corpus files), for a local glob of just them."""
    folder = h.RUNS / "remote-read" / "jsonl-input"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).symlink_to(f)
    return folder


def server_cpu(moto: Moto) -> float:
    """CPU seconds of the moto server's processes so far (it may serve from a child process)."""
    total, todo = 0.0, [moto.proc.pid]
    while todo:
        pid = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")
        todo += h._children_of(pid)
    return total


def put_all(client, pairs: list[tuple[str, bytes | Path]]) -> None:
    def put(pair):
        key, body = pair
        client.put_object(Bucket="bench", Key=key, Body=body.read_bytes() if isinstance(body, Path) else body)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, pairs))


def stock(moto: Moto, files: list[Path], parquet: Path):
    """A boto3 client of `moto`, the JSONL.gz `files` put under jsonl/ and the Parquet ones under parquet/."""
    import boto3

    client = boto3.client("s3", endpoint_url=moto.endpoint, aws_access_key_id="bench",
                          aws_secret_access_key="bench", region_name="us-east-1")
    put_all(client, [(f"jsonl/{f.name}", f) for f in files])
    put_all(client, [(f"parquet/{p.name}", p) for p in sorted(parquet.glob("*.parquet"))])
    return client


def read_side(args, moto: Moto, fmt: str, prefix: str, local: str) -> list[dict]:
    runs = h.RUNS / "remote-read"
    rows = []
    recipe = h.write_recipe(runs / f"{fmt}-local.yaml", local, runs / f"local-{fmt}", [])
    m = h.run_measured([*h.CURATE, "run", str(recipe), "--overwrite", "--workers", str(args.workers)],
                       log=runs / f"local-{fmt}.log")
    h.require_ok(m, f"curate run ({fmt}, local)")
    rows.append({"side": "curate run, the same files on local disk", "fmt": fmt, "wall": m.seconds,
                 "cpu": m.cpu_seconds, "rows": h.parquet_rows(runs / f"local-{fmt}" / "data")})
    recipe = h.write_recipe(runs / f"{fmt}.yaml", f"s3://bench/{prefix}/", runs / f"curate-{fmt}", [])
    m = h.run_measured([*h.CURATE, "run", str(recipe), "--overwrite", "--workers", str(args.workers)],
                       env=moto.env, log=runs / f"curate-{fmt}.log")
    h.require_ok(m, f"curate run ({fmt})")
    rows.append({"side": "curate run", "fmt": fmt, "wall": m.seconds, "cpu": m.cpu_seconds,
                 "rows": h.parquet_rows(runs / f"curate-{fmt}" / "data")})
    bare_out = runs / f"bare-{fmt}"
    shutil.rmtree(bare_out, ignore_errors=True)
    bare_out.mkdir(parents=True)
    m = h.run_measured([sys.executable, "-c", BARE, fmt, f"bench/{prefix}", str(bare_out), str(args.workers)],
                       env=moto.env, log=runs / f"bare-{fmt}.log")
    rows.append({"side": "bare pyarrow.fs" if fmt == "parquet" else "bare s3fs + pyarrow.json", "fmt": fmt,
                 "wall": m.seconds, "cpu": m.cpu_seconds, "rows": h.bare_result(m, f"bare read ({fmt})")["rows"]})
    return rows


def listing(moto: Moto, client, n: int) -> dict:
    put_all(client, [(f"many/{i // 1000:03d}/obj-{i:06d}.jsonl", b"") for i in range(n)])
    os.environ.update(moto.env)
    import s3fs

    from curate.io.sources import discover

    start = time.perf_counter()
    found = s3fs.S3FileSystem(skip_instance_cache=True).find("bench/many")
    bare = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    sources = discover("s3://bench/many")
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(found) == len(sources) == n, (len(found), len(sources))
    return {"n": n, "bare": bare, "curate": ours, "curate_cpu": ours_cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="GB of JSONL.gz read (and the same rows as Parquet)")
    ap.add_argument("--objects", type=int, default=100_000, help="objects under the listed prefix")
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    files, parquet = inputs(args.gb)
    moto = Moto()
    try:
        client = stock(moto, files, parquet)
        sizes = {"jsonl": h.size_gb(files), "parquet": h.size_gb(sorted(parquet.glob("*.parquet")))}
        cpu0 = server_cpu(moto)
        results = (read_side(args, moto, "parquet", "parquet", str(parquet / "*.parquet"))
                   + read_side(args, moto, "jsonl", "jsonl", str(linked(files) / "*.jsonl.gz")))
        moto_cpu = server_cpu(moto) - cpu0
        listed = listing(moto, client, args.objects)
    finally:
        moto.stop()
    lines = [f"{len(files)} demo-corpus files: {sizes['jsonl']:.2f} GB of JSONL.gz and {sizes['parquet']:.2f} GB "
             f"as Parquet, on a moto S3 server on loopback; {args.workers} workers (threads for the bare reads). "
             f"The moto server itself used {moto_cpu:.0f} CPU-seconds over the four reads.", "",
             "| input | reader | rows | wall s | CPU s | MB/s (wall) | vs bare (wall) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    headlines = []
    for fmt in ("parquet", "jsonl"):
        local, ours, bare = [r for r in results if r["fmt"] == fmt]
        if not local["rows"] == ours["rows"] == bare["rows"]:
            raise SystemExit(f"{fmt}: curate read {ours['rows']} rows ({local['rows']} locally), the bare read "
                             f"{bare['rows']}")
        for r in (ours, bare, local):
            lines.append(f"| {fmt} | {r['side']} | {r['rows']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                         f"{sizes[fmt] * 1e3 / r['wall']:.0f} | {bare['wall'] / r['wall']:.0%} |")
        headlines.append([f"S3 read of {sizes[fmt]:.1f} GB {fmt}: curate run vs bare", f"{ours['wall']:.1f} s vs "
                          f"{bare['wall']:.1f} s", f"{ours['cpu']:.0f} vs {bare['cpu']:.0f} CPU-s",
                          f"{bare['wall'] / ours['wall']:.0%} of the bare read's speed"])
    lines += ["", f"Listing {listed['n']:,} objects under one prefix: curate (discover, into Sources) "
                  f"{listed['curate']:.1f} s wall, {listed['curate_cpu']:.1f} CPU-s; s3fs find alone "
                  f"{listed['bare']:.1f} s."]
    headlines.append([f"Listing {listed['n']:,} S3 objects", f"{listed['curate']:.1f} s",
                      f"{listed['curate_cpu']:.1f} CPU-s", f"s3fs find alone: {listed['bare']:.1f} s"])
    h.emit(args, "\n".join(lines), headlines)
    print(json.dumps({"results": results, "listing": listed}), file=sys.stderr)


if __name__ == "__main__":
    main()
