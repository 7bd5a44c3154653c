"""ADP throughput and memory: convert and export 1M trajectories replicated from the fixtures.

Raw records (and, for export, standardized trajectories) of every fixture dataset are cycled
with fresh ids and fed as JSON lines through the converters, schema check and exporters the
`curate adp` steps use (parse, convert or validate+render, serialize one output line each); outputs are
serialized and discarded so that disk size does not limit the run. Peak RSS is sampled every
10% to show memory stays flat. One process, one core: the rates are per core (reported per wall second and per CPU second,
the steadier figure on a shared machine).

    python bench/sections/adp.py [--n 1000000] [--fixtures DIR] [--section-out PATH]

The fixtures default to the first of shared/fixtures/adp, ../shared/fixtures/adp, ../../shared/fixtures/adp
(relative to the repository root) that exists.
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
import platform
import resource
import time
from itertools import cycle

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from curate_operators.agent import converters, environments  # noqa: E402
from curate_operators.agent.exporters import Exporter, Skip  # noqa: E402
from curate_operators.agent.schema import validate_trajectory  # noqa: E402


class NullSink:
    """Serializes records like the JSONL writer, then drops them."""

    def __init__(self):
        self.count = self.bytes = 0

    def write(self, record: dict) -> None:
        self.bytes += len(orjson.dumps(record))
        self.count += 1


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def raw_units(fixtures: Path) -> list[tuple[str, list[bytes]]]:
    """(source, [raw record lines]) per trajectory of every dataset with raw samples."""
    units = []
    for d in sorted(p for p in fixtures.iterdir() if (p / "sample_raw.json").is_file()):
        conv = converters.get(d.name)
        records = json.loads((d / "sample_raw.json").read_text())
        if conv.group_by:
            groups: dict = {}
            for r in records:
                groups.setdefault(r[conv.group_by], []).append(r)
            units += [(d.name, [orjson.dumps(r) for r in g]) for g in groups.values()]
        else:
            units += [(d.name, [orjson.dumps(r)]) for r in records]
    return units


def _mark(marks: list, done: int, what: str) -> None:
    marks.append((done, round(rss_mb()), round(peak_mb())))
    print(f"  {what}: {done:,} done, RSS {marks[-1][1]} MB, peak {marks[-1][2]} MB, "
          f"{time.process_time():.0f} CPU-s", flush=True)


def bench_convert(fixtures: Path, n: int) -> dict:
    units = raw_units(fixtures)
    sink, done, marks = NullSink(), 0, []
    start, cpu = time.perf_counter(), time.process_time()
    for i, (source, lines) in zip(range(n), cycle(units)):
        records = [orjson.loads(line) for line in lines]  # as read from a JSONL file
        for r in records:
            r["id"] = f"{source}-{i}"  # fresh ids, as a real 1M-row file would have
        for unit in converters.iter_convert(converters.get(source), records):
            if unit.trajectory is None:
                raise RuntimeError(unit.error)
            validate_trajectory(unit.trajectory)
            sink.write(unit.trajectory)
        done += 1
        if done % max(1, n // 10) == 0:
            _mark(marks, done, "convert")
    secs, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"trajectories": done, "seconds": secs, "cpu": cpu, "per_s": done / secs, "per_cpu_s": done / cpu,
            "rss_marks": marks, "out_mb": sink.bytes / 1e6, "datasets": len({u[0] for u in units})}


def bench_export(fixtures: Path, n: int, style: str) -> dict:
    exporters, items = {}, []
    for d in sorted(p for p in fixtures.iterdir() if (p / "sample_std.json").is_file()):
        env = d.name if d.name in environments.names() else None
        exporters[d.name] = Exporter(style, environment=env)
        items += [(d.name, orjson.dumps(t)) for t in json.loads((d / "sample_std.json").read_text())]
    sink, done, skipped, marks = NullSink(), 0, 0, []
    start, cpu = time.perf_counter(), time.process_time()
    for i, (name, line) in zip(range(n), cycle(items)):
        traj = orjson.loads(line)
        traj["id"] = f"{name}-{i}"
        validate_trajectory(traj)
        try:
            for rec in exporters[name].export(traj):
                sink.write(rec)
        except Skip:
            skipped += 1
        done += 1
        if done % max(1, n // 10) == 0:
            _mark(marks, done, "export")
    secs, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"trajectories": done, "seconds": secs, "cpu": cpu, "per_s": done / secs, "per_cpu_s": done / cpu,
            "rss_marks": marks, "samples": sink.count, "skipped": skipped, "out_mb": sink.bytes / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    root = Path(__file__).resolve().parents[2]
    found = [p for p in (root / "shared", root.parent / "shared", root.parent.parent / "shared")
             if (p / "fixtures" / "adp").is_dir()]
    ap.add_argument("--fixtures", type=Path, default=(found[0] if found else root / "shared") / "fixtures" / "adp")
    ap.add_argument("--section-out", type=Path)
    ap.add_argument("--style", default="openhands")
    ap.add_argument("--only", choices=["convert", "export"])
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"n={args.n:,}", flush=True)
    results = {}
    if args.only != "export":
        r = results["convert (raw -> ADP, validated)"] = bench_convert(args.fixtures, args.n)
        print(f"convert: {r['trajectories']:,} trajectories from {r['datasets']} datasets in {r['seconds']:.1f}s wall, "
              f"{r['cpu']:.1f} CPU-s = {r['per_s']:,.0f}/s wall, {r['per_cpu_s']:,.0f} trajectories per CPU-second "
              f"(one core); output {r['out_mb']:,.0f} MB serialized", flush=True)
        print(f"  (rows done, RSS MB, peak RSS MB) every 10%: {r['rss_marks']}", flush=True)
    if args.only != "convert":
        r = results[f"export (ADP -> {args.style} SFT, validated)"] = bench_export(args.fixtures, args.n, args.style)
        print(f"export ({args.style}): {r['trajectories']:,} trajectories in {r['seconds']:.1f}s wall, {r['cpu']:.1f} "
              f"CPU-s = {r['per_s']:,.0f}/s wall, {r['per_cpu_s']:,.0f} trajectories per CPU-second (one core); "
              f"{r['samples']:,} samples, {r['skipped']:,} skipped; output {r['out_mb']:,.0f} MB serialized", flush=True)
        print(f"  (rows done, RSS MB, peak RSS MB) every 10%: {r['rss_marks']}", flush=True)
    if args.section_out:
        rows = []
        for name, r in results.items():
            rss = sorted({m[1] for m in r["rss_marks"]})
            rows.append(f"| {name} | {r['trajectories']:,} | {r['seconds']:.1f} | {r['cpu']:.1f} | {r['per_s']:,.0f} | "
                        f"{r['per_cpu_s']:,.0f} | {r['out_mb'] / 1000:.2f} GB | "
                        f"{rss[0]}-{rss[-1]} MB (peak {max(m[2] for m in r['rss_marks'])}) |")
        body = "\n".join([
            f"{args.n:,} trajectories replicated (fresh ids) from the fixtures ({args.fixtures}): raw records of the datasets with raw samples for conversion, the "
            "standardized samples for export. Each record is parsed from its JSON line, converted (and validated "
            "against the ADP schema) or validated and rendered, and its output serialized to a JSON line (then "
            "dropped, so disk does not bound the run); one process, one core, streaming. No anchor: absolute rates.",
            "",
            "| | trajectories | wall s | CPU s | per wall second | per CPU second (one core) | serialized output | "
            "RSS at every 10% |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
            *rows,
        ])
        args.section_out.parent.mkdir(parents=True, exist_ok=True)
        args.section_out.write_text(body + "\n")
        args.section_out.with_suffix(".json").write_text(json.dumps(
            [[f"ADP {name.split(' ')[0]}, trajectories per second ({args.n:,})", f"{r['per_s']:,.0f}/s",
              f"{r['per_cpu_s']:,.0f}/CPU-s", "one core, no anchor"] for name, r in results.items()]))

if __name__ == "__main__":
    main()
