"""Outputs on an object store: `curate run` publishing its run to a loopback moto S3 server vs the
same run into a local directory, and a bare upload of the same files.

    python bench/sections/remote_write.py [--gb 1.0] [--workers 2] [--section-out PATH]

Data: the first demo-corpus files that make `--gb` of JSONL.gz, on local disk, run with no steps
(so the output is the input as Parquet, about its size). Sides:
  local   `curate run` into a local directory;
  store   `curate run --output s3://bench/out` on a moto server (a subprocess,
          ray_store_bench.Moto): the same work in the run's local work directory, then data/
          uploaded under its final names, the manifest last;
  store + work store under the output
          the same with `--work-store s3://bench/out-ws/_work/files` (the output's own prefix): each
          task's files go to the work store as it finishes (for a --resume on another machine),
          and publishing copies the data shards into data/ within the store;
  store + work store elsewhere
          `--work-store s3://bench/work-elsewhere`: the shards go to the work store, then are
          uploaded again to data/ (a store copy needs the output's own filesystem);
  upload  s3fs's put of the local run's data/ files alone, all at once (what publishing to a
          store adds, at best).
Every store run's objects are checked against the local run's files, byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import hashlib
import json

import harness as h
from sections.ray_store import Moto
from sections.remote_read import linked

UPLOAD = r"""
import json, sys, time
import s3fs
local, prefix = sys.argv[1], sys.argv[2]
from pathlib import Path
files = sorted(p for p in Path(local).rglob("*") if p.is_file())
fs = s3fs.S3FileSystem()
start = time.perf_counter()
fs.put([str(f) for f in files], [f"{prefix}/{f.relative_to(local).as_posix()}" for f in files])
print(json.dumps({"files": len(files), "seconds": time.perf_counter() - start}))
"""


STORE_SIDES = [  # (side, output prefix in the bucket, extra arguments)
    ("output s3://bench/out", "out", []),
    ("output s3://bench/out-ws, work store under it", "out-ws", ["--work-store", "s3://bench/out-ws/_work/files"]),
    ("output s3://bench/out-we, work store elsewhere", "out-we", ["--work-store", "s3://bench/work-elsewhere"]),
]


def same_bytes(local: Path, moto: Moto, prefix: str) -> int:
    """How many files of `local`/data the store holds byte for byte under `prefix`/data; exits
    when one differs or is missing."""
    import boto3

    client = boto3.client("s3", endpoint_url=moto.endpoint, aws_access_key_id="bench",
                          aws_secret_access_key="bench", region_name="us-east-1")
    files = sorted(p for p in (local / "data").rglob("*") if p.is_file())
    for f in files:
        key = f"{prefix}/{f.relative_to(local).as_posix()}"
        body = client.get_object(Bucket="bench", Key=key)["Body"].read()
        if hashlib.sha256(body).digest() != hashlib.sha256(f.read_bytes()).digest():
            raise SystemExit(f"s3://bench/{key} differs from {f}")
    return len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="GB of JSONL.gz run (no steps)")
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    files = h.corpus_gb(args.gb)
    runs = h.RUNS / "remote-write"
    glob = str(linked(files) / "*.jsonl.gz")
    env = {"CURATE_CACHE_DIR": str(runs / "cache")}  # where the store run's work directory is
    w = ["--workers", str(args.workers), "--overwrite", "--no-report"]
    moto = Moto()
    try:
        local_recipe = h.write_recipe(runs / "local.yaml", glob, runs / "local", [])
        local = h.run_measured([*h.CURATE, "run", str(local_recipe), *w], env=env, log=runs / "local.log")
        h.require_ok(local, "curate run (local output)")
        stores = {}
        for side, prefix, extra in STORE_SIDES:
            recipe = h.write_recipe(runs / f"{prefix}.yaml", glob, f"s3://bench/{prefix}", [])
            stores[side] = h.run_measured([*h.CURATE, "run", str(recipe), *w, *extra], env={**env, **moto.env},
                                          log=runs / f"{prefix}.log")
            h.require_ok(stores[side], f"curate run ({side})")
            checked = same_bytes(runs / "local", moto, prefix)
        store = stores[STORE_SIDES[0][0]]
        upload = h.run_measured([sys.executable, "-c", UPLOAD, str(runs / "local" / "data"), "bench/bare/data"],
                                env=moto.env, log=runs / "upload.log")
        bare = h.bare_result(upload, "bare upload")
    finally:
        moto.stop()
    out_gb = h.size_gb([p for p in (runs / "local" / "data").rglob("*") if p.is_file()])
    rows = h.parquet_rows(runs / "local" / "data")
    added = store.seconds - local.seconds
    lines = [f"{len(files)} demo-corpus files ({h.size_gb(files):.2f} GB of JSONL.gz, {rows:,} rows), run with "
             f"no steps by {args.workers} workers: {out_gb:.2f} GB of Parquet in {checked} files, published to a "
             f"moto S3 server on loopback (its objects checked byte for byte against the local run's files).", "",
             "| side | wall s | CPU s | output MB/s (wall) |", "|---|---:|---:|---:|",
             f"| curate run, local output | {local.seconds:.1f} | {local.cpu_seconds:.1f} | "
             f"{out_gb * 1e3 / local.seconds:.0f} |",
             *(f"| curate run, {side} | {m.seconds:.1f} | {m.cpu_seconds:.1f} | {out_gb * 1e3 / m.seconds:.0f} |"
               for side, m in stores.items()),
             f"| bare s3fs put of the same data files ({bare['files']}) | {bare['seconds']:.1f} | "
             f"{upload.cpu_seconds:.1f} | {out_gb * 1e3 / bare['seconds']:.0f} |", "",
             f"Publishing to the store added {added:.1f} s to the run; the bare upload of the same bytes took "
             f"{bare['seconds']:.1f} s (the rest: the store's lock, marker and manifest requests, and noise)."]
    under, elsewhere = stores[STORE_SIDES[1][0]], stores[STORE_SIDES[2][0]]
    headlines = [[f"Output of {out_gb:.1f} GB on S3 (moto): curate run vs the same run to local disk",
                  f"{store.seconds:.1f} s vs {local.seconds:.1f} s", f"{store.cpu_seconds:.0f} vs "
                  f"{local.cpu_seconds:.0f} CPU-s", f"+{added:.1f} s; a bare upload: {bare['seconds']:.1f} s"],
                 [f"Output of {out_gb:.1f} GB on S3 with a work store: under the output (shards copied in the "
                  f"store) vs elsewhere (uploaded again)", f"{under.seconds:.1f} s vs {elsewhere.seconds:.1f} s",
                  f"{under.cpu_seconds:.0f} vs {elsewhere.cpu_seconds:.0f} CPU-s",
                  f"without a work store: {store.seconds:.1f} s"]]
    h.emit(args, "\n".join(lines), headlines)
    print(json.dumps({"local": local.seconds, "store": store.seconds, "upload": bare}), file=sys.stderr)


if __name__ == "__main__":
    main()
