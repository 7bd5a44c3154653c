"""Step 4: exact verification. B's projection EXCEPT A's projection must be empty.

EXCEPT has set semantics (duplicates in B do not matter, NULL equals NULL), and duckdb
unifies widened types (int32 vs int64) itself. Column pairs with a CSV side are compared
on their canonical values (text.py).
"""

from __future__ import annotations

import duckdb

from .edges import Edge
from .reader import duckdb_source, quote_ident
from .tables import Table
from .text import pair_sql


def missing_rows(con: duckdb.DuckDBPyConnection, a: Table, b: Table, e: Edge) -> int:
    pairs = [p for bc, ac in e.mapping for p in pair_sql(quote_ident(bc), quote_ident(ac), e.compared.get(bc))]
    b_cols = ", ".join(b_expr for b_expr, _ in pairs)
    a_cols = ", ".join(a_expr for _, a_expr in pairs)
    return con.execute(
        f"SELECT count(*) FROM (SELECT {b_cols} FROM {duckdb_source(b)} EXCEPT SELECT {a_cols} FROM {duckdb_source(a)})"
    ).fetchone()[0]


def verify_edge(con: duckdb.DuckDBPyConnection, e: Edge, tables: list[Table]) -> None:
    try:
        missing = missing_rows(con, tables[e.container], tables[e.contained], e)
    except duckdb.Error as err:
        e.stage, e.status, e.evidence = "verify", "error", {**e.evidence, "error": str(err).splitlines()[0]}
        return
    if missing:
        e.prune("verify", missing_distinct_rows=missing, **e.evidence)
    else:
        e.stage, e.status = "verify", "confirmed"
        e.evidence = {**e.evidence, "missing_distinct_rows": 0}
