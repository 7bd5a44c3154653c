"""Containment across formats: a CSV extract of a Parquet table is found whatever types a
CSV reader would infer from its text, and the canonical form used to compare them never
makes containment that does not hold (zip codes are not integers, an offset is not naive).

Each extract is written by the tools that write real CSV files (pandas, pyarrow, polars,
duckdb), since each renders timestamps, NaN, NULL and booleans its own way.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_lake.scan import ScanOptions, scan_lake
from curate_lake.text import TEXT_FAMILIES, parsed_sql
from tests.lake import brute_force
from tests.lake.brute_force import contained_pairs
from tests.lake.lake_testkit import WRITERS, confirmed_names, write_csv

N = 240


def real_columns(n: int = N, seed: int = 3) -> dict[str, pa.Array]:
    """One column per class of type trouble, shaped like columns of public tables."""
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2019, 3, 1, 8, 30)
    seconds = rng.integers(0, 3 * 10**7, n)
    return {
        "order_time": pa.array([t0 + dt.timedelta(seconds=int(s)) for s in seconds], pa.timestamp("ms")),
        "order_time_us": pa.array(
            [t0 + dt.timedelta(seconds=int(s), microseconds=int(u)) for s, u in zip(seconds, rng.integers(0, 10**6, n))],
            pa.timestamp("us"),
        ),
        # pandas writes a column whose times are all midnight as bare dates
        "report_day": pa.array([dt.datetime(2020, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 900, n)], pa.timestamp("us")),
        "created_utc": pa.array([t0 + dt.timedelta(seconds=int(s)) for s in seconds], pa.timestamp("us", tz="UTC")),
        "sensor_ns": pa.array(1_500_000_000_000_000_000 + rng.integers(0, 10**15, n), pa.timestamp("ns")),
        "birth_date": pa.array([dt.date(1950, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 20_000, n)]),
        # NaN and NULL in one float column (pandas writes both as an empty field, pyarrow NaN as "nan")
        "rating": pa.array(
            [float("nan") if k % 9 == 0 else None if k % 11 == 0 else float(np.round(x, 2)) for k, x in enumerate(rng.uniform(0, 5, n))],
            from_pandas=False,
        ),
        "ratio": pa.array(rng.normal(0, 1, n)),  # full-precision doubles (1.2345678901234567e-05 and the like)
        # an integer column with NULLs: pandas reads it as float and writes 12.0
        "quantity": pa.array([None if k % 6 == 0 else int(x) for k, x in enumerate(rng.integers(0, 500, n))], pa.int64()),
        "in_stock": pa.array([None if k % 13 == 0 else bool(x) for k, x in enumerate(rng.integers(0, 2, n))]),
        # strings that look numeric: no leading zeros (a CSV reader calls them integers) ...
        "product_code": [str(int(x)) for x in rng.integers(10_000, 99_999, n)],
        # ... and with them (zip codes)
        "zip": [f"{int(x):05d}" for x in rng.integers(0, 99_999, n)],
        # empty strings and NULLs, both an empty CSV field
        "comment": [None if k % 5 == 0 else "" if k % 5 == 1 else f"note {k % 17}" for k in range(n)],
        # quoting: commas, quotes, newlines, non-ASCII
        "customer": [f'{["Ana", "Bo", "Zoë"][k % 3]} "{k % 7}", Inc.\nLtd' for k in range(n)],
    }


@pytest.fixture(scope="module")
def extracts(tmp_path_factory):
    """A Parquet table per column class and a CSV extract of some of its rows by every writer."""
    root = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(5)
    for name, col in real_columns().items():
        t = pa.table({"id": pa.array(np.arange(N, dtype=np.int32)), name: col})
        pq.write_table(t, root / f"{name}.parquet")
        rows = t.take(np.sort(rng.choice(N, 60, replace=False)))
        for writer in WRITERS:
            write_csv(rows, root / f"{name}.{writer}.csv", writer)
    result = scan_lake([root], tmp_path_factory.mktemp("scan"), ScanOptions(progress=False))
    return result, confirmed_names(result)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("column", list(real_columns(n=1)))
def test_a_csv_extract_of_a_parquet_table_is_contained(extracts, column, writer):
    result, confirmed = extracts
    assert not [i for i in result.issues if i["table"] == f"{column}.{writer}.csv"]
    assert (f"{column}.parquet", f"{column}.{writer}.csv") in confirmed


def test_the_oracle_agrees_on_every_extract(extracts):
    result, confirmed = extracts
    assert contained_pairs(result.tables) == confirmed


def scan_pair(tmp_path, container: pa.Table, csv_text: str) -> set:
    pq.write_table(container, tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_bytes(csv_text.encode())
    result = scan_lake([tmp_path], tmp_path / "out", ScanOptions(progress=False))
    assert not result.issues, result.issues
    confirmed = confirmed_names(result)
    assert contained_pairs(result.tables) == confirmed  # the oracle decides the same
    return confirmed


# Precision: text that a lenient cast would turn into one of A's values, but that is not it.
NOT_CONTAINED = {
    "leading zeros are not integers": (pa.table({"zip": pa.array([1234, 2345], pa.int64())}), "zip\n01234\n"),
    "a fraction is not an integer": (pa.table({"n": pa.array([1, 2], pa.int64())}), "n\n1.5\n"),
    "padded numbers are not numbers": (pa.table({"n": pa.array([1, 2], pa.int64())}), "n\n 1\n"),
    "an offset is not a naive time": (
        pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 10)], pa.timestamp("us"))}),
        "t\n2024-01-01 10:00:00+02:00\n",
    ),
    "a naive time is not an instant": (
        pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 10)], pa.timestamp("us", tz="UTC"))}),
        "t\n2024-01-01 10:00:00\n",
    ),
    "nanoseconds are not microseconds": (
        pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 10)], pa.timestamp("us"))}),
        "t\n2024-01-01 10:00:00.000000001\n",
    ),
    "0/1 is a number, not a boolean": (pa.table({"b": [True, False]}), "b\n1\n0\n"),
    "t/f is not spelled out": (pa.table({"b": [True, False]}), "b\nt\n"),
    "US dates are ambiguous": (pa.table({"d": [dt.date(2024, 2, 1)]}), "d\n02/01/2024\n"),
    "a value is not a NULL": (pa.table({"x": [1.5, 2.5]}), "x\n1.5\n\n"),
    "a value is not NaN": (pa.table({"x": [1.5, float("nan")]}), "x\n1.5\n2.5\n"),
}


@pytest.mark.parametrize("case", list(NOT_CONTAINED))
def test_a_canonical_form_never_makes_containment(tmp_path, case):
    container, text = NOT_CONTAINED[case]
    assert ("a.parquet", "b.csv") not in scan_pair(tmp_path, container, text)


CONTAINED = {
    "NaN written as nan, NaN or an empty field": (pa.table({"x": [1.5, float("nan"), None]}), "x\nnan\nNaN\n\n1.5\n"),
    "an integer written as a float": (pa.table({"n": pa.array([1, None, -3], pa.int64())}), "n\n1.0\n\n-3.0\n"),
    "an empty field is an empty string": (pa.table({"s": ["", "a"]}), "s\n\na\n"),
    "booleans in any case": (pa.table({"b": [True, False]}), "b\nTrue\nfalse\nTRUE\n"),
    "ISO timestamps with T, Z and trailing zeros": (
        pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 10, 0, 0, 500000)], pa.timestamp("ms", tz="UTC"))}),
        "t\n2024-01-01T10:00:00.500000000Z\n2024-01-01 12:00:00.5+02:00\n",
    ),
    "a time of day": (pa.table({"t": pa.array([dt.time(10, 0, 1)])}), "t\n10:00:01.000000000\n"),
    "float32 written by its shortest form": (pa.table({"x": pa.array([0.1, 2.5], pa.float32())}), "x\n0.1\n"),
}


@pytest.mark.parametrize("case", list(CONTAINED))
def test_text_forms_of_the_same_values_are_contained(tmp_path, case):
    container, text = CONTAINED[case]
    assert ("a.parquet", "b.csv") in scan_pair(tmp_path, container, text)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_multi_line_header(tmp_path, newline):
    # Excel puts line breaks inside header cells and ends lines with CRLF
    container = pa.table({"Order\nID": [1, 2, 3], "Customer\nName": ["a", "b", "c"], "Amount\n(USD)": [1.5, 2.0, 3.25]})
    # the breaks inside the quoted header cells stay "\n" whatever the line ends are
    text = newline.join(['"Order\nID","Customer\nName","Amount\n(USD)"', "2,b,2", "3,c,3.25", ""])
    assert ("a.parquet", "b.csv") in scan_pair(tmp_path, container, text)


# -- the property: any row subset written by any writer is contained; one altered value breaks it

CLASSES = list(real_columns(n=1))


def altered(column: pa.Array):
    """A value of the column's type that is none of its values, even in canonical form."""
    present = [v for v in column.to_pylist() if v is not None and v == v]
    t = column.type
    if pa.types.is_boolean(t):
        return None  # two values only: nothing else is left to alter to
    if pa.types.is_string(t):
        return "\u00a4" + "".join(present[:1]) + "x"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return max(present) + dt.timedelta(days=1) if present else None
    return max(present) + 1 if present else None


