"""curate.columns: text columns read with their type checked, columns set whether or not they exist."""

import pyarrow as pa
import pytest

from curate.columns import put, text_array, text_values
from curate.errors import InputError


def test_text_columns_are_checked_and_string_view_comes_as_large_string():
    batch = pa.record_batch({"t": pa.array(["a", None], pa.string_view()), "n": [1, 2]})
    assert text_array(batch, "t", "step").type == pa.large_string()
    assert text_values(batch, "t", "step") == ["a", ""]
    with pytest.raises(InputError, match="step: column 'n' must be text, it is int64"):
        text_array(batch, "n", "step")


def test_put_replaces_a_column_in_place_or_appends_it():
    batch = pa.record_batch({"a": [1, 2], "b": ["x", "y"]})
    replaced = put(batch, "a", [0.5, 1.5])
    assert replaced.schema.names == ["a", "b"] and replaced.column(0).to_pylist() == [0.5, 1.5]
    appended = put(batch, "c", pa.array([True, False]))
    assert appended.schema.names == ["a", "b", "c"] and appended.column(2).type == pa.bool_()
