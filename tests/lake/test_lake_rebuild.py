"""Row positions + take rebuild any table drawn from a container's rows, exactly."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.errors import CurateError
from curate_lake.rebuild import rebuild, row_positions

rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), st.sampled_from("abc"))), min_size=1, max_size=40)


@settings(max_examples=30, deadline=None)
@given(rows, st.data())
def test_rebuild_of_rows_drawn_from_the_container_is_exact(container_rows, data):
    picks = data.draw(st.lists(st.integers(0, len(container_rows) - 1), max_size=60))
    container = pa.table(
        {"x": pa.array([r[0] for r in container_rows], pa.int32()), "s": [r[1] for r in container_rows], "extra": range(len(container_rows))}
    )
    # B: widened int, large strings, its own column order, metadata, duplicates and nulls kept in order
    schema = pa.schema([("s", pa.large_string()), ("x", pa.int64())], metadata={b"origin": b"test"})
    b = pa.table(
        {"s": [container_rows[i][1] for i in picks], "x": [container_rows[i][0] for i in picks]}, schema=schema
    )
    positions = row_positions(container, b)
    assert rebuild(container, positions, schema).equals(b, check_metadata=True)


def test_a_row_missing_from_the_container_is_an_error():
    container = pa.table({"x": [1, 2]})
    with pytest.raises(CurateError, match="1 rows have no equal row"):
        row_positions(container, pa.table({"x": [2, 3]}))
