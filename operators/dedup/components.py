"""Connected components over an on-disk edge list, in duckdb (it spills past its memory limit).

The same result as resolve.union_find, without an array over every row: each node of an edge
gets the smallest node of its component as its label. Labels start as each node itself; a round
lowers every node's label to the smallest label among its neighbours, then jumps each label to
its own label's label (a label is a node of the same component, never larger than the node),
until no label changes. Labels only ever fall, and at the fixed point neighbours share one
label, so each component ends labelled with its smallest member. The jumps make the rounds grow
with the log of a component's diameter, not with the diameter.
"""

from __future__ import annotations

import duckdb


def smallest_members(con: duckdb.DuckDBPyConnection, edges_glob: str) -> str:
    """Create table `components(node, root)`: every node of the edges whose component's smallest
    member `root` is not itself; return its name."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE edges AS
                    SELECT u AS a, v AS b FROM read_parquet('{edges_glob}') WHERE u <> v
                    UNION SELECT v, u FROM read_parquet('{edges_glob}') WHERE u <> v""")
    con.execute("CREATE OR REPLACE TEMP TABLE labels AS SELECT a AS node, least(a, min(b)) AS label FROM edges GROUP BY a")
    while True:
        con.execute("""CREATE OR REPLACE TEMP TABLE lowered AS
                       SELECT l.node, least(l.label, min(n.label)) AS label
                       FROM labels l JOIN edges e ON e.a = l.node JOIN labels n ON n.node = e.b
                       GROUP BY l.node, l.label""")
        con.execute("""CREATE OR REPLACE TEMP TABLE jumped AS
                       SELECT l.node, j.label FROM lowered l JOIN lowered j ON j.node = l.label""")
        changed = con.execute("""SELECT count(*) FROM jumped j JOIN labels l USING (node)
                                 WHERE j.label <> l.label""").fetchone()[0]
        con.execute("DROP TABLE labels; ALTER TABLE jumped RENAME TO labels; DROP TABLE lowered")
        if changed == 0:
            break
    con.execute("CREATE OR REPLACE TEMP TABLE components AS SELECT node, label AS root FROM labels WHERE label <> node")
    con.execute("DROP TABLE labels; DROP TABLE edges")
    return "components"
