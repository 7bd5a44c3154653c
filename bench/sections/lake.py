"""Benchmark of `curate lake scan` (R2D2 containment) on a generated lake.

Generates a lake of N tables (default 1,000) from base tables with planted contained
tables (row subsets by id range, date window or random sample; column projections; both;
reordered and renamed columns; widened types; partitioned directories; CSV extracts; exact
copies) and near-misses (one row changed, one value out of range, one extra column).
Each base also has a typed table shaped like public ones (instants, nanosecond times,
midnights, NaN-bearing floats, integers with NULLs, booleans, zip codes, digit strings,
empty strings) with CSV extracts written by pandas, pyarrow, polars and duckdb, whose
text a CSV reader types differently from the Parquet, and a CSV near-miss.
Then: scan (timed, with the funnel), rescan of the unchanged lake (timed), and precision
and recall of the confirmed edges against brute force.

    python bench/sections/lake.py --tables 1000 --threads 2 --round-trip [--section-out PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import datetime as dt
import os
import platform
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from curate_lake.apply import apply_plan  # noqa: E402
from curate_lake.plan_file import make_plan  # noqa: E402
from curate_lake.quarantine import Quarantine  # noqa: E402
from curate_lake.reader import TableReadError, read_table  # noqa: E402
from curate_lake.restore import restore_tables  # noqa: E402
from curate_lake.tables import discover  # noqa: E402
from curate_lake.scan import ScanOptions, scan_lake  # noqa: E402
from curate_lake.scan_output import write_scan  # noqa: E402
from tests.lake.brute_force import contained_pairs  # noqa: E402  (the tests' oracle, not part of the product)
from tests.lake.lake_testkit import WRITERS  # noqa: E402  (the CSV writers the tests use)

DERIVED_PER_BASE = 30
LAKE_DESCRIPTION = (
    "Lake: base tables (two per schema, overlapping id ranges), each with 24 planted tables: id-range, date-window "
    "and random row subsets, column projections, both, reordered+renamed columns, widened types (int32->int64, "
    "string->large_string), hive-partitioned directories, CSV extracts, an exact copy, and 3 near-misses (one row "
    "changed inside the range, one value out of range, one extra column); and a typed table (instants, ns times, "
    "midnights, NaN-bearing floats, ints with NULLs, booleans, zip codes, digit strings, empty strings) with CSV "
    "extracts of row and column subsets by pandas, pyarrow, polars and duckdb and a CSV near-miss; plus an "
    "unreadable, an empty and a mixed-schema table."
)
CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"]


def base_table(rng: np.random.Generator, domain: int, start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows)
    t0 = dt.datetime(2023, 1, 1)
    c_values = [None if x < 0.05 else f"d{domain}-{int(x * 500)}" for x in rng.random(rows)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "ts": pa.array([t0 + dt.timedelta(minutes=int(i) * 7) for i in ids], pa.timestamp("ms")),
            "category": [CATEGORIES[k] for k in rng.integers(0, len(CATEGORIES), rows)],
            f"d{domain}_a": np.round(rng.normal(100, 30, rows), 3),
            f"d{domain}_b": pa.array(rng.integers(0, 1000, rows), pa.int32()),
            f"d{domain}_c": c_values,
        }
    )


def _write_partitioned(table: pa.Table, root: Path, key: str) -> None:
    for value in sorted(set(table.column(key).to_pylist())):
        part = table.filter(pc.equal(table.column(key), value)).drop_columns([key])
        (root / f"{key}={value}").mkdir(parents=True)
        pq.write_table(part, root / f"{key}={value}" / "part-0.parquet")


def derive(rng: np.random.Generator, base: pa.Table, name: str, out: Path) -> None:
    """Writes the 24 planted tables of one base (names start with `name`)."""
    n = base.num_rows
    cols = base.column_names

    def id_window(frac):
        lo = int(rng.integers(0, int(n * (1 - frac))))
        return base.slice(lo, int(n * frac))

    def sample(frac):
        return base.take(np.sort(rng.choice(n, int(n * frac), replace=False)))

    def some_columns(k):
        return [cols[i] for i in sorted(rng.choice(len(cols), k, replace=False))]

    tables: dict[str, pa.Table] = {}
    for k in range(4):
        tables[f"range{k}"] = id_window(rng.uniform(0.1, 0.5))
    tables["days"] = base.filter(pc.less(base.column("ts"), base.column("ts")[n // 3]))
    for k in range(2):
        tables[f"sample{k}"] = sample(rng.uniform(0.05, 0.3))
    for k in range(3):
        tables[f"proj{k}"] = base.select(some_columns(int(rng.integers(2, 5))))
    for k in range(3):
        tables[f"both{k}"] = id_window(rng.uniform(0.1, 0.4)).select(some_columns(3))
    for k in range(2):
        t = sample(0.2).select(list(reversed(cols)))
        tables[f"reordered{k}"] = t.rename_columns([c.upper() if i % 2 else c for i, c in enumerate(t.column_names)])
    for k in range(2):
        t = id_window(0.3)
        target = pa.schema(
            [pa.field(f.name, pa.int64() if f.type == pa.int32() else pa.large_string() if f.type == pa.string() else f.type) for f in t.schema]
        )
        tables[f"widened{k}"] = t.cast(target)
    tables["copy"] = base
    subset = id_window(0.2)
    changed = subset.to_pydict()
    changed["category"][len(changed["category"]) // 2] = "beta-x"  # inside the min-max range
    tables["near_row_changed"] = pa.table(changed, schema=subset.schema)
    oor = sample(0.1).to_pydict()
    b_col = [c for c in cols if c.endswith("_b")][0]
    oor[b_col][0] = 5000  # outside the range of the base
    tables["near_out_of_range"] = pa.table(oor, schema=base.schema)
    tables["near_extra_column"] = sample(0.1).append_column("extra", pa.array(rng.integers(0, 9, int(n * 0.1))))
    for kind, t in tables.items():
        pq.write_table(t, out / f"{name}_{kind}.parquet")
    for k in range(2):
        _write_partitioned(id_window(0.25), out / f"{name}_partitioned{k}", "category")
    csv = sample(0.05).select(["id", "category", b_col])
    pcsv.write_csv(csv, out / f"{name}_extract.csv")


def typed_table(rng: np.random.Generator, start: int, rows: int) -> pa.Table:
    """Columns shaped like those of public tables that CSV writers and readers type their own way."""
    t0 = dt.datetime(2019, 3, 1, 8, 30)
    seconds = rng.integers(0, 3 * 10**7, rows)
    k = np.arange(rows)
    return pa.table(
        {
            "order_no": pa.array(k + start, pa.int64()),
            "created_utc": pa.array([t0 + dt.timedelta(seconds=int(x)) for x in seconds], pa.timestamp("us", tz="UTC")),
            "sensor_ns": pa.array(1_500_000_000_000_000_000 + rng.integers(0, 10**15, rows), pa.timestamp("ns")),
            "report_day": pa.array([dt.datetime(2020, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 900, rows)], pa.timestamp("us")),
            "rating": pa.array(
                [float("nan") if i % 9 == 0 else None if i % 11 == 0 else float(np.round(x, 2)) for i, x in zip(k, rng.uniform(0, 5, rows))],
                from_pandas=False,
            ),
            "quantity": pa.array([None if i % 6 == 0 else int(x) for i, x in zip(k, rng.integers(0, 500, rows))], pa.int64()),
            "in_stock": pa.array([None if i % 13 == 0 else bool(x) for i, x in zip(k, rng.integers(0, 2, rows))]),
            "zip": [f"{int(x):05d}" for x in rng.integers(0, 99_999, rows)],
            "product_code": [str(int(x)) for x in rng.integers(10_000, 99_999, rows)],
            "comment": [None if i % 5 == 0 else "" if i % 5 == 1 else f"note {i % 17}" for i in k],
        }
    )


def derive_typed(rng: np.random.Generator, typed: pa.Table, name: str, out: Path) -> None:
    """The typed table, a CSV extract of a row and column subset by each writer, and a CSV near-miss."""
    pq.write_table(typed, out / f"{name}_typed.parquet")
    n, cols = typed.num_rows, typed.column_names
    for writer, write in WRITERS.items():
        rows = typed.take(np.sort(rng.choice(n, int(n * rng.uniform(0.02, 0.1)), replace=False)))
        write(rows.select(sorted(rng.choice(cols, int(rng.integers(3, len(cols) + 1)), replace=False), key=cols.index)), out / f"{name}_typed_{writer}.csv")
    near = typed.take(np.sort(rng.choice(n, int(n * 0.05), replace=False))).to_pydict()
    near["product_code"][0] += "9"  # six digits: no product has that code
    WRITERS["pandas"](pa.table(near, schema=typed.schema), out / f"{name}_typed_near.csv")


def generate(out: Path, n_tables: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_bases = max(1, n_tables // (DERIVED_PER_BASE + 1))
    out.mkdir(parents=True)
    for b in range(n_bases):
        domain = b // 2  # two bases share each schema; their id ranges overlap in part
        rows = int(rng.integers(3000, 12000))
        start = 0 if b % 2 == 0 else int(rng.integers(2000, 8000))
        base = base_table(rng, domain, start, rows)
        pq.write_table(base, out / f"b{b:03d}.parquet")
        derive(rng, base, f"b{b:03d}", out)
        derive_typed(rng, typed_table(rng, start, rows), f"b{b:03d}", out)
    # Files the scan must report without stopping.
    (out / "zz_broken.parquet").write_bytes(b"PAR1 truncated")
    pq.write_table(base.schema.empty_table(), out / "zz_empty.parquet")
    for k, values in ((1, pa.array([1, 2])), (2, pa.array(["x", "y"]))):
        (out / "zz_mixed" / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"a": values}), out / "zz_mixed" / f"k={k}" / "part-0.parquet")


def snapshot(lake: Path) -> dict[str, pa.Table]:
    out = {}
    for t in discover([lake])[0]:
        try:
            out[t.name] = read_table(t)
        except TableReadError:
            pass  # the planted unreadable tables
    return out


def round_trip(lake: Path, scan_dir: Path, workdir: Path) -> str:
    """Plans, applies (with purge) and restores every deletion; checks every table is back exactly."""
    before = snapshot(lake)
    t = time.perf_counter()
    plan = make_plan(scan_dir, latency=0.5, lam=1000.0)
    plan_s = time.perf_counter() - t
    quarantine = Quarantine(workdir / "quarantine")
    shutil.rmtree(quarantine.root, ignore_errors=True)
    t = time.perf_counter()
    report = apply_plan(plan, quarantine, yes=True, purge=True)
    apply_s = time.perf_counter() - t
    t = time.perf_counter()
    restored = restore_tables(quarantine, None)
    restore_s = time.perf_counter() - t
    after = snapshot(lake)
    exact = after.keys() == before.keys() and all(after[k].equals(v, check_metadata=True) for k, v in before.items())
    return (
        f"- plan ({plan['note']}, {plan_s:.1f}s): delete {len(plan['deletions'])} tables, "
        f"{plan['bytes_saved'] / 1e6:.1f} of {plan['bytes_total'] / 1e6:.1f} MB\n"
        f"- apply --yes --purge: {len(report.moved)} moved, {len(report.skipped)} kept, {apply_s:.0f}s; "
        f"restore --all: {len(restored)} rebuilt, {restore_s:.0f}s; "
        f"every table equal to before (rows, order, schema): {exact}"
    )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parents[1] / ".data" / "lake_bench")
    ap.add_argument("--no-brute-force", action="store_true")
    ap.add_argument("--round-trip", action="store_true", help="also plan, apply and restore every deletion")
    ap.add_argument("--section-out", type=Path, help="write the section body here (bench/run_all.py assembles RESULTS.md)")
    args = ap.parse_args()

    lake, out = args.workdir / f"lake_{args.tables}_{args.seed}", args.workdir / "scan"
    if not lake.exists():
        t = time.perf_counter()
        generate(lake, args.tables, args.seed)
        print(f"generated {lake} in {time.perf_counter() - t:.1f}s")
    shutil.rmtree(out, ignore_errors=True)
    opts = ScanOptions(threads=args.threads, progress=sys.stderr.isatty())

    t, c = time.perf_counter(), time.process_time()  # process_time: CPU of all the process's threads (duckdb's too)
    first = scan_lake([lake], out, opts)
    first_s, first_cpu = time.perf_counter() - t, time.process_time() - c
    write_scan(out, [str(lake)], opts, first)
    t, c = time.perf_counter(), time.process_time()
    second = scan_lake([lake], out, opts)
    rescan_s, rescan_cpu = time.perf_counter() - t, time.process_time() - c

    names = [x.name for x in first.tables]
    confirmed = {(names[e.container], names[e.contained]) for e in first.confirmed()}
    assert confirmed == {(names[e.container], names[e.contained]) for e in second.confirmed()}
    lines = [
        f"- tables in graph: {len(first.tables)} ({sum(x.bytes for x in first.tables) / 1e6:.1f} MB), issues: {len(first.issues)}",
        f"- first scan: {first_s:.1f}s wall, {first_cpu:.1f} CPU-s; rescan (unchanged): {rescan_s:.2f}s wall "
        f"({rescan_s / first_s:.1%} of the first), {rescan_cpu:.2f} CPU-s ({rescan_cpu / first_cpu:.1%})",
        "- seconds per step: " + ", ".join(f"{k} {v:.1f}" for k, v in first.seconds.items()),
        "",
        "| step | pairs seen | removed | left |",
        "|---|---:|---:|---:|",
    ]
    for s in first.funnel["steps"]:
        lines.append(f"| {s['step']} | {s['seen']:,} | {s['removed']:,} | {s['left']:,} |")
    f = first.funnel
    lines += [
        "",
        f"- content step saw {f['content_fraction_of_pairs']:.2%} of all ordered pairs "
        f"({f['content_fraction_of_schema_candidates']:.1%} of schema candidates); confirmed edges: {f['confirmed']}",
    ]
    if not args.no_brute_force:
        t, c = time.perf_counter(), time.process_time()
        truth = contained_pairs(first.tables)
        bf_s, bf_cpu = time.perf_counter() - t, time.process_time() - c
        tp = len(confirmed & truth)
        precision = tp / len(confirmed) if confirmed else 1.0
        recall = tp / len(truth) if truth else 1.0
        lines.append(
            f"- brute force ({bf_s:.0f}s wall, {bf_cpu:.0f} CPU-s): {len(truth)} true edges; precision {precision:.4f}, recall {recall:.4f}"
            f" (false positives {len(confirmed - truth)}, misses {len(truth - confirmed)})"
        )
    if args.round_trip:
        lines.append(round_trip(lake, out, args.workdir))
    lines.insert(0, f"{LAKE_DESCRIPTION.replace('Lake: base tables', f'Lake: {args.tables} tables from base tables')} "
                    f"duckdb threads {args.threads}; load average at the end {os.getloadavg()[0]:.1f}.\n")
    report = "\n".join(lines)
    print(report)
    if args.section_out:
        import json

        args.section_out.parent.mkdir(parents=True, exist_ok=True)
        args.section_out.write_text(report + "\n")
        head = [[f"lake scan, {len(first.tables)} tables", f"{first_s:.1f}s", f"{first_cpu:.1f} CPU-s",
                 f"rescan {rescan_s / first_s:.1%} of the first (wall)"]]
        if not args.no_brute_force:
            head.append(["lake scan precision / recall vs brute force", f"{precision:.4f} / {recall:.4f}", "", ""])
        args.section_out.with_suffix(".json").write_text(json.dumps(head))

if __name__ == "__main__":
    main()
