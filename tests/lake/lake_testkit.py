"""A small generated lake with every planted kind of containment, near-misses and bad files,
and helpers shared by the lake tests."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from curate_lake.scan import ScanResult

# (container, contained) pairs planted on purpose; brute force decides the rest.
PLANTED = {
    ("orders.parquet", "rows_subset.parquet"),
    ("orders.parquet", "projection.parquet"),
    ("orders.parquet", "subset_projection.parquet"),
    ("orders.parquet", "reordered_renamed.parquet"),
    ("orders.parquet", "widened.parquet"),
    ("orders.parquet", "orders_copy.parquet"),
    ("orders_copy.parquet", "orders.parquet"),
    ("orders.parquet", "orders_small.csv"),
    ("events", "events_eu.parquet"),
    ("orders.parquet", "orders_by_region"),
    ("users.parquet", "users_subset.jsonl"),
}
NEAR_MISSES = {
    ("orders.parquet", "near_row_changed.parquet"),
    ("orders.parquet", "near_out_of_range.parquet"),
    ("orders.parquet", "near_extra_column.parquet"),
}


def orders_table(n: int = 400, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    notes = [None if i % 7 == 0 else f"note {i % 13}" for i in range(n)]
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int32)),
            "customer": [f"c{int(x):03d}" for x in rng.integers(0, 60, n)],
            "amount": pa.array(np.round(rng.uniform(1, 500, n), 2)),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 90, n)]),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 10_000, n)],
                pa.timestamp("ms"),
            ),
            "note": notes,
            "region": [["eu", "us", "apac"][int(x)] for x in rng.integers(0, 3, n)],
        }
    )


def write_partitioned(table: pa.Table, root: Path, key: str) -> None:
    for value in sorted(set(table.column(key).to_pylist())):
        part = table.filter(pc.equal(table.column(key), value)).drop_columns([key])
        d = root / f"{key}={value}"
        d.mkdir(parents=True)
        pq.write_table(part, d / "part-0.parquet")


def make_lake(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    orders = orders_table()
    n = orders.num_rows
    pq.write_table(orders, root / "orders.parquet", row_group_size=100)
    pq.write_table(orders, root / "orders_copy.parquet")
    subset = orders.take(rng.permutation(n)[:150])
    pq.write_table(subset, root / "rows_subset.parquet")
    pq.write_table(orders.select(["customer", "amount"]), root / "projection.parquet")
    pq.write_table(subset.select(["region", "id", "note"]), root / "subset_projection.parquet")
    renamed = subset.select(["amount", "id", "customer"]).rename_columns(["Amount", "ID", "Customer "])
    pq.write_table(renamed, root / "reordered_renamed.parquet")
    widened = subset.select(["id", "customer"]).cast(pa.schema([("id", pa.int64()), ("customer", pa.large_string())]))
    pq.write_table(widened, root / "widened.parquet")
    pcsv.write_csv(subset.select(["id", "customer"]).slice(0, 40), root / "orders_small.csv")
    write_partitioned(orders.take(rng.permutation(n)[:200]), root / "orders_by_region", "region")
    # A partitioned container and a single-file table contained in it.
    events = pa.table({"event": [f"e{i}" for i in range(300)], "value": list(range(300)), "zone": ["eu", "us", "eu"] * 100})
    write_partitioned(events, root / "events", "zone")
    eu = events.filter(pc.equal(events.column("zone"), "eu")).slice(0, 50)
    pq.write_table(eu, root / "events_eu.parquet")
    users = pa.table({"user": [f"u{i}" for i in range(100)], "age": pa.array(rng.integers(18, 80, 100), pa.int64())})
    pq.write_table(users, root / "users.parquet")
    with open(root / "users_subset.jsonl", "w") as f:
        for row in users.slice(10, 30).to_pylist():
            f.write(json.dumps(row) + "\n")

    # Near-misses: each differs from a true subset by one thing.
    changed = subset.to_pydict()
    changed["customer"][5] = "c000x"  # inside the customer range, so only the content step can see it
    pq.write_table(pa.table(changed, schema=subset.schema), root / "near_row_changed.parquet")
    out_of_range = subset.to_pydict()
    out_of_range["amount"][3] = 10_000.0
    pq.write_table(pa.table(out_of_range, schema=subset.schema), root / "near_out_of_range.parquet")
    pq.write_table(subset.append_column("extra", pa.array(range(150))), root / "near_extra_column.parquet")

    # Files the scan must report and survive.
    (root / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    pq.write_table(orders.schema.empty_table(), root / "empty.parquet")
    mixed = root / "mixed"
    (mixed / "k=1").mkdir(parents=True)
    (mixed / "k=2").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), mixed / "k=1" / "part-0.parquet")
    pq.write_table(pa.table({"a": ["x", "y"]}), mixed / "k=2" / "part-0.parquet")
    (root / "bad_lines.jsonl").write_text('{"user": "u1", "age": 20}\n{"user": "u2", "age": \n')
    (root / "README.txt").write_text("not a table")
    return root


def _duckdb_csv(table: pa.Table, path: Path) -> None:
    con = duckdb.connect()
    con.register("t", table)
    con.execute(f"COPY t TO '{path}' (HEADER)")


# The tools real CSV files come from; each writes timestamps, NaN, NULL and booleans its own way.
WRITERS = {
    "pandas": lambda t, path: t.to_pandas().to_csv(path, index=False),
    "pyarrow": lambda t, path: pcsv.write_csv(t, path),
    "polars": lambda t, path: pl.from_arrow(t).write_csv(path),
    "duckdb": _duckdb_csv,
}


def write_csv(table: pa.Table, path: Path, writer: str) -> None:
    WRITERS[writer](table, path)


def confirmed_names(result: ScanResult) -> set[tuple[str, str]]:
    names = [t.name for t in result.tables]
    return {(names[e.container], names[e.contained]) for e in result.confirmed()}