@settings(max_examples=30, deadline=None)
@given(
    columns=st.lists(st.sampled_from(CLASSES), min_size=1, max_size=4, unique=True),
    seed=st.integers(0, 2**16),
    size=st.integers(1, 40),
    writer=st.sampled_from(list(WRITERS)),
    alter=st.booleans(),
)
@example(columns=["rating"], seed=0, size=1, writer="pandas", alter=False)  # one row, may be NaN
@example(columns=["quantity", "comment"], seed=1, size=40, writer="pandas", alter=True)
@example(columns=["created_utc", "sensor_ns"], seed=2, size=40, writer="polars", alter=True)
@example(columns=["product_code", "zip"], seed=3, size=5, writer="duckdb", alter=True)
def test_any_row_subset_is_contained_and_an_altered_row_is_not(columns, seed, size, writer, alter):
    rng = np.random.default_rng(seed)
    source = real_columns(n=60, seed=seed)
    container = pa.table({c: source[c] for c in columns})
    rows = container.take(rng.choice(60, size, replace=True))  # duplicates and any order
    expect_contained = True
    if alter:
        c = columns[int(rng.integers(len(columns)))]
        new = altered(container.column(c).combine_chunks())
        if new is not None:
            values = rows.column(c).to_pylist()
            values[int(rng.integers(size))] = new
            rows = rows.set_column(rows.schema.get_field_index(c), c, pa.array(values, rows.schema.field(c).type))
            expect_contained = False
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        pq.write_table(container, d / "a.parquet")
        write_csv(rows, d / "b.csv", writer)
        result = scan_lake([d], d / "out", ScanOptions(progress=False))
        confirmed = confirmed_names(result)
        assert (("a.parquet", "b.csv") in confirmed) == expect_contained
        assert contained_pairs(result.tables) == confirmed



