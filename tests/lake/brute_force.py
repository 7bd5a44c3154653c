"""Ground truth for containment: every ordered pair of tables checked by the definition.

Deliberately independent of the scanner, so that a bug in its reading or normalization
cannot hide on both sides: this module reads tables itself (pyarrow for Parquet and JSONL,
the csv module for CSV, RFC 4180 with a header row), normalizes column names and parses
CSV text with its own code (plain Python, no duckdb, no regex shared with text.py), and
uses no pruning and no statistics. Only the table list (tables.py: which files make a
table) comes from the lake package.

The definition, restated: B is contained in A when each of B's columns has a column of A
with the same normalized name (case, spaces and punctuation aside; leading underscores
count) whose values compare with it, and every row of B's projection is a row of A's.
Typed columns compare within a type family. A CSV column is text: against a typed column
it is read as that column's type, against another CSV column as the most specific type
both read as; its strict text forms, and NULL = NaN = "" on such pairs, are described in
text.py and implemented again below. Each row is hashed (polars, 64 bits) and B is
contained in A when all of B's row hashes are among A's. Quadratic in the number of
tables: for tests and benchmarks only.
"""

from __future__ import annotations

import csv
import datetime as dt
import re

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.json as pj
import pyarrow.parquet as pq

from curate_lake.tables import Table

TEXT = "text"
# Families a CSV column may be read as, most specific first.
_TEXT_ORDER = ("bool", "int", "float", "date", "time", "timestamp", "instant")
_INT64 = (-(2**63), 2**63 - 1)
_EPOCH = dt.datetime(1970, 1, 1)
_DIGITS = set("0123456789")


# -- reading -------------------------------------------------------------------------------


def _read(t: Table) -> pa.Table:
    if t.format == "csv":
        with open(t.files[0].path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        # an empty field is NULL; so is a blank line (a row of one empty field)
        cells = [[(r[k] if k < len(r) else "") or None for r in body] for k in range(len(header))]
        return pa.table({name: pa.array(v, pa.large_string()) for name, v in zip(header, cells)})
    if t.format == "jsonl":
        return pj.read_json(t.files[0].path)
    if not t.partitioned:
        return pq.read_table(t.files[0].path)
    hive = ds.HivePartitioning.discover(infer_dictionary=False)
    return ds.dataset([f.path for f in t.files], format="parquet", partitioning=hive, partition_base_dir=t.path).to_table()


def _name(name: str) -> str:
    stripped = name.strip()
    body = stripped.lstrip("_")
    words = re.findall("[0-9a-z]+", body.lower())
    return "_" * (len(stripped) - len(body)) + "_".join(words)


def _family(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    for test, family in (
        (pa.types.is_boolean, "bool"),
        (pa.types.is_integer, "int"),
        (pa.types.is_floating, "float"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x) or pa.types.is_string_view(x), "string"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x) or pa.types.is_binary_view(x) or pa.types.is_fixed_size_binary(x), "binary"),
        (pa.types.is_date, "date"),
        (pa.types.is_time, "time"),
        (pa.types.is_decimal, "decimal"),
    ):
        if test(t):
            return family
    if pa.types.is_timestamp(t):
        return f"instant:{t.tz}" if t.tz else "timestamp"
    return str(t)


# -- text ----------------------------------------------------------------------------------

_FAIL = object()


def _digits(s: str) -> bool:
    return bool(s) and set(s) <= _DIGITS


def _number(s: str) -> bool:
    """[+-]? (0 | nonzero digits) (. digits)? (e [+-]? digits)?"""
    body = s[1:] if s[:1] in "+-" else s
    mantissa, has_exponent, exponent = body.lower().partition("e")
    if has_exponent and not _digits(exponent[1:] if exponent[:1] in "+-" else exponent):
        return False
    whole, dot, frac = mantissa.partition(".")
    if dot and not _digits(frac):
        return False
    return _digits(whole) and (whole == "0" or whole[0] != "0")


def _clock(s: str, digits: int):
    """hh:mm[:ss[.f]] -> microseconds or nanoseconds since midnight (by `digits`), or _FAIL."""
    parts = s.split(":")
    if not 2 <= len(parts) <= 3:
        return _FAIL
    sec, dot, frac = (parts[2] if len(parts) == 3 else "00").partition(".")
    if dot and not _digits(frac) or not all(len(p) == 2 and _digits(p) for p in (parts[0], parts[1], sec)):
        return _FAIL
    h, m, s2 = int(parts[0]), int(parts[1]), int(sec)
    frac = frac.rstrip("0")
    if h > 23 or m > 59 or s2 > 59 or len(frac) > digits:
        return _FAIL
    scale = 10**digits
    return ((h * 60 + m) * 60 + s2) * scale + int(frac.ljust(digits, "0") or 0)


