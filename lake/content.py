"""Step 3: sampled content check with duckdb.

For a contained-candidate B, s distinct rows of B are sampled once (all of them when B is
small) into a duckdb temp table; each candidate container A is then scanned once, joined
on every mapped column (null-safe equality, hash join built on the small sample), and any
sampled row without a match removes the edge. If a fraction f of B's rows were missing
from A, the edge would survive with probability (1 - f)^s: the evidence reports that bound.
Column pairs with a CSV side join on their canonical values (text.py).
"""

from __future__ import annotations

import duckdb

from .edges import Edge
from .reader import duckdb_source, quote_ident
from .tables import Table
from .text import pair_sql

SAMPLE_TABLE = "__lake_sample"


def survival_bound(sampled: int, complete: bool, missing_fraction: float = 0.01) -> float:
    """Probability that an edge with `missing_fraction` of B's rows absent from A survives."""
    return 0.0 if complete else (1.0 - missing_fraction) ** sampled


def sample_rows(con: duckdb.DuckDBPyConnection, b: Table, columns: list[str], size: int, seed: int) -> tuple[int, bool]:
    """Loads up to `size` distinct rows of B into SAMPLE_TABLE; returns (rows sampled, whether that is all of them)."""
    cols = ", ".join(quote_ident(c) for c in columns)
    distinct = f"SELECT DISTINCT {cols} FROM {duckdb_source(b)}"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {SAMPLE_TABLE} AS "
        f"SELECT row_number() OVER () AS __lake_k, * FROM ({distinct}) USING SAMPLE reservoir({int(size)} ROWS) REPEATABLE ({int(seed)})"
    )
    sampled = con.execute(f"SELECT count(*) FROM {SAMPLE_TABLE}").fetchone()[0]
    if sampled < size:
        return sampled, True
    total = con.execute(f"SELECT count(*) FROM ({distinct})").fetchone()[0]
    return sampled, total == sampled


def missing_in(con: duckdb.DuckDBPyConnection, a: Table, e: Edge) -> int:
    """How many sampled rows of B have no equal row in A's projection."""
    a_cols, on = [], []
    for bc, ac in e.mapping:
        for b_expr, a_expr in pair_sql(f"s.{quote_ident(bc)}", quote_ident(ac), e.compared.get(bc)):
            alias = f"__c{len(a_cols)}"
            a_cols.append(f"{a_expr} AS {alias}")
            on.append(f"{b_expr} IS NOT DISTINCT FROM a.{alias}")
    matched, total = con.execute(
        f"SELECT (SELECT count(DISTINCT s.__lake_k) FROM {SAMPLE_TABLE} s JOIN (SELECT {', '.join(a_cols)} FROM {duckdb_source(a)}) a"
        f" ON {' AND '.join(on)}), (SELECT count(*) FROM {SAMPLE_TABLE})"
    ).fetchone()
    return total - matched


def check_contained(
    con: duckdb.DuckDBPyConnection, b: Table, edges: list[Edge], tables: list[Table], size: int, seed: int
) -> None:
    """Decides the content step for every candidate edge into B (all share B's sample)."""
    columns = [bc for bc, _ in edges[0].mapping]
    try:
        sampled, complete = sample_rows(con, b, columns, size, seed)
    except duckdb.Error as e:
        for e_ in edges:
            e_.stage, e_.status, e_.evidence = "content", "error", {"error": f"cannot sample {b.name}: {e}"}
        return
    for e in edges:
        try:
            missing = missing_in(con, tables[e.container], e)
        except duckdb.Error as err:
            e.stage, e.status, e.evidence = "content", "error", {"error": str(err).splitlines()[0]}
            continue
        evidence = {"sampled": sampled, "complete_sample": complete}
        if missing:
            e.prune("content", missing=missing, **evidence)
        else:
            e.stage = "content"
            e.evidence = {**evidence, "survival_if_1pct_missing": survival_bound(sampled, complete)}
