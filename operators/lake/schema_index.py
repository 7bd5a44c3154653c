"""Step 1: the schema containment graph, built from an inverted index column -> tables.

The candidates for a table B are the tables that hold every column of B: the
intersection of the posting lists of B's columns, smallest list first. No step ever
looks at all N^2 pairs. The same step drops an edge when A has fewer rows than B has
distinct rows (when that count is known).
"""

from __future__ import annotations

from collections import defaultdict

from .columns import normalize_name
from .edges import Edge
from .stats import TableStats


def column_keys(stats: TableStats) -> dict[tuple[str, str], str]:
    """(normalized name, type family) -> the table's own column name."""
    return {(normalize_name(c.name), c.family): c.name for c in stats.columns}


def schema_candidates(stats: list[TableStats]) -> list[Edge]:
    """Every edge A -> B with cols(B) ⊆ cols(A); those where A has no room for B's distinct
    rows come back already pruned at stage "rows"."""
    keys = [column_keys(s) for s in stats]
    index: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i, k in enumerate(keys):
        for key in k:
            index[key].add(i)
    edges: list[Edge] = []
    for b, kb in enumerate(keys):
        if not kb:
            continue
        postings = sorted((index[key] for key in kb), key=len)
        containers = set(postings[0])
        for p in postings[1:]:
            containers &= p
            if len(containers) <= 1:
                break
        containers.discard(b)
        need = stats[b].distinct_rows
        for a in sorted(containers):
            mapping = [(col, keys[a][key]) for key, col in kb.items()]
            edge = Edge(a, b, mapping)
            if need is not None and stats[a].rows < need:
                edge.prune("rows", container_rows=stats[a].rows, contained_distinct_rows=need)
            edges.append(edge)
    return edges
