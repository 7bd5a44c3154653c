"""Components over an on-disk edge list (duckdb) are union_find's: each node's smallest member."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings, strategies as st

from curate_operators.dedup.components import smallest_members
from curate_operators.dedup.resolve import union_find

graphs = st.integers(1, 40).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60)))


@settings(max_examples=60, deadline=None)
@given(graphs)
@example((1, []))  # no edge at all
@example((40, [(i + 1, i) for i in range(39)]))  # one long chain: many rounds without the jumps
@example((40, [(i, i + 1) for i in range(0, 39, 2)] + [(i + 1, i + 2) for i in range(0, 38, 2)]))  # zigzag
@example((3, [(2, 2), (1, 1)]))  # self-loops only
def test_on_disk_components_match_union_find(tmp_path_factory, graph):
    n, edges = graph
    folder = tmp_path_factory.mktemp("edges")
    u = np.array([a for a, _ in edges], np.int64)
    v = np.array([b for _, b in edges], np.int64)
    pq.write_table(pa.table({"u": u, "v": v}), folder / "part-0.parquet")
    con = duckdb.connect()
    table = smallest_members(con, str(folder / "*.parquet"))
    found = dict(con.execute(f"SELECT node, root FROM {table}").fetchall())
    roots = union_find([(u, v)], n)
    assert found == {i: int(r) for i, r in enumerate(roots) if r != i}