def _day(s: str):
    if len(s) != 10 or s[4] != "-" or s[7] != "-" or not _digits(s[:4] + s[5:7] + s[8:]):
        return _FAIL
    try:
        return dt.date(int(s[:4]), int(s[5:7]), int(s[8:]))
    except ValueError:
        return _FAIL


def _offset_minutes(s: str):
    if s == "Z":
        return 0
    if s[:1] not in "+-":
        return _FAIL
    hhmm = s[1:].replace(":", "", 1) if len(s) == 6 else s[1:]
    if len(hhmm) not in (2, 4) or not _digits(hhmm) or (len(s) == 6 and s[3] != ":"):
        return _FAIL
    minutes = int(hhmm[:2]) * 60 + int(hhmm[2:] or 0)
    return -minutes if s[0] == "-" else minutes


def _moment(s: str, digits: int, instant: bool):
    """Date, optional clock, offset when `instant`: ticks since the (UTC) epoch, or _FAIL."""
    day = _day(s[:10])
    if day is _FAIL:
        return _FAIL
    rest = s[10:]
    offset = 0
    if instant:
        cut = max(rest.rfind("+"), rest.rfind("-"), rest.find("Z"))
        if cut < 1:
            return _FAIL
        rest, offset = rest[:cut], _offset_minutes(rest[cut:])
        if offset is _FAIL:
            return _FAIL
    if not rest:
        clock = 0 if not instant else _FAIL
    else:
        clock = _clock(rest[1:], digits) if rest[0] in "T " else _FAIL
    if clock is _FAIL:
        return _FAIL
    scale = 10**digits
    days = (day - _EPOCH.date()).days
    return days * 86400 * scale + clock - offset * 60 * scale


def _parse(s: str, family: str, digits: int, float32: bool = False):
    """The value text `s` stands for in `family`, or _FAIL; NaN is None (as an empty field)."""
    low = s.lower()
    if family == "bool":
        return low == "true" if low in ("true", "false") else _FAIL
    if family == "int":
        whole, dot, zeros = s.partition(".")
        if not _number(whole) or "e" in low or (dot and (not zeros or set(zeros) != {"0"})):
            return _FAIL
        v = int(whole)
        return v if _INT64[0] <= v <= _INT64[1] else _FAIL
    if family == "float":
        if low in ("nan",):
            return None
        if low.lstrip("+-") in ("inf", "infinity") and len(low) - len(low.lstrip("+-")) <= 1:
            v = float(low)
        elif _number(s):
            v = float(s)
        else:
            return _FAIL
        return float(np.float32(v)) if float32 else v
    if family == "date":
        return _day(s)
    if family == "time":
        return _clock(s, digits)
    if family in ("timestamp", "instant"):
        return _moment(s, digits, instant=family == "instant")
    return _FAIL


def _reads_as(values: list) -> set[str]:
    """The families all of a text column reads as."""
    return {f for f in _TEXT_ORDER if all(v is None or _parse(v, f, 9) is not _FAIL for v in values)}


# -- canonical values of a column pair -----------------------------------------------------


def _compare_as(b: tuple, a: tuple) -> tuple | None:
    """(family, digits, float32) both columns are compared in, or None. A column is
    (family, arrow type, the families its text reads as or None)."""
    (fb, tb, rb), (fa, ta, ra) = b, a
    if fb != TEXT and fa != TEXT:
        if fb != fa:
            return None
        unit_ns = "timestamp" in fb or "instant" in fb
        return (fb, 9 if unit_ns and "ns" in (getattr(tb, "unit", ""), getattr(ta, "unit", "")) else 6, False)
    if fb == TEXT and fa == TEXT:
        common = [f for f in _TEXT_ORDER if f in rb and f in ra]
        return (common[0] if common else "string", 6, False)
    family, typ, reads = (fa, ta, rb) if fb == TEXT else (fb, tb, ra)
    if family == "string":
        return ("string", 0, False)
    text_family = "instant" if family.startswith("instant:") else family
    if text_family not in reads:
        return None
    ns = text_family in ("timestamp", "instant") and getattr(typ, "unit", "") == "ns"
    return (text_family, 9 if ns else 6, typ in (pa.float32(), pa.float16()))


def _ticks(arr: pa.Array, digits: int) -> pa.Array:
    """Timestamps as integers since the epoch (UTC for instants) in us or ns."""
    unit = "ns" if digits == 9 else "us"
    return pc.cast(pc.cast(arr, pa.timestamp(unit, tz=arr.type.tz)), pa.int64())


