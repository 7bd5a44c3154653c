"""Inputs on an object store: `curate run` (no steps) reading from a loopback moto S3 server vs a
bare read of the same objects and vs datatrove's readers; listing a prefix of many objects; the
peak memory of a near-dedup run reading from the store vs from local disk.

    python bench/sections/remote_read.py [--gb 1.0] [--objects 100000] [--dedup-files 69] [--workers 2]
                                      [--listing-only] [--repeats 3] [--read-repeats 3] [--section-out PATH]

Data: the first demo-corpus files that make `--gb` of JSONL.gz, and the same rows as Parquet
(zstd, 64k-row groups), put under s3://bench/jsonl/ and s3://bench/parquet/ on a moto server (a
subprocess, ray_store_bench.Moto). Like for like, every side reads every object, decodes it to
Arrow and writes its rows as local Parquet (zstd), with `--workers` processes or threads:
  curate     `curate run --no-report` with no steps (its own reading: the objects through
             pyarrow's S3 client (curate/io/native_s3.py; listing through s3fs), Parquet by range
             requests, JSONL.gz streamed in 8 MB blocks, the next fetched ahead, and inflated by
             ISA-L (isal, in the remote extra; the bare loop below uses Arrow's zlib); plus what a run is: `_id`, the
             duplicate-id check of `id_column`, stage shards, the manifest). The report is an
             analysis of the output, written after the run unless --no-report: it is timed on its
             own row (`curate report`), not in the read;
  local      the same `curate run` on the same files on local disk (its fixed costs, no store);
  bare       one process, `--workers` threads: Parquet with pyarrow.fs.S3FileSystem (native C++
             S3) and pq.read_table, JSONL.gz through s3fs and pyarrow.json, each object written
             with pq.write_table: no ids, no checks, no run directory;
  datatrove  datatrove's ParquetReader / JsonlReader on the bucket (fsspec/s3fs) into its
             ParquetWriter (zstd), `--workers` tasks (bench/anchors/datatrove_read.py, in
             bench/.venvs/datatrove; left out where that venv is missing).
CPU seconds are the process tree's (harness.run_measured), beside the moto server's own.
Listing: `--objects` empty objects under one prefix (1,000 a subprefix); curate's listing
(sources.discover: its subprefixes at once, pages parsed lean, curate/io/s3_listing.py) vs s3fs's
find alone, in this process, the median of `--repeats`; the server's CPU seconds while curate
lists, beside curate's. On moto, and on rclone's S3 server (Go; bench/anchors/rclone_s3.py says how to
install it: left out, with a note, where it is not), whose listing must give the same names,
sizes and ETags. `--listing-only`: the listing alone.
Memory: recipes/near-dedup.yaml on the first `--dedup-files` corpus files (69: 1M documents),
read from local disk and from the store; and written to the store, where this build takes an
output URI (else said so). Peak RSS of the whole process tree and of its largest process.
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
import os
import shutil
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import harness as h
from anchors import rclone_s3
from sections.ray_store import Moto

from curate.manifest import read  # noqa: E402  (harness puts the repository on the path)

DATATROVE = h.VENVS / "datatrove" / "bin" / "python"

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


def inputs(gb: float) -> tuple[list[Path], list[Path]]:
    """The first demo-corpus files making `gb` GB of JSONL.gz, and the same rows as Parquet files
    (made once, in a folder that keeps those of larger runs too)."""
    files = h.corpus_gb(gb)
    parquet = h.DATA / f"remote-read-parquet-{h.CORPUS_DIR.name}"
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    twins = [parquet / f.name.replace(".jsonl.gz", ".parquet") for f in files]
    for f, target in zip(files, twins):
        if not target.exists():
            parquet.mkdir(parents=True, exist_ok=True)
            pq.write_table(pjson.read_json(f), target, compression="zstd", row_group_size=65536)
    return files, twins


def linked(files: list[Path], name: str = "jsonl-input") -> Path:
    """A directory of links to `files`, for a local glob of just them."""
    folder = h.RUNS / "remote-read" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).symlink_to(f)
    return folder


def server_cpu(server) -> float:
    """CPU seconds of an S3 server's processes so far (moto may serve from a child process)."""
    total, todo = 0.0, [server.proc.pid]
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


