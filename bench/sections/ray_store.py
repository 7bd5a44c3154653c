"""The Ray engine across nodes that share no disk: recipes/near-dedup.yaml on 2 nodes, with the
output on storage both nodes see vs storage only the head sees and the work files through a
work store (`--work-store`).

    python bench/sections/ray_store.py [--files 7] [--workers 2] [--repeats 2] [--section-out PATH]

Three runs, `--repeats` times each, interleaved (each figure is the median of its repeats: the
spread on these shared cores is wide, so every run's wall is shown too), on the
first `--files` demo-corpus files, each on a fresh 2-node loopback cluster (raykit.Cluster, a
head and a worker node of `--workers / 2` CPUs each):
  shared     the output on a path both nodes see (the Ray bench's 2-node run);
  file://    the worker node in a mount namespace of its own with a private tmpfs over the
             output's parent (raykit's private_worker: it cannot see the output), and
             `--work-store file://...` on the machine's disk;
  s3://      as file://, with the store on a moto S3 server (a subprocess on loopback).
CPU-seconds: the `curate run` process tree plus the cluster's processes (ray_bench.ClusterCpu),
plus the moto server's for s3://. Needs root and unshare (the private tmpfs), s3fs and moto.
The outputs must be byte-identical.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import os
import shutil
import socket
import subprocess
import time

import harness as h
from sections.ray import RECIPE, ClusterCpu, digest

sys.path.insert(0, str(h.REPO))
from tests.conftest import free_port  # noqa: E402
from tests.curate.engine.raykit import Cluster  # noqa: E402


class Moto:
    """A moto S3 server as a subprocess, with a bucket; its CPU seconds so far from /proc."""

    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
                    "FSSPEC_S3_ENDPOINT_URL": self.endpoint}
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()  # not left serving after the bench
                    raise SystemExit("the moto server did not start")
                time.sleep(0.2)
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
                     region_name="us-east-1").create_bucket(Bucket="bench")

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def median(repeats: list[dict]) -> dict:
    """One variant's figures: the median wall and median CPU of its runs, and every run's wall."""
    def mid(key: str) -> float:
        values = sorted(r[key] for r in repeats)
        n = len(values)
        return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2

    return {**repeats[0], "wall": mid("wall"), "cpu": mid("cpu"),
            "walls": ", ".join(f"{r['wall']:.1f}" for r in repeats)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each variant; each figure is their median")
    h.add_section_args(ap)
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise SystemExit("needs root and unshare: the worker node's private tmpfs hides the output from it")
    work = h.RUNS / "ray-store"
    inputs = work / "input"
    shutil.rmtree(work, ignore_errors=True)
    inputs.mkdir(parents=True)
    for f in h.corpus_files(h.corpus())[: args.files]:
        (inputs / f.name).symlink_to(f)
    base = ["--input", str(inputs / "*.jsonl.gz"), "--overwrite", "--workers", str(args.workers)]
    half = max(1, args.workers // 2)
    moto = Moto()
    runs = []

    def run(name: str) -> None:
        cluster = Cluster()
        blind = name != "shared"
        cluster.start(cpus=[half, args.workers - half or 1], private_worker=blind)
        try:
            out = (cluster.private if blind else work) / name.replace(":", "").replace("/", "")
            store = {"file://": f"file://{work / 'store'}", "s3://": "s3://bench/work"}.get(name)
            extra = ["--engine", "ray", "--address", cluster.address, *(["--work-store", store] if store else [])]
            env = {**cluster.env, **moto.env}
            moto_before = moto.cpu()
            with ClusterCpu(cluster) as cluster_cpu:
                m = h.run_measured([*h.CURATE, "run", str(RECIPE), *base, "--output", str(out), *extra], env=env,
                                   log=work / f"{name.replace(':', '').replace('/', '')}.log")
            h.require_ok(m, name)
            cpu = m.cpu_seconds + cluster_cpu.seconds + (moto.cpu() - moto_before if name == "s3://" else 0.0)
            manifest = h.manifest(out)
            fetched = next((ln for ln in m.output.splitlines() if "fetched" in ln), "")
            runs.append({"name": name, "wall": m.seconds, "cpu": cpu, "rows": manifest.rows_in,
                         "out_rows": manifest.rows_out, "digest": digest(out), "fetched": fetched, "parts": {}})
            print(f"{name}: {m.seconds:.1f}s wall, {cpu:.1f} CPU-s {fetched}", flush=True)
            shutil.rmtree(out, ignore_errors=True)
        finally:
            cluster.stop()

    try:
        for _ in range(args.repeats):  # interleaved, so a busy spell of the shared cores hits each alike
            for name in ("shared", "file://", "s3://"):
                run(name)
    finally:
        moto.stop()
    same = all(r["digest"] == runs[0]["digest"] for r in runs)
    runs = [median([r for r in runs if r["name"] == name]) for name in dict.fromkeys(r["name"] for r in runs)]
    shared = runs[0]
    rows = [[r["name"], f"{r['rows']:,}", f"{r['out_rows']:,}", f"{r['wall']:.1f}", f"{r['cpu']:.1f}",
             f"{r['rows'] / r['wall']:,.0f}", "" if r is shared else f"{(r['wall'] / shared['wall'] - 1) * 100:+.1f}%",
             "" if r is shared else f"{(r['cpu'] / shared['cpu'] - 1) * 100:+.1f}%", r["walls"]] for r in runs]
    docs = shared["rows"]
    body = "\n".join([
        f"recipes/near-dedup.yaml on the first {args.files} demo-corpus files ({docs:,} documents), 2 Ray nodes of "
        f"{half} CPU each on this machine's {args.workers} shared cores. shared: the output where both nodes see it; "
        "file:// and s3://: the worker node cannot see the output (a private tmpfs over its directory) and the "
        "work files cross nodes through `--work-store` (the machine's disk; a moto S3 server on loopback, its CPU "
        f"counted). Load average at the end: {h.load()}.",
        "",
        h.table(["work files", "docs in", "docs out", "wall s", "CPU s", "docs/s", "wall vs shared", "CPU vs shared",
                 "every run's wall s"], rows),
        "",
        f"Each figure: the median of {args.repeats} runs, interleaved. Outputs (data/ and trace/ sha256) identical "
        f"across all the runs: **{'yes' if same else 'NO'}**. What the store runs fetched into the head's _work/: "
        + "; ".join(f"{r['name']} {r['fetched'].split('Ray: ')[-1]}" for r in runs[1:]) + ". With a store, the fits' "
        "parallel pieces run on the head node only (where the fit's files are).",
    ])
    head = [[f"near-dedup on 2 Ray nodes, work files through an S3 work store vs a shared path ({docs:,} docs)",
             f"{(runs[2]['wall'] / shared['wall'] - 1) * 100:+.0f}% wall",
             f"{(runs[2]['cpu'] / shared['cpu'] - 1) * 100:+.0f}% CPU",
             "identical bytes" if same else "BYTES DIFFER"]]
    h.emit(args, body, head)
    if not same:
        raise SystemExit("the outputs differ")


if __name__ == "__main__":
    main()
