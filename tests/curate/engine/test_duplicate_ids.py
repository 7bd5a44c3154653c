"""The id check's verdict (duplicate_ids.py) against a count by hand, on hash pairs drawn from a
small range so ids repeat, with and without the same content."""

from collections import defaultdict

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.engine.run.duplicate_ids import DuplicateIds, _IdHashes


def by_hand(pairs: list[tuple[int, int]]) -> tuple[int, int]:
    contents = defaultdict(set)
    for id_hash, content in pairs:
        contents[id_hash].add(content)
    conflicting = {i for i, c in contents.items() if len(c) > 1}
    return len(conflicting), sum(1 for i, _ in pairs if i in conflicting)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2)), max_size=12), max_size=4))
@example([])  # no rows at all
@example([[(1, 0), (1, 0)]])  # an id repeated with the same content: no conflict
@example([[(1, 0)], [(1, 1)]])  # the conflict spans two tasks' summaries
def test_conflicting_ids_are_counted_as_by_hand(parts):
    summary = _IdHashes()
    for part in parts:
        summary.parts.append(np.array(part, dtype=np.uint64).reshape(-1, 2))
    found = DuplicateIds("id", fail=False).finish({"input": summary}, None)
    ids, rows = by_hand([pair for part in parts for pair in part])
    assert (found["ids"], found["rows"]) == (ids, rows) if ids else found is None