# -- the scanner's SQL and the oracle's Python read text alike

PIECES = [
    "2024-01-01", "1999-12-31", "2024-02-30", "10:00", "23:59:59", "24:00:00", ".5", ".123456789", ".1234560",
    "0", "00", "1", "-", "+", "e5", "E-3", "Z", "+02:00", "+0530", "-05", " ", "T", "nan", "inf", "Infinity",
    "true", "False", "1.0", "12", "x",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join), min_size=1, max_size=30))
@example(["2024-01-01T10:00:00.500000000Z", "2024-01-01 10:00:00.1234567", "9223372036854775808", "-0", "1e400"])
def test_scanner_and_oracle_read_text_alike(texts):
    con = duckdb.connect()
    con.register("t", pa.table({"v": texts}))
    for family in TEXT_FAMILIES:
        oracle_family = "instant" if family == "timestamp_tz" else family
        for digits in (6, 9):
            parsed = parsed_sql("v", family, digits=digits)
            # seconds since the epoch stand for the value of every time-like family
            value = f"epoch_us({parsed})" if family in ("timestamp", "timestamp_tz") else parsed
            rows = con.sql(f"SELECT v, {parsed} IS NOT NULL, {value} FROM t").fetchall()
            for v, ok, got in rows:
                mine = brute_force._parse(v, oracle_family, digits)
                assert ok == (mine is not brute_force._FAIL or (family == "float" and v.lower() == "nan")), (family, v)
                if ok and family in ("bool", "int", "date"):
                    assert got == mine, (family, v)
                if ok and family == "float" and mine is not None:
                    assert got == mine or (math.isinf(got) and math.isinf(mine)), (family, v)
                if ok and family in ("timestamp", "timestamp_tz") and digits == 6:
                    assert got == mine, (family, v)
