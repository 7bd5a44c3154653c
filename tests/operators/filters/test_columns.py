"""select, rename and cast reshape columns; internal `_` columns always pass through."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from curate.errors import CurateError
from curate_operators.filters.columns import Cast, Rename, Select

BATCH = pa.record_batch({"a": [1, 2], "b": ["x", "y"], "_id": ["i", "j"]})


def test_select_keeps_listed_and_internal_columns():
    assert Select(Select.Params(columns=["b"])).process(BATCH).schema.names == ["b", "_id"]


def test_rename():
    assert Rename(Rename.Params(columns={"a": "count"})).process(BATCH).schema.names == ["count", "b", "_id"]


def test_cast_and_its_errors():
    out = Cast(Cast.Params(columns={"a": "float32"})).process(BATCH)
    assert out.schema.field("a").type == pa.float32()
    with pytest.raises(CurateError, match="column 'b' to int64"):
        Cast(Cast.Params(columns={"b": "int64"})).process(BATCH)
    with pytest.raises(ValidationError, match="unknown Arrow type 'integer'"):
        Cast.Params(columns={"a": "integer"})
