"""Step 2: min-max pruning from statistics that cost no data scan.

For every shared column, B's [min, max] must lie inside A's, B's nulls need nulls in A,
and B's values need values in A. Unknown statistics never prune.
"""

from __future__ import annotations

from .edges import Edge
from .stats import ColumnStats, TableStats


def column_violation(b: ColumnStats, a: ColumnStats) -> dict | None:
    """Why B's column cannot be inside A's, or None when the statistics allow it."""
    if b.values and a.values == 0:
        return {"column": b.name, "rule": "values", "detail": f"{b.values} non-null values in B, none in A"}
    if b.nulls and a.nulls == 0:
        return {"column": b.name, "rule": "nulls", "detail": f"{b.nulls} nulls in B, none in A"}
    if b.min is not None and a.min is not None and b.min < a.min:
        return {"column": b.name, "rule": "min", "detail": f"min {b.min!r} in B < min {a.min!r} in A"}
    if b.max is not None and a.max is not None and b.max > a.max:
        return {"column": b.name, "rule": "max", "detail": f"max {b.max!r} in B > max {a.max!r} in A"}
    return None


def prune_minmax(edges: list[Edge], stats: list[TableStats]) -> None:
    """Marks candidate edges whose statistics rule containment out (stage "minmax")."""
    by_name = [{c.name: c for c in s.columns} for s in stats]
    for e in edges:
        if e.status != "candidate":
            continue
        for b_col, a_col in e.mapping:
            why = column_violation(by_name[e.contained][b_col], by_name[e.container][a_col])
            if why is not None:
                e.prune("minmax", **why)
                break
