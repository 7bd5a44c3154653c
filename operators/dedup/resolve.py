"""Deterministic resolution: from verified edges (or candidate pairs) to removed rows.

Both operators order documents by a total priority (a rank, 0 = most preferred) and only
ever remove a document in favour of a better-ranked one, so the outcome cannot depend on
the order in which pairs were found, and no cycle can remove a whole group.

- containment: remove every child with a verified edge to a better-ranked parent; the trace
  names the parent it cites (a kept one when there is one, then the highest containment).
- minhash (Jaccard): connected components of candidate pairs by a chunked union-find over
  an int64 array (memory O(rows)); each component keeps its best-ranked member.
"""

from __future__ import annotations

from typing import Iterable

import duckdb
import numpy as np

from curate.fit_state import COPY_OPTIONS


def rank_table(con: duckdb.DuckDBPyConnection, docs: str, order_by: str) -> np.ndarray:
    """Create table `ranks(_ord, rank)` ordered by `order_by`; return rank indexed by _ord."""
    con.execute(
        f"CREATE OR REPLACE TABLE ranks AS SELECT _ord, (row_number() OVER (ORDER BY {order_by}) - 1) AS rank "
        f"FROM read_parquet('{docs}')"
    )
    ords, ranks = (np.asarray(x) for x in con.execute("SELECT _ord, rank FROM ranks").fetchnumpy().values())
    by_ord = np.full(int(ords.max(initial=-1)) + 1, -1, np.int64)
    by_ord[ords.astype(np.int64)] = ranks.astype(np.int64)
    return by_ord


def containment_decisions(con: duckdb.DuckDBPyConnection, edges_glob: str, docs: str, out: str) -> None:
    """Write (_ord, detail) of every removed child, detail naming the container and containment:
    `contained in <id> (containment 0.9333)`."""
    con.execute(f"""
        COPY (
          WITH e AS (SELECT * FROM read_parquet('{edges_glob}')),
          removed AS (SELECT DISTINCT child FROM e),
          choice AS (
            SELECT e.child, e.parent, e.containment,
                   row_number() OVER (PARTITION BY e.child
                                      ORDER BY (r.child IS NOT NULL), e.containment DESC, pr.rank) AS k
            FROM e LEFT JOIN removed r ON r.child = e.parent JOIN ranks pr ON pr._ord = e.parent
          )
          SELECT c.child AS _ord,
                 'contained in ' || d._id || ' (containment ' || CAST(round(c.containment, 4) AS VARCHAR) || ')'
                   AS detail
          FROM choice c JOIN read_parquet('{docs}') d ON d._ord = c.parent
          WHERE k = 1 ORDER BY _ord
        ) TO '{out}' {COPY_OPTIONS}
    """)


def union_find(edges: Iterable[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """Root (smallest member) of each of n nodes, given edge chunks (u, v).

    Vectorized hooking: in each round every edge whose ends have different roots hooks the
    larger root under the smaller (np.minimum.at settles conflicts), until the chunk is done.
    """
    parent = np.arange(n, dtype=np.int64)

    def find(x: np.ndarray) -> np.ndarray:
        r = parent[x]
        while True:
            up = parent[r]
            if np.array_equal(up, r):
                return r
            r = up

    for u, v in edges:
        u = np.asarray(u, np.int64)
        v = np.asarray(v, np.int64)
        while len(u):
            ru, rv = find(u), find(v)
            differ = ru != rv
            if not differ.any():
                break
            ru, rv, u, v = ru[differ], rv[differ], u[differ], v[differ]
            np.minimum.at(parent, np.maximum(ru, rv), np.minimum(ru, rv))
        parent = find(np.arange(n, dtype=np.int64))  # path compression keeps later finds short
    return find(np.arange(n, dtype=np.int64))
