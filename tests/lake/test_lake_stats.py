"""Statistics without a data scan agree with a scan, and their value mapping keeps order."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from curate_lake.stats import comparable, compute_stats
from curate_lake.tables import discover

ints = st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), min_size=1, max_size=60)
texts = st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(ints, texts, st.integers(1, 20))
def test_footer_stats_equal_scanned_stats(tmp_path_factory, xs, ss, row_group):
    n = min(len(xs), len(ss))
    table = pa.table({"x": pa.array(xs[:n], pa.int64()), "s": pa.array(ss[:n], pa.string())})
    d = tmp_path_factory.mktemp("stats")
    pq.write_table(table, d / "t.parquet", row_group_size=row_group)
    (t,), _ = discover([d / "t.parquet"])
    stats = {c.name: c for c in compute_stats(t).columns}
    for name in ("x", "s"):
        col = table.column(name).to_pylist()
        present = [v for v in col if v is not None]
        c = stats[name]
        assert (c.nulls, c.values) == (col.count(None), len(present))
        if present:
            assert (c.min, c.max) == (min(present), max(present))


@given(st.datetimes(), st.datetimes())
def test_timestamp_mapping_keeps_order(a, b):
    if a <= b:
        assert comparable(a, "timestamp") <= comparable(b, "timestamp")


@given(st.binary(max_size=6), st.binary(max_size=6))
def test_binary_mapping_keeps_order(a, b):
    assert (a < b) == (comparable(a, "binary") < comparable(b, "binary"))


@given(st.dates(), st.dates())
def test_date_mapping_keeps_order(a, b):
    assert (a < b) == (comparable(a, "date") < comparable(b, "date"))


def test_csv_and_jsonl_stats_come_from_one_scan(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n3,x\n1,y\n3,x\n")
    (tmp_path / "t.jsonl").write_text('{"a": 2, "d": "2024-01-02"}\n{"a": null, "d": "2024-01-01"}\n')
    tables, _ = discover([tmp_path])
    csv, jsonl = sorted(tables, key=lambda t: t.name)
    s = compute_stats(csv)
    # CSV columns are text, with the bounds of each family all their text parses as
    assert (s.rows, s.distinct_rows) == (3, None)
    assert {c.name: (c.family, c.min, c.max) for c in s.columns} == {"a": ("text", "1", "3"), "b": ("text", "x", "y")}
    a, b = s.columns
    assert a.parses == {"int": [1, 3], "float": [1.0, 3.0]} and b.parses == {}
    s = compute_stats(jsonl)
    a, d = s.columns
    assert (a.nulls, a.min, a.max) == (1, 2, 2)
    assert (d.family, d.min) == ("date", dt.date(2024, 1, 1).toordinal())


def test_values_without_a_python_form_give_no_bound(tmp_path):
    # ~12,000 years after 1970: valid Arrow, beyond datetime.max; the stats must not fail the scan
    far = 12_000 * 365 * 86400 * 10**6
    pq.write_table(pa.table({"t": pa.array([0, far], pa.timestamp("us"))}), tmp_path / "far.parquet")
    (t,), _ = discover([tmp_path / "far.parquet"])
    (c,) = compute_stats(t).columns
    assert (c.min, c.max, c.values) == (0, None, 2)  # the epoch bound is fine; the far one is dropped


def test_long_strings_give_no_bound():
    assert comparable("x" * 63, "string") == "x" * 63
    assert comparable("x" * 64, "string") is None
    assert comparable(b"\x00" * 64, "binary") is None