def stock(moto: Moto, files: list[Path], parquet: list[Path]):
    """A boto3 client of `moto`, the JSONL.gz `files` put under jsonl/ and their `parquet` twins under parquet/."""
    import boto3

    client = boto3.client("s3", endpoint_url=moto.endpoint, aws_access_key_id="bench",
                          aws_secret_access_key="bench", region_name="us-east-1")
    put_all(client, [(f"jsonl/{f.name}", f) for f in files])
    put_all(client, [(f"parquet/{p.name}", p) for p in parquet])
    return client


def read_side(args, moto: Moto, fmt: str, prefix: str, local: str) -> list[dict]:
    """Curate from local disk, curate from S3 and the bare read, in `--read-repeats` interleaved
    rounds (each figure the median of its side's; the machine is shared and noisy), then
    curate's report of the S3 run and datatrove's reader once each."""
    runs = h.RUNS / "remote-read"
    workers = ["--workers", str(args.workers)]
    out, bare_out = runs / f"curate-{fmt}", runs / f"bare-{fmt}"
    local_recipe = h.write_recipe(runs / f"{fmt}-local.yaml", local, runs / f"local-{fmt}", [])
    s3_recipe = h.write_recipe(runs / f"{fmt}.yaml", f"s3://bench/{prefix}/", out, [])
    bare_side = "bare pyarrow.fs" if fmt == "parquet" else "bare s3fs + pyarrow.json"
    sides = {"curate run, the same files on local disk": [], "curate run": [], bare_side: []}
    for _ in range(args.read_repeats):
        # each side starts from no output, as the bare read does (curate's --overwrite would
        # otherwise time the removal of the last round's output)
        for folder in (runs / f"local-{fmt}", out, bare_out):
            shutil.rmtree(folder, ignore_errors=True)
        m = h.run_measured([*h.CURATE, "run", str(local_recipe), "--overwrite", "--no-report", *workers],
                           log=runs / f"local-{fmt}.log")
        h.require_ok(m, f"curate run ({fmt}, local)")
        sides["curate run, the same files on local disk"].append((m, h.parquet_rows(runs / f"local-{fmt}" / "data")))
        m = h.run_measured([*h.CURATE, "run", str(s3_recipe), "--overwrite", "--no-report", *workers],
                           env=moto.env, log=runs / f"curate-{fmt}.log")
        h.require_ok(m, f"curate run ({fmt})")
        sides["curate run"].append((m, h.parquet_rows(out / "data")))
        bare_out.mkdir(parents=True)
        m = h.run_measured([sys.executable, "-c", BARE, fmt, f"bench/{prefix}", str(bare_out), str(args.workers)],
                           env=moto.env, log=runs / f"bare-{fmt}.log")
        sides[bare_side].append((m, h.bare_result(m, f"bare read ({fmt})")["rows"]))
    rows = [{"side": side, "fmt": fmt, "wall": statistics.median(m.seconds for m, _ in got),
             "cpu": statistics.median(m.cpu_seconds for m, _ in got), "walls": [m.seconds for m, _ in got],
             "rows": got[-1][1]} for side, got in sides.items()]
    m = h.run_measured([*h.CURATE, "report", str(out)], log=runs / f"report-{fmt}.log")
    h.require_ok(m, f"curate report ({fmt})")
    rows.insert(2, {"side": "curate report of that run (not in the read)", "fmt": fmt, "wall": m.seconds,
                    "cpu": m.cpu_seconds, "walls": [m.seconds], "rows": None})
    if DATATROVE.exists():
        m = h.run_measured([str(DATATROVE), str(h.BENCH / "anchors/datatrove_read.py"), fmt, f"s3://bench/{prefix}",
                            str(runs / f"datatrove-{fmt}"), str(args.workers)],
                           env={**moto.env, "AWS_ENDPOINT_URL": moto.endpoint}, log=runs / f"datatrove-{fmt}.log")
        rows.append({"side": "datatrove reader -> ParquetWriter", "fmt": fmt, "wall": m.seconds, "cpu": m.cpu_seconds,
                     "walls": [m.seconds], "rows": h.bare_result(m, f"datatrove read ({fmt})")["rows"]})
    return rows


