"""Step 2: min-max pruning from statistics that cost no data scan.

For every shared column, B's [min, max] must lie inside A's, B's nulls need nulls in A,
and B's values need values in A. Unknown statistics never prune. A column pair with a
CSV side compares canonical values (text.py): its bounds are those of the family it is
read as, and the null rules do not hold (an empty field equals NaN or "" on the other side).
"""

from __future__ import annotations

from .edges import Edge
from .stats import ColumnStats, TableStats
from .text import TEXT, Comparison


def _bounds(c: ColumnStats, how: Comparison) -> tuple:
    """The column's bounds among the canonical values of the pair's family."""
    if c.family == TEXT:
        if how.sql_type == "FLOAT":
            return None, None  # the text is read as float32 here, its bounds were read as doubles
        if how.family == "string":
            return c.min, c.max
        return tuple((c.parses or {}).get(how.family, (None, None)))
    # "" is NULL on the canonical side, so it bounds nothing there
    return (None if how.family == "string" and c.min == "" else c.min), c.max


def column_violation(b: ColumnStats, a: ColumnStats, how: Comparison | None = None) -> dict | None:
    """Why B's column cannot be inside A's, or None when the statistics allow it."""
    if how is None:
        if b.values and a.values == 0:
            return {"column": b.name, "rule": "values", "detail": f"{b.values} non-null values in B, none in A"}
        if b.nulls and a.nulls == 0:
            return {"column": b.name, "rule": "nulls", "detail": f"{b.nulls} nulls in B, none in A"}
        (b_min, b_max), (a_min, a_max) = (b.min, b.max), (a.min, a.max)
    else:
        (b_min, b_max), (a_min, a_max) = _bounds(b, how), _bounds(a, how)
    if b_min is not None and a_min is not None and b_min < a_min:
        return {"column": b.name, "rule": "min", "detail": f"min {b_min!r} in B < min {a_min!r} in A"}
    if b_max is not None and a_max is not None and b_max > a_max:
        return {"column": b.name, "rule": "max", "detail": f"max {b_max!r} in B > max {a_max!r} in A"}
    return None


def prune_minmax(edges: list[Edge], stats: list[TableStats]) -> None:
    """Marks candidate edges whose statistics rule containment out (stage "minmax")."""
    by_name = [{c.name: c for c in s.columns} for s in stats]
    for e in edges:
        if e.status != "candidate":
            continue
        for b_col, a_col in e.mapping:
            why = column_violation(by_name[e.contained][b_col], by_name[e.container][a_col], e.compared.get(b_col))
            if why is not None:
                e.prune("minmax", **why)
                break
