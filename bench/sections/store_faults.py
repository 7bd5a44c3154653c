"""Reading from and writing to a store that fails: `curate run` (no steps) on S3 objects through a
fault-injecting loopback proxy (tests/curate/io/faultproxy.py) failing `--rate` of the requests with
503 SlowDown, connection resets and bodies cut off halfway, vs the same proxy failing none; and the
local JSONL.gz files written to S3 through the same proxy (output.storage_options), the output's
lease, uploads and report going through it.

    python bench/sections/store_faults.py [--gb 0.25] [--rate 0.1] [--workers 2] [--section-out PATH]

Data: the first demo-corpus files making `--gb` of JSONL.gz and the same rows as Parquet (as
bench/sections/remote_read.py makes them), on a moto S3 server (a subprocess). Both runs go through
the proxy, in this process, so its own cost is on both sides. Figures: wall and CPU seconds of the
run, the requests the proxy saw, the faults it injected, the retries the manifest counts (the
input's `retries`, the output's `output_retries`: those up to the manifest's own request), and
whether data/ and trace/ are byte for byte those of the clean run.
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
from sections.remote_read import inputs, stock

from curate.manifest import read  # noqa: E402  (harness puts the repository on the path)
from tests.curate.engine.faultkit import digest  # noqa: E402  (the tests' kit: the same comparison)
from tests.curate.io.faultproxy import FaultProxy  # noqa: E402


def one_run(fmt: str, proxy: FaultProxy, rate: float, workers: int, env: dict) -> dict:
    runs = h.RUNS / "store-faults"
    out = runs / f"{fmt}-{rate:g}"
    recipe = runs / f"{fmt}-{rate:g}.yaml"
    recipe.parent.mkdir(parents=True, exist_ok=True)
    recipe.write_text(f"name: bench\ninput:\n  path: s3://bench/{fmt}/\n  text_column: text\n  id_column: id\n"
                      f"  storage_options: {{endpoint_url: {json.dumps(proxy.url)}}}\n"
                      f"output: {{path: {json.dumps(str(out))}}}\nsteps: []\n")
    proxy.rate = rate
    requests, faults = proxy.requests, dict(proxy.faults)
    m = h.run_measured([*h.CURATE, "run", str(recipe), "--overwrite", "--no-report", "--workers", str(workers)],
                       env=env, log=runs / f"{fmt}-{rate:g}.log")
    h.require_ok(m, f"curate run ({fmt}, {rate:.0%} of requests failed)")
    store = h.manifest(out).store
    return {"fmt": fmt, "rate": rate, "wall": m.seconds, "cpu": m.cpu_seconds, "requests": proxy.requests - requests,
            "faults": {k: v - faults[k] for k, v in proxy.faults.items()}, "retries": store["retries"],
            "reasons": store["retry_reasons"], "digest": digest(out)}


def output_run(files: list, proxy: FaultProxy, rate: float, workers: int, moto: Moto) -> dict:
    """The local `files` written to s3://bench/out-RATE through the proxy."""
    import fsspec

    runs = h.RUNS / "store-faults"
    recipe = runs / f"output-{rate:g}.yaml"
    recipe.parent.mkdir(parents=True, exist_ok=True)
    uri = f"s3://bench/out-{rate:g}"
    recipe.write_text(f"name: bench\ninput:\n  path: {json.dumps([str(f) for f in files])}\n  text_column: text\n"
                      f"  id_column: id\noutput:\n  path: {uri}\n"
                      f"  storage_options: {{endpoint_url: {json.dumps(proxy.url)}}}\nsteps: []\n")
    proxy.rate = rate
    requests, faults = proxy.requests, dict(proxy.faults)
    m = h.run_measured([*h.CURATE, "run", str(recipe), "--overwrite", "--workers", str(workers)],
                       env=moto.env, log=runs / f"output-{rate:g}.log")
    h.require_ok(m, f"curate run (output on S3, {rate:.0%} of requests failed)")
    fs = fsspec.filesystem("s3", endpoint_url=moto.endpoint, key="bench", secret="bench", skip_instance_cache=True)
    root = uri.removeprefix("s3://")
    store = read(fs.cat_file(f"{root}/manifest.json"), f"{uri}/manifest.json").store
    published = {p.removeprefix(root): hashlib.sha256(fs.cat_file(p)).hexdigest()
                 for d in ("data", "trace") for p in fs.find(f"{root}/{d}")}
    return {"fmt": "output", "rate": rate, "wall": m.seconds, "cpu": m.cpu_seconds,
            "requests": proxy.requests - requests, "faults": {k: v - faults[k] for k, v in proxy.faults.items()},
            "retries": store["output_retries"], "reasons": store["output_retry_reasons"], "digest": published}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=0.25, help="GB of JSONL.gz read (and the same rows as Parquet)")
    ap.add_argument("--rate", type=float, default=0.1, help="share of the requests failed")
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    files, parquet = inputs(args.gb)
    moto = Moto()
    results = []
    try:
        stock(moto, files, parquet)
        with FaultProxy(moto.endpoint) as proxy:
            for fmt in ("parquet", "jsonl"):
                for rate in (0.0, args.rate):
                    results.append(one_run(fmt, proxy, rate, args.workers, moto.env))
            for rate in (0.0, args.rate):
                results.append(output_run(files, proxy, rate, args.workers, moto))
    finally:
        moto.stop()
    lines = [f"{len(files)} demo-corpus files ({h.size_gb(files):.2f} GB of JSONL.gz, the same rows as Parquet) "
             f"on a moto S3 server, read through a loopback proxy; {args.workers} workers; `output`: the "
             f"JSONL.gz files read locally and the run written to S3 through the proxy (its lease, data/, "
             f"trace/, report.html, manifest). Faults: 503 SlowDown, a connection reset before any answer, a "
             f"body cut off halfway (a third each).", "",
             "| store side | requests failed | wall s | CPU s | requests | 503 / reset / cut | retries counted | "
             "data/ and trace/ |", "|---|---:|---:|---:|---:|---|---:|---|"]
    headlines = []
    for fmt in ("parquet", "jsonl", "output"):
        clean, faulty = [r for r in results if r["fmt"] == fmt]
        same = faulty["digest"] == clean["digest"] and bool(clean["digest"])
        if not same:
            raise SystemExit(f"{fmt}: the run through the failing proxy wrote other bytes than the clean run")
        for r in (clean, faulty):
            f = r["faults"]
            lines.append(f"| {fmt} | {r['rate']:.0%} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['requests']:,} | "
                         f"{f['503']} / {f['reset']} / {f['cut']} | {r['retries']:,} | "
                         f"{'the clean run' if r is clean else 'identical' if same else 'DIFFERENT'} |")
        what = "S3 write (output)" if fmt == "output" else f"S3 read of {fmt}"
        headlines.append([f"{what}, {args.rate:.0%} of requests failed vs none",
                          f"{faulty['wall']:.1f} s vs {clean['wall']:.1f} s",
                          f"{faulty['cpu']:.0f} vs {clean['cpu']:.0f} CPU-s",
                          f"{faulty['retries']} retries counted; the same bytes"])
    lines += ["", "Retries by reason (the faulty runs): " + "; ".join(
        f"{r['fmt']}: " + (", ".join(f"{k} {v}" for k, v in r["reasons"].items()) or "none")
        for r in results if r["rate"])]
    h.emit(args, "\n".join(lines), headlines)
    print(json.dumps([{k: v for k, v in r.items() if k != "digest"} for r in results]), file=sys.stderr)


if __name__ == "__main__":
    main()
