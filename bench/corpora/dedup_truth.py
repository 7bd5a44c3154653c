"""Ground truth for the dedup benches: exact containment of every pair, by brute force.

Every pair of documents that shares at least one shingle is found through an inverted index
(a self-join of (doc, shingle) rows in duckdb); pairs sharing none have containment 0. So
the containment of *all* pairs is computed exactly, with the same shingles (word 5-grams of
the normalized text) as curate. The removal rule is then applied to the exact edges: a
document goes when a better-ranked one (more shingles, then smaller id) contains it at >= tau.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]


import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from curate_operators.dedup.shingles import ShingleSpec, shingle_sets  # noqa: E402


def contained_ids(table: pa.Table, tau: float = 0.8, spec: ShingleSpec = ShingleSpec(), batch: int = 8192) -> set[str]:
    """Ids that brute-force exact containment says a containment dedup must remove."""
    con = duckdb.connect()
    con.execute("CREATE TABLE sh (doc BIGINT, h UBIGINT)")
    sizes = []
    for start in range(0, len(table), batch):
        texts = table.column("text").slice(start, batch)
        sets = shingle_sets(texts.combine_chunks(), spec)
        docs = np.repeat(np.arange(start, start + len(texts), dtype=np.int64), sets.sizes)
        con.register("chunk", pa.table({"doc": docs, "h": sets.values}))
        con.execute("INSERT INTO sh SELECT * FROM chunk")
        con.unregister("chunk")
        sizes.append(sets.sizes)
    con.register("docs", pa.table({"doc": np.arange(len(table)), "id": table.column("id"), "n": np.concatenate(sizes)}))
    removed = con.execute(f"""
        WITH shared AS (
          SELECT a.doc AS a, b.doc AS b, count(*) AS k
          FROM sh a JOIN sh b ON a.h = b.h AND a.doc <> b.doc GROUP BY ALL
        ),
        ranked AS (SELECT doc, id, n, row_number() OVER (ORDER BY n DESC, id) AS rank FROM docs)
        SELECT DISTINCT ca.id
        FROM shared s JOIN ranked ca ON ca.doc = s.a JOIN ranked cb ON cb.doc = s.b
        WHERE s.k >= {tau} * ca.n AND cb.rank < ca.rank
    """).fetchall()
    return {r[0] for r in removed}
