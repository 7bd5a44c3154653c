import numpy as np
from hypothesis import given, settings, strategies as st

from curate_operators.dedup.resolve import union_find


def naive_roots(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    return [find(i) for i in range(n)]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))),
       st.integers(1, 7))
def test_chunked_union_find_matches_naive(graph, chunk):
    n, edges = graph
    chunks = [
        (np.array([u for u, _ in edges[i : i + chunk]], np.int64), np.array([v for _, v in edges[i : i + chunk]], np.int64))
        for i in range(0, len(edges), chunk)
    ]
    assert union_find(chunks, n).tolist() == naive_roots(n, edges)
