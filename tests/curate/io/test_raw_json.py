"""input.raw_column: JSON records read whole, as their text, in one column (JSON lines or an array),
whatever their shape; what is not a JSON object is a bad row named by line (or array position)."""

import gzip
import json

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import InputError
from curate.io.readers import file_schema, read_source
from curate.io.sources import discover

# Records whose fields change type and presence from one to the next: what a column per field breaks.
SHAPES = [{"id": 1, "steps": [{"action": "click"}, {"url": "u"}]}, {"id": "b", "steps": "none"},
          {"other": {"deep": [1, None, {"x": []}]}}]
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=3), max_leaves=8)
records = st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=4), min_size=1, max_size=12)


def read(path, batch_rows=10, **kw):
    texts, bad, sizes = [], [], []
    for src in discover(str(path)):
        for batch, b in read_source(src, batch_rows=batch_rows, raw_column="raw", **kw):
            if batch is not None:
                assert batch.schema.names == ["raw", "_id"]
                texts += batch.column("raw").to_pylist()
                sizes.append(batch.num_rows)
            if b is not None:
                bad += list(zip(b.line, b.error))
    return texts, bad, sizes


@settings(max_examples=60, deadline=None)
@given(rows=records, batch_rows=st.integers(1, 5), as_array=st.booleans())
@example(rows=SHAPES, batch_rows=1, as_array=False)
@example(rows=SHAPES, batch_rows=2, as_array=True)
def test_records_come_back_whole_in_order_whatever_their_shape(tmp_path_factory, rows, batch_rows, as_array):
    path = tmp_path_factory.mktemp("raw") / "r.json"
    path.write_bytes(orjson.dumps(rows) if as_array else b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    texts, bad, sizes = read(path, batch_rows)
    assert [json.loads(t) for t in texts] == rows and not bad
    assert all(s <= batch_rows for s in sizes)


def test_json_lines_keep_each_line_as_written(tmp_path):
    lines = ['{"b": 1,  "a": [1, 2]}', '{"id": "x", "steps": "none"}']
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n\n").encode()))
    texts, bad, _ = read(path)
    assert texts == lines and not bad


def test_what_is_not_a_json_object_is_a_bad_row_by_line_or_position(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{oops\n\n7\n[{"b": 2}]')  # an array is a record (a session's steps)
    texts, bad, _ = read(path)
    assert [json.loads(t) for t in texts] == [{"a": 1}, [{"b": 2}]]
    assert [line for line, _ in bad] == [2, 4]
    assert "malformed JSON" in bad[0][1] and "expected a JSON object or array, got int" in bad[1][1]
    array = tmp_path / "a.json"
    array.write_text('[{"a": 1}, 7]')
    texts, bad, _ = read(array)
    assert texts == ['{"a":1}'] and bad == [(2, "record 2 of the array is a int, not a JSON object or array")]
    with pytest.raises(InputError, match="line 2: malformed JSON"):
        read(path, on_bad_row="fail")


def test_a_broken_array_and_a_non_json_file_are_named(tmp_path):
    broken = tmp_path / "b.json"
    broken.write_text('[{"a": 1}, ')
    with pytest.raises(InputError, match=r"b\.json: not valid JSON"):
        read(broken)
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1]}), table)
    with pytest.raises(InputError, match="input.raw_column reads JSON .* this file is parquet"):
        read(table)
    with pytest.raises(InputError, match="this file is parquet"):
        file_schema(discover(str(table))[0], "raw")


def test_file_schema_is_the_one_string_column(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": {"b": 1}}\n')
    assert file_schema(discover(str(path))[0], "raw")[0] == pa.schema([("raw", pa.string())])
