"""Speed and memory bench: curate's dedup at 250k -> 1M documents, next to datatrove's MinHash pipeline.

Each tool runs in its own process; its peak resident memory is the largest sum of RSS over
its process tree, sampled every 0.2 s. curate runs fit, apply and writes the kept rows to
Parquet (what a run does); datatrove runs its documented 4-stage pipeline with defaults
(which also writes the kept documents). Threads/workers = --workers.

    python bench/dedup_speed.py --sizes 250000 1000000 --anchor-docs 50000 --results bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dedup_corpus  # noqa: E402
from dedup_results import write_section  # noqa: E402

ANCHOR_PY = HERE / ".venvs" / "dedup" / "bin" / "python"


def tree_rss(pid: int) -> int:
    """Sum of RSS (bytes) of pid and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            pages = int(Path(f"/proc/{entry}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def measured(cmd: list[str]) -> tuple[dict, float, int]:
    """Run cmd; (its last stdout line as JSON, wall seconds, peak tree RSS bytes)."""
    started = time.perf_counter()
    # stdout goes to a file: a pipe read only at exit would block a child printing more than its buffer.
    with tempfile.TemporaryFile("w+") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL, text=True)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.2)
        stdout.seek(0)
        out = stdout.read()
    if proc.returncode:
        raise RuntimeError(f"{cmd[:3]} failed with {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - started, peak


def corpus(docs: int, seed: int) -> Path:
    data = HERE / ".data" / f"dedup-{docs}-s{seed}" / "data"
    if not data.exists():
        dedup_corpus.write(dedup_corpus.generate(docs, seed), data, shards=max(8, docs // 125_000))
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000])
    ap.add_argument("--anchor-docs", type=int, default=50_000, help="datatrove runs on a corpus of this size (its pace is too slow for 1M here)")
    ap.add_argument("--reuse-anchor", action="store_true", help="reuse datatrove's last measurement (bench/.runs) instead of re-running it")
    ap.add_argument("--op", default="containment_dedup", choices=["containment_dedup", "minhash_dedup"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", action="store_true", help="curate runs as a one-step recipe through the local engine (curate run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results", type=Path)
    args = ap.parse_args()

    # Every size is its own generated corpus (same recipe), so the planted-pair density is the
    # same at each size: a subset of a shuffled corpus would lose most pairs' partners.
    rows = []
    for size in sorted(args.sizes):
        data = corpus(size, args.seed)
        result, seconds, peak = measured([sys.executable, str(HERE / "dedup_run_one.py"), args.op, str(data),
                                          str(HERE / ".runs" / f"speed-{size}"), "--workers", str(args.workers),
                                          *(["--engine"] if args.engine else [])])
        rows.append((f"curate {args.op}{' (curate run)' if args.engine else ''}", size, seconds, peak, result["removed"]))
    cache = HERE / ".runs" / f"dedup-speed-datatrove-{args.anchor_docs}-w{args.workers}.json"
    if args.reuse_anchor and cache.exists():
        rows.append(tuple(json.loads(cache.read_text())))
    elif ANCHOR_PY.exists() and args.anchor_docs:
        data = corpus(args.anchor_docs, args.seed)
        result, seconds, peak = measured([str(ANCHOR_PY), str(HERE / "dedup_anchors.py"), "datatrove", str(data),
                                          str(HERE / ".runs" / "speed-datatrove"), "--workers", str(args.workers)])
        rows.append(("datatrove MinHash (defaults)", args.anchor_docs, seconds, peak, len(result["removed"])))
        cache.write_text(json.dumps(rows[-1]))

    lines = ["| tool | documents | seconds | docs/s | peak RSS (GB) | removed |", "|---|---|---|---|---|---|"]
    for name, size, seconds, peak, removed in rows:
        lines.append(f"| {name} | {size} | {seconds:.1f} | {size / seconds:.0f} | {peak / 1e9:.2f} | {removed} |")
    ours = [r for r in rows if r[0].startswith("curate")]
    if len(ours) >= 2:
        (_, n0, t0, _, _), (_, n1, t1, _, _) = ours[0], ours[-1]
        lines.append(f"\nScaling: {n0} -> {n1} documents ({n1 / n0:.1f}x) took {t1 / t0:.2f}x the time.")
    theirs = [r for r in rows if r[0].startswith("datatrove")]
    if theirs and ours:
        rate_ours = ours[-1][1] / ours[-1][2]
        rate_theirs = theirs[0][1] / theirs[0][2]
        caveat = "" if theirs[0][1] >= ours[-1][1] else (
            f" (datatrove measured on {theirs[0][1]} documents; its stages are per-document, so its docs/s "
            f"at {ours[-1][1]} would not be higher)")
        lines.append(f"Throughput ratio curate ({ours[-1][1]} docs) / datatrove ({theirs[0][1]} docs): "
                     f"{rate_ours / rate_theirs:.1f}x{caveat}.")
    if args.reuse_anchor:
        lines.append("The datatrove row is the measurement of the previous run of this bench (same corpus, same machine).")
    body = "\n".join(lines)
    print(body)
    if args.results:
        command = "python bench/dedup_speed.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        via = "-engine" if args.engine else ""
        title = f"Dedup speed and memory ({args.op}{', through curate run' if args.engine else ''}, {args.workers} workers)"
        write_section(args.results, f"dedup-speed-{args.op}{via}", title, body, command)


if __name__ == "__main__":
    main()
