"""sql_filter keeps rows where the duckdb predicate is true; NULL counts as false."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from curate.errors import CurateError
from curate_operators.filters.sql import SqlFilter


def test_predicate_selects_rows_in_order():
    op = SqlFilter(SqlFilter.Params(where="n > 2 AND text LIKE 'a%'"))
    batch = pa.record_batch({"n": list(range(6)) + [None], "text": ["a", "b", "a", "ab", "ax", "b", "a"]})
    v = op.keep(batch)
    assert v.keep.tolist() == [False, False, False, True, True, False, False]
    assert v.reason == "sql_filter" and "n > 2" in v.detail


def test_bad_expressions_fail_validation_or_name_the_column():
    with pytest.raises(ValidationError, match="single expression"):
        SqlFilter.Params(where="1; DROP TABLE x")
    with pytest.raises(ValidationError, match="not a valid SQL expression"):
        SqlFilter.Params(where="n >")
    with pytest.raises(CurateError, match="nope"):
        SqlFilter(SqlFilter.Params(where="nope > 1")).keep(pa.record_batch({"n": [1]}))
