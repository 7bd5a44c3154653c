"""Step 4: exact verification. B's projection EXCEPT A's projection must be empty.

EXCEPT has set semantics (duplicates in B do not matter, NULL equals NULL), and duckdb
unifies widened types (int32 vs int64) itself.
"""

from __future__ import annotations

import duckdb

from .edges import Edge
from .reader import duckdb_source, quote_ident
from .tables import Table


def missing_rows(con: duckdb.DuckDBPyConnection, a: Table, b: Table, mapping: list[tuple[str, str]]) -> int:
    b_cols = ", ".join(quote_ident(bc) for bc, _ in mapping)
    a_cols = ", ".join(quote_ident(ac) for _, ac in mapping)
    return con.execute(
        f"SELECT count(*) FROM (SELECT {b_cols} FROM {duckdb_source(b)} EXCEPT SELECT {a_cols} FROM {duckdb_source(a)})"
    ).fetchone()[0]


def verify_edge(con: duckdb.DuckDBPyConnection, e: Edge, tables: list[Table]) -> None:
    try:
        missing = missing_rows(con, tables[e.container], tables[e.contained], e.mapping)
    except duckdb.Error as err:
        e.stage, e.status, e.evidence = "verify", "error", {**e.evidence, "error": str(err).splitlines()[0]}
        return
    if missing:
        e.prune("verify", missing_distinct_rows=missing, **e.evidence)
    else:
        e.stage, e.status = "verify", "confirmed"
        e.evidence = {**e.evidence, "missing_distinct_rows": 0}