def dedup_memory(args, moto: Moto, client) -> list[dict]:
    """recipes/near-dedup.yaml on the first `--dedup-files` corpus files: from local disk, from the
    store, and from and to the store where this build writes an output URI."""
    files = h.corpus_files(h.corpus())[:args.dedup_files]
    put_all(client, [(f"dedup/{f.name}", f) for f in files])
    runs = h.RUNS / "remote-read"
    sides = [("local disk -> local disk", str(linked(files, "dedup-input") / "*.jsonl.gz"), str(runs / "dedup-local")),
             ("S3 -> local disk", "s3://bench/dedup/", str(runs / "dedup-s3-in")),
             ("S3 -> S3", "s3://bench/dedup/", "s3://bench/dedup-out")]
    results = []
    for side, inp, out in sides:
        # cwd: a build that takes no output URI would write `s3:/...` as a local path, here, not in the repo
        m = h.run_measured([*h.CURATE, "run", str(h.REPO / "recipes" / "near-dedup.yaml"), "--input", inp,
                            "--output", out, "--overwrite", "--no-report", "--workers", str(args.workers)],
                           env=moto.env, cwd=runs, log=runs / f"dedup-{len(results)}.log")
        h.require_ok(m, f"near-dedup ({side})")
        if out.startswith("s3://"):
            listed = client.list_objects_v2(Bucket="bench", Prefix="dedup-out/manifest.json").get("KeyCount", 0)
            shutil.rmtree(runs / "s3:", ignore_errors=True)
            if not listed:
                results.append({"side": side, "unsupported": True})
                continue
            manifest = read(client.get_object(Bucket="bench", Key="dedup-out/manifest.json")["Body"].read(),
                            "s3://bench/dedup-out/manifest.json")
        else:
            manifest = h.manifest(Path(out))
        results.append({"side": side, "wall": m.seconds, "cpu": m.cpu_seconds, "tree_gb": m.peak_rss_gb,
                        "process_gb": m.peak_process_gb, "rows_in": manifest.rows_in,
                        "rows_out": manifest.rows_out})
    return results


def many(n: int) -> list[str]:
    """The keys of the listed objects."""
    return [f"many/{i // 1000:03d}/obj-{i:06d}.jsonl" for i in range(n)]