def _typed_values(arr: pa.Array, how: tuple, reconciled: bool) -> pa.Array:
    family, digits, float32 = how
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if family == "int":
        return pc.cast(arr, pa.int64())
    if family == "float":
        arr = pc.cast(arr, pa.float32() if float32 else pa.float64())
        if reconciled:
            arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
        return pc.cast(arr, pa.float64())
    if family == "string":
        arr = pc.cast(arr, pa.large_string())
        return pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.large_string()), arr) if reconciled else arr
    if family == "binary":
        return pc.cast(arr, pa.large_binary())
    if family == "date":
        return pc.cast(arr, pa.date32())
    if family == "time":
        return pc.cast(pc.cast(arr, pa.time64("us"), safe=False), pa.int64())  # duckdb's TIME holds us
    if family in ("timestamp", "instant") or family.startswith("instant:"):
        return _ticks(arr, digits)
    return arr


def _text_values(values: list, how: tuple) -> tuple[pa.Array, pa.Array]:
    family, digits, float32 = how
    if family == "string":
        return pa.array(values, pa.large_string()), pa.nulls(len(values), pa.large_string())
    parsed = [None if v is None else _parse(v, family, digits, float32) for v in values]
    raw = [v if p is _FAIL else None for v, p in zip(values, parsed)]
    typ = {"bool": pa.bool_(), "float": pa.float64(), "date": pa.date32()}.get(family, pa.int64())
    return pa.array([None if p is _FAIL else p for p in parsed], typ), pa.array(raw, pa.large_string())


# -- the pairs -----------------------------------------------------------------------------


def contained_pairs(tables: list[Table]) -> set[tuple[str, str]]:
    """{(container name, contained name)} for every pair where the contained table is non-empty."""
    data = {t.name: _read(t) for t in tables}
    columns: dict[str, dict[str, tuple]] = {}  # table -> normalized name -> (column name, family, type)
    for t in tables:
        columns[t.name] = {
            _name(f.name): (f.name, TEXT if t.format == "csv" else _family(f.type), f.type) for f in data[t.name].schema
        }
    text_cache: dict[tuple[str, str], list] = {}
    reads_cache: dict[tuple[str, str], set[str]] = {}
    column_cache: dict[tuple, tuple[pa.Array, pa.Array]] = {}
    hash_cache: dict[tuple, np.ndarray] = {}

    def text(table: str, col: str) -> list:
        if (table, col) not in text_cache:
            text_cache[(table, col)] = data[table].column(col).to_pylist()
        return text_cache[(table, col)]

    def side(table: str, col: tuple) -> tuple:
        name, family, typ = col
        if family != TEXT:
            return family, typ, None
        if (table, name) not in reads_cache:
            reads_cache[(table, name)] = _reads_as(text(table, name))
        return family, typ, reads_cache[(table, name)]

    def canonical(table: str, name: str, how: tuple, reconciled: bool) -> tuple[pa.Array, pa.Array]:
        """(canonical values, text that did not parse) of one column compared as `how`."""
        key = (table, name, how, reconciled)
        if key not in column_cache:
            col, family, _ = columns[table][name]
            if family == TEXT:
                column_cache[key] = _text_values(text(table, col), how)
            else:
                value = _typed_values(data[table].column(col).combine_chunks(), how, reconciled)
                column_cache[key] = value, pa.nulls(len(value), pa.large_string())
        return column_cache[key]

    def row_hashes(table: str, spec: tuple) -> np.ndarray:
        """Hashes of the table's distinct canonical rows; spec: ((column, how, reconciled), ...)."""
        key = (table, spec)
        if key not in hash_cache:
            cols = {}
            for k, (name, how, reconciled) in enumerate(spec):
                cols[f"v{k}"], cols[f"r{k}"] = canonical(table, name, how, reconciled)
            frame = pl.from_arrow(pa.table(cols))
            hash_cache[key] = np.unique(frame.hash_rows(seed=0).to_numpy())
        return hash_cache[key]

    truth = set()
    for b in tables:
        if data[b.name].num_rows == 0:
            continue
        for a in tables:
            if a.name == b.name or not columns[b.name].keys() <= columns[a.name].keys():
                continue
            spec = []
            for name in columns[b.name]:
                cb, ca = columns[b.name][name], columns[a.name][name]
                how = _compare_as(side(b.name, cb), side(a.name, ca))
                if how is None:
                    break
                spec.append((name, how, TEXT in (cb[1], ca[1])))
            else:
                hb, ha = row_hashes(b.name, tuple(spec)), row_hashes(a.name, tuple(spec))
                if len(ha) and bool(np.isin(hb, ha).all()):
                    truth.add((a.name, b.name))
    return truth
