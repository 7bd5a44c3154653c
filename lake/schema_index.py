"""Step 1: the schema containment graph, built from an inverted index column -> tables.

The candidates for a table B are the tables that hold every column of B: the
intersection of the posting lists of B's columns, smallest list first. No step ever
looks at all N^2 pairs. A column of B is held by a column of A with its normalized name
and the same type family, or, when either is a CSV column, one its text can be read as
(text.py). The same step drops an edge when A has fewer rows than B has distinct rows
(when that count is known and the edge compares values as they are).
"""

from __future__ import annotations

from collections import defaultdict

from .columns import normalize_name
from .edges import Edge
from .stats import ColumnStats, TableStats
from .text import TEXT, comparison, readable_as


def columns_by_name(stats: TableStats) -> dict[str, ColumnStats]:
    """Normalized name -> the table's column (names are unique after normalization)."""
    return {normalize_name(c.name): c for c in stats.columns}


def schema_candidates(stats: list[TableStats]) -> list[Edge]:
    """Every edge A -> B with cols(B) ⊆ cols(A); those where A has no room for B's distinct
    rows come back already pruned at stage "rows"."""
    cols = [columns_by_name(s) for s in stats]
    index: dict[tuple[str, str], set[int]] = defaultdict(set)  # (name, family) -> tables
    families: dict[str, set[str]] = defaultdict(set)  # name -> its families across the lake
    for i, by_name in enumerate(cols):
        for name, c in by_name.items():
            index[(name, c.family)].add(i)
            families[name].add(c.family)

    def holders(name: str, c: ColumnStats) -> set[int]:
        if c.family != TEXT:
            held = set(index[(name, c.family)])
            if TEXT in families[name]:
                held |= {a for a in index[(name, TEXT)] if comparison(c, cols[a][name]) is not None}
            return held
        held: set[int] = set()
        for family in families[name]:
            if family == TEXT or readable_as(c.parses, family):
                held |= index[(name, family)]
        return held

    edges: list[Edge] = []
    for b, by_name in enumerate(cols):
        if not by_name:
            continue
        postings = sorted((holders(name, c) for name, c in by_name.items()), key=len)
        containers = set(postings[0])
        for p in postings[1:]:
            containers &= p
            if len(containers) <= 1:
                break
        containers.discard(b)
        need = stats[b].distinct_rows
        for a in sorted(containers):
            edge = Edge(a, b, [(c.name, cols[a][name].name) for name, c in by_name.items()])
            for name, c in by_name.items():
                how = comparison(c, cols[a][name])
                if how.reconciled:
                    edge.compared[c.name] = how
            # Distinct rows count raw values; canonical ones may be fewer ("1" and "1.0").
            if need is not None and not edge.compared and stats[a].rows < need:
                edge.prune("rows", container_rows=stats[a].rows, contained_distinct_rows=need)
            edges.append(edge)
    return edges