def listing(server, options: dict, repeats: int) -> dict:
    """curate's listing of s3://bench/many on `server` (the median of `repeats`) and s3fs's find."""
    import s3fs

    from curate.io.sources import discover

    start = time.perf_counter()
    # a page moto answers slowly on a busy machine is waited for, not a failed bench
    found = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs={"read_timeout": 600}, **options).find("bench/many")
    bare = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start, cpu, served = time.perf_counter(), time.process_time(), server_cpu(server)
        sources = discover("s3://bench/many", storage_options=options)
        runs.append({"curate": time.perf_counter() - start, "curate_cpu": time.process_time() - cpu,
                     "server_cpu": server_cpu(server) - served})
    if len(found) != len(sources):
        raise SystemExit(f"listing: s3fs found {len(found)} objects, curate {len(sources)}")
    mid = sorted(runs, key=lambda r: r["curate"])[len(runs) // 2]
    return {**mid, "n": len(sources), "bare": bare, "walls": [r["curate"] for r in runs],
            "objects": [(s.name, s.size, s.version) for s in sources]}


def moto_listing(moto: Moto, client, n: int, repeats: int) -> dict:
    put_all(client, [(key, b"") for key in many(n)])
    return listing(moto, {"endpoint_url": moto.endpoint, "key": "bench", "secret": "bench",
                          "client_kwargs": {"region_name": "us-east-1"}}, repeats)


def rclone_listing(n: int, repeats: int) -> dict | None:
    """The listing on rclone's S3 server, or None where no rclone with `serve s3` is installed."""
    found = rclone_s3.binary()
    if found is None:
        return None
    folder = h.RUNS / "remote-read" / "listed"
    shutil.rmtree(folder, ignore_errors=True)
    for key in many(n):
        target = folder / "bench" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    server = rclone_s3.RcloneS3(found[0])
    try:
        server.fill(folder)
        return {**listing(server, server.options, repeats), "version": found[1]}
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def same_objects(moto: dict, rclone: dict) -> None:
    """Both servers' listings give the same names, sizes and ETags. rclone sends an ETag without
    the quotes S3 (and moto) put around it: compared without them."""
    def unquoted(objects):
        return [(name, size, version.replace('"', "")) for name, size, version in objects]

    if unquoted(moto["objects"]) != unquoted(rclone["objects"]):
        raise SystemExit("listing: rclone's S3 server and moto gave different names, sizes or ETags")


def listing_lines(moto: dict, rclone: dict | None) -> tuple[list[str], list[list[str]]]:
    rows = [("moto (Python, one process)", moto)] + ([(f"rclone serve s3 {rclone['version']} (Go)", rclone)]
                                                     if rclone else [])
    lines = ["", f"Listing {moto['n']:,} objects under one prefix ({-(-moto['n'] // 1000)} subprefixes of 1,000 at "
                 f"most): curate's listing "
                 f"(discover, into Sources; median of {len(moto['walls'])}) and, in the same process, s3fs's find "
                 f"alone; the server's CPU beside curate's.", "",
             "| S3 server | curate wall s | curate CPU s | server CPU s | curate walls | s3fs find wall s |",
             "|---|---:|---:|---:|---|---:|"]
    for server, r in rows:
        lines.append(f"| {server} | {r['curate']:.1f} | {r['curate_cpu']:.1f} | {r['server_cpu']:.1f} | "
                     f"{', '.join(f'{w:.1f}' for w in r['walls'])} | {r['bare']:.1f} |")
    lines.append("")
    if moto["server_cpu"] > moto["curate_cpu"]:
        lines[-1] += ("moto spends more CPU answering the pages than curate spends asking for and parsing them: "
                      "there the wall is moto's. ")
    if rclone:
        lines[-1] += ("rclone's server gave the same names, sizes and ETags (it sends an ETag without the quotes S3 "
                      "puts around it, so there a fingerprint's ETag lacks them).")
    else:
        lines[-1] += (f"rclone's S3 server left out: no rclone >= 1.65 ({rclone_s3.VENV_BINARY} or on PATH; "
                      f"bench/anchors/rclone_s3.py says how to install it).")
    best = rclone or moto
    headline = [f"Listing {best['n']:,} S3 objects ({rows[-1][0].split(' (')[0]})", f"{best['curate']:.1f} s",
                f"{best['curate_cpu']:.1f} CPU-s (server {best['server_cpu']:.1f})",
                f"target < 10 s; on moto {moto['curate']:.1f} s; s3fs find alone {best['bare']:.1f} s"]
    return lines, [headline]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="GB of JSONL.gz read (and the same rows as Parquet)")
    ap.add_argument("--objects", type=int, default=100_000, help="objects under the listed prefix")
    ap.add_argument("--dedup-files", type=int, default=69,
                    help="corpus files of the near-dedup memory runs (69: 1M documents; 0: none)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="listings of each server; each figure is their median")
    ap.add_argument("--read-repeats", type=int, default=3,
                    help="interleaved rounds of the curate (local, S3) and bare reads; each figure is their median")
    ap.add_argument("--listing-only", action="store_true", help="the listing alone: no reads, no near-dedup runs")
    h.add_section_args(ap)
    args = ap.parse_args()
    files, parquet = inputs(args.gb) if not args.listing_only else ([], [])
    moto = Moto()
    try:
        client = stock(moto, files, parquet)
        cpu0 = server_cpu(moto)
        results = [] if args.listing_only else (
            read_side(args, moto, "parquet", "parquet", str(linked(parquet, "parquet-input") / "*.parquet"))
            + read_side(args, moto, "jsonl", "jsonl", str(linked(files) / "*.jsonl.gz")))
        moto_cpu = server_cpu(moto) - cpu0
        listed = moto_listing(moto, client, args.objects, args.repeats)
        memory = dedup_memory(args, moto, client) if args.dedup_files and not args.listing_only else []
    finally:
        moto.stop()
    fast = rclone_listing(args.objects, args.repeats)
    if fast:
        same_objects(listed, fast)
    listing_text, listing_headlines = listing_lines(listed, fast)
    if args.listing_only:
        h.emit(args, "\n".join(listing_text).strip(), listing_headlines)
        return
    sizes = {"jsonl": h.size_gb(files), "parquet": h.size_gb(parquet)}
    lines = [f"{len(files)} demo-corpus files: {sizes['jsonl']:.2f} GB of JSONL.gz and {sizes['parquet']:.2f} GB "
             f"as Parquet, on a moto S3 server on loopback; {args.workers} workers (processes; threads for the bare "
             f"read). Every reader writes the rows it read as local Parquet (zstd). The moto server itself used "
             f"{moto_cpu:.0f} CPU-seconds over these reads.", "",
             f"The curate and bare reads ran in {args.read_repeats} interleaved rounds: each figure is the median "
             f"of its side's (every wall beside it); the report and datatrove ran once.", "",
             "| input | reader | rows | wall s | CPU s | MB/s (wall) | vs bare (wall) | vs bare (CPU) | walls |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    headlines = []
    for fmt in ("parquet", "jsonl"):
        mine = [r for r in results if r["fmt"] == fmt]
        local, ours, report, bare = mine[:4]
        if not local["rows"] == ours["rows"] == bare["rows"] == (mine[4:] or [bare])[0]["rows"]:
            raise SystemExit(f"{fmt}: rows read differ: " + ", ".join(f"{r['side']} {r['rows']}" for r in mine))
        for r in (ours, bare, *mine[4:], local, report):
            rows = "" if r["rows"] is None else f"{r['rows']:,}"
            lines.append(f"| {fmt} | {r['side']} | {rows} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                         f"{sizes[fmt] * 1e3 / r['wall']:.0f} | {bare['wall'] / r['wall']:.0%} | "
                         f"{bare['cpu'] / r['cpu']:.0%} | {', '.join(f'{w:.1f}' for w in r['walls'])} |")
        headlines.append([f"S3 read of {sizes[fmt]:.1f} GB {fmt}: curate run vs bare", f"{ours['wall']:.1f} s vs "
                          f"{bare['wall']:.1f} s", f"{ours['cpu']:.0f} vs {bare['cpu']:.0f} CPU-s",
                          f"{bare['wall'] / ours['wall']:.0%} of the bare read's speed (target >= 90%)"])
        if mine[4:]:
            dt = mine[4]
            headlines.append([f"S3 read of {sizes[fmt]:.1f} GB {fmt}: curate run vs datatrove",
                              f"{dt['wall'] / ours['wall']:.1f}x", f"{dt['cpu'] / ours['cpu']:.1f}x", "reader -> Parquet"])
    if not DATATROVE.exists():
        lines += ["", f"datatrove left out: no {DATATROVE} (bench/anchors/setup.sh makes it)."]
    lines += listing_text
    headlines += listing_headlines
    if memory:
        local = memory[0]
        lines += ["", f"recipes/near-dedup.yaml (normalize_text, exact_dedup, containment_dedup) on the first "
                      f"{args.dedup_files} corpus files, {local['rows_in']:,} documents, {args.workers} workers:", "",
                  "| input -> output | rows out | wall s | CPU s | peak RSS GB, tree | largest process GB | "
                  "tree vs local |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in memory:
            if r.get("unsupported"):
                lines.append(f"| {r['side']} | not in this build: an output URI was written as a local path | "
                             "| | | | |")
                continue
            if r["rows_out"] != local["rows_out"]:
                raise SystemExit(f"near-dedup {r['side']}: {r['rows_out']} rows out, locally {local['rows_out']}")
            lines.append(f"| {r['side']} | {r['rows_out']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['tree_gb']:.2f} | "
                         f"{r['process_gb']:.2f} | {r['tree_gb'] / local['tree_gb']:.2f}x |")
        store = [r for r in memory[1:] if not r.get("unsupported")][-1]
        headlines.append([f"near-dedup peak RSS, {store['side']} vs local ({local['rows_in']:,} docs)",
                          f"{store['wall'] / local['wall']:.2f}x time", f"{store['cpu'] / local['cpu']:.2f}x CPU",
                          f"{store['tree_gb']:.2f} vs {local['tree_gb']:.2f} GB = "
                          f"{store['tree_gb'] / local['tree_gb']:.2f}x (target <= 1.10x)"])
    h.emit(args, "\n".join(lines), headlines)
    print(json.dumps({"results": results, "listing": [{k: v for k, v in r.items() if k != "objects"}
                                                      for r in (listed, fast) if r], "memory": memory}), file=sys.stderr)


if __name__ == "__main__":
    main()
