"""Valid data is never dropped: the input's schema is decided from every file before the run
(curate/io/input_schema.py), whatever the blocks, files, samples or batch sizes."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate.io import input_schema
from curate.io.input_schema import JSON, TEXT
from tests.conftest import write_jsonl


def recipe(tmp_path: Path, inp: str, steps: str = "  - normalize_text: {}\n", extra_input: str = "",
           out: str = "out") -> Path:
    path = tmp_path / f"{out}.yaml"
    path.write_text(f"input: {{path: '{inp}'{extra_input}}}\noutput: {{path: '{tmp_path / out}'}}\nsteps:\n{steps}")
    return path


def data_digest(out: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted((out / "data").glob("*.parquet")))).hexdigest()


# Types merged field by field.

def test_kinds_widen_and_conflicts_are_carried_as_text():
    merged = input_schema.merge([
        pa.schema([("n", pa.int32()), ("s", pa.string()), ("o", pa.struct([("a", pa.int64())])), ("x", pa.int64())]),
        pa.schema([("n", pa.float64()), ("s", pa.null()), ("o", pa.struct([("b", pa.string())])), ("x", pa.string())]),
        pa.schema([("x", pa.struct([("c", pa.int64())])), ("late", pa.null())]),
    ])
    assert merged.field("n").type == pa.float64()
    assert merged.field("s").type == pa.string() and input_schema.mixed(merged.field("s")) is None
    assert merged.field("o").type == pa.struct([("a", pa.int64()), ("b", pa.string())])
    assert input_schema.mixed(merged.field("x")) == JSON  # an integer, a string, then an object
    assert merged.field("late").type == pa.string()  # null everywhere: text


def test_scalars_of_two_kinds_are_text_and_anything_with_an_object_is_json_text():
    merged = input_schema.merge([pa.schema([("w", pa.int64())]), pa.schema([("w", pa.string())])])
    assert input_schema.mixed(merged.field("w")) == TEXT
    assert input_schema.as_text(300, TEXT) == "300" and input_schema.as_text("300", TEXT) == "300"
    assert input_schema.as_text("300", JSON) == '"300"' and input_schema.as_text({"a": 1}, JSON) == '{"a":1}'


# JSON lines.

def test_a_jsonl_field_no_step_reads_that_turns_into_an_object_keeps_every_line(cli, tmp_path):
    rows = [{"text": f"document {i} has words", "meta": i} for i in range(300)]
    rows += [{"text": f"document {i} has words", "meta": {"page": i}} for i in range(300, 400)]
    write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    res = cli("run", recipe(tmp_path, str(tmp_path / "in" / "a.jsonl")), "-w", "1")
    assert res.exit_code == 0, res.output
    data = pq.read_table(tmp_path / "out" / "data")
    assert data.num_rows == 400  # was 300: the 100 objects went to the trace as unparseable
    meta = data.column("meta").to_pylist()
    assert meta[299] == "299" and json.loads(meta[300]) == {"page": 300}
    assert not (tmp_path / "out" / "trace").exists() or not list((tmp_path / "out" / "trace").glob("*.parquet"))


def test_jsonl_files_whose_ids_differ_in_type_publish_one_readable_dataset(cli, tmp_path):
    pl = pytest.importorskip("polars")
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": i, "text": f"text number {i}"} for i in range(5)])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"id": f"b{i}", "text": f"text number {i}"} for i in range(5)])
    r = recipe(tmp_path, str(tmp_path / "in"), "  - sql_filter: {where: \"text <> 'text number 0'\"}\n")
    res = cli("run", r, "-w", "2")
    assert res.exit_code == 0, res.output  # was: an error at the very end, after every task ran
    data = pq.read_table(tmp_path / "out" / "data")  # pyarrow reads the shards as one dataset
    assert sorted(data.column("id").to_pylist()) == ["1", "2", "3", "4", "b1", "b2", "b3", "b4"]
    assert pl.read_parquet(str(tmp_path / "out" / "data" / "*.parquet")).height == 8  # and polars
    trace = pq.read_table(tmp_path / "out" / "trace")
    assert sorted(trace.column("row").combine_chunks().field("id").to_pylist()) == ["0", "b0"]


def test_a_value_of_another_kind_in_a_column_a_step_reads_is_one_traced_row(cli, tmp_path):
    rows = [{"text": f"line {i} of text", "score": i / 10} for i in range(20)]
    rows[13]["score"] = "high"
    write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    res = cli("run", recipe(tmp_path, str(tmp_path / "in" / "a.jsonl"), "  - sql_filter: {where: 'score >= 0'}\n"),
              "-w", "1")
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "out" / "data").num_rows == 19
    trace = pq.read_table(tmp_path / "out" / "trace").to_pylist()
    [row] = trace
    assert row["reason"] == "unparseable"
    assert "a.jsonl, line 14: field 'score' is string \"high\", but double" in row["detail"]


# WebDataset.

@pytest.mark.parametrize("batch_rows", [8192, 10])
def test_webdataset_fields_of_another_type_are_one_traced_row_or_text_whatever_the_batches(cli, tmp_path, batch_rows):
    pytest.importorskip("PIL")
    from tests.curate.io import wds_shards

    members = []
    for i in range(30):
        extra = {"original_width": 64, "exif": "none"}
        if i == 17:
            extra["original_width"] = "300"  # a string where the other samples have a number
        if i == 23:
            extra["exif"] = {"Make": "Canon"}  # an object where the others have a string
        members += wds_shards.sample(f"{i:04d}", caption=f"caption {i}", **extra)
    wds_shards.write_tar(tmp_path / "wds" / "s.tar", members)
    steps = "  - sql_filter: {where: 'original_width > 10'}\n"  # reads original_width, not exif
    r = recipe(tmp_path, str(tmp_path / "wds" / "s.tar"), steps, f", batch_rows: {batch_rows}")
    res = cli("run", r, "-w", "1")
    assert res.exit_code == 0, res.output  # was exit 2 (the width) or 1 (the exif object) at 8192
    data = pq.read_table(tmp_path / "out" / "data")
    assert data.num_rows == 29
    exif = dict(zip(data.column("key").to_pylist(), data.column("exif").to_pylist()))
    assert json.loads(exif["0023"]) == {"Make": "Canon"} and exif["0000"] == '"none"'
    [row] = pq.read_table(tmp_path / "out" / "trace").to_pylist()
    assert "0017.json: field 'original_width' is string \"300\", but int64" in row["detail"]


# CSV.

def test_an_unclosed_csv_quote_is_refused_naming_file_and_line(cli, tmp_path):
    inp = tmp_path / "in" / "a.csv"
    inp.parent.mkdir()
    inp.write_text('id,text\n1,fine text\n2,"an open quote\n3,more\n4,"quoted, well"\n5,end\n6,x\n7,y\n8,z\n')
    r = recipe(tmp_path, str(inp))
    for command in (("validate", r), ("run", r)):
        res = cli(*command)
        assert res.exit_code == 2, res.output
        assert "a.csv, line" in res.stderr and "quote" in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "out" / "data").exists()  # never fragments published as rows


def test_a_csv_column_whose_later_rows_do_not_fit_the_first_blocks_type_is_widened(tmp_path, monkeypatch):
    from curate.io import file_stream, readers
    from curate.io.sources import discover

    monkeypatch.setattr(file_stream, "CHUNK_BYTES", 64)  # the first block types the column as integers
    inp = tmp_path / "a.csv"
    inp.write_text("n,m,text\n" + "".join(f"{i},{i},row {i}\n" for i in range(20)) + "2.5,abc,last\n")
    [source] = discover(str(inp))
    schema, _ = readers.scan_schema(source)
    assert schema.field("n").type == pa.float64() and schema.field("m").type == pa.string()
    rows = [b for b, _ in readers.read_source(source, schema=schema) if b is not None]
    table = pa.Table.from_batches(rows)
    assert table.num_rows == 21 and table.column("m").to_pylist()[-1] == "abc"


# A truncated .jsonl.gz.

def test_a_truncated_jsonl_gz_is_named_at_validate_and_its_rows_before_the_cut_kept_on_request(cli, tmp_path):
    lines = b"".join(b'{"text": "row %d with some words"}\n' % i for i in range(200_000))
    body = gzip.compress(lines, mtime=0)
    inp = tmp_path / "in" / "cut.jsonl.gz"
    inp.parent.mkdir()
    inp.write_bytes(body[: len(body) // 2])
    r = recipe(tmp_path, str(inp))
    res = cli("validate", r)
    assert res.exit_code == 2 and "cut.jsonl.gz" in res.stderr and "on_truncated: keep" in res.stderr, res.output
    res = cli("run", recipe(tmp_path, str(inp), extra_input=", on_truncated: keep"), "-w", "1")
    assert res.exit_code == 0, res.output
    kept = pq.read_table(tmp_path / "out" / "data").column("text").to_pylist()
    assert len(kept) > 50_000 and kept == [f"row {i} with some words" for i in range(len(kept))]
    [cut] = pq.read_table(tmp_path / "out" / "trace").to_pylist()
    assert cut["reason"] == "truncated" and f"line {len(kept) + 1}" in cut["detail"]


# The property: no valid line is lost, and the bytes do not depend on the batches.

KINDS = st.sampled_from(["int", "float", "str", "obj", "list", "null", "bool"])


def _value(kind: str, i: int):
    return {"int": i, "float": i + 0.5, "str": f"s{i}", "obj": {"k": i}, "list": [i, i + 1], "null": None,
            "bool": i % 2 == 0}[kind]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.tuples(st.integers(0, 59), KINDS), min_size=1, max_size=6),
       cuts=st.lists(st.integers(1, 59), max_size=3, unique=True), batch_rows=st.integers(1, 64))
@example(kinds=[(0, "int"), (59, "obj")], cuts=[], batch_rows=64)  # a change on the very last line
@example(kinds=[(0, "obj"), (11, "str"), (12, "int")], cuts=[11], batch_rows=1)  # objects, then a file of a str and ints
@example(kinds=[(30, "str")], cuts=[30], batch_rows=1)  # a change where a file starts, a row a batch
@example(kinds=[(1, "null")], cuts=[1], batch_rows=1)  # a file where the field is null in every line
def test_every_valid_line_is_kept_and_the_bytes_do_not_depend_on_files_or_batches(cli, tmp_path_factory, kinds,
                                                                                  cuts, batch_rows):
    tmp_path = tmp_path_factory.mktemp("prop")
    changes = dict(kinds)
    kind, rows = "int", []
    for i in range(60):
        kind = changes.get(i, kind)
        rows.append({"id": f"r{i:02d}", "text": f"line {i} of the input", "extra": _value(kind, i)})
    bounds = [0, *sorted(cuts), 60]
    for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
        write_jsonl(tmp_path / "split" / f"part-{n}.jsonl", rows[a:b])
    write_jsonl(tmp_path / "whole" / "all.jsonl", rows)
    tables = {}
    for name, rows_per_batch in (("split", batch_rows), ("whole", batch_rows), ("whole", 8192)):
        out = f"out-{name}-{rows_per_batch}"
        r = recipe(tmp_path, str(tmp_path / name), extra_input=f", id_column: id, batch_rows: {rows_per_batch}",
                   out=out)
        res = cli("run", r, "-w", "1")
        assert res.exit_code == 0, res.output
        tables[(name, rows_per_batch)] = pq.read_table(tmp_path / out / "data")
        if name == "whole":
            tables[(name, rows_per_batch, "bytes")] = data_digest(tmp_path / out)
    assert tables[("whole", batch_rows, "bytes")] == tables[("whole", 8192, "bytes")]
    for table in (tables[("split", batch_rows)], tables[("whole", 8192)]):
        assert table.column("_id").to_pylist() == [r["id"] for r in rows]  # every line, in order
        assert table.schema == tables[("whole", batch_rows)].schema
        assert table.column("extra").to_pylist() == tables[("whole", batch_rows)].column("extra").to_pylist()


def test_rows_before_a_cut_after_the_first_block_are_kept_once(tmp_path, monkeypatch):
    from curate.io import file_stream, readers
    from curate.io.sources import discover

    monkeypatch.setattr(file_stream, "CHUNK_BYTES", 1 << 16)  # several blocks read whole before the cut
    lines = b"".join(b'{"text": "row %d with some words"}\n' % i for i in range(100_000))
    body = gzip.compress(lines, mtime=0)
    (tmp_path / "cut.jsonl.gz").write_bytes(body[: len(body) // 2])
    [source] = discover(str(tmp_path / "cut.jsonl.gz"))
    kept, cuts = [], []
    for batch, bad in readers.read_source(source, schema=pa.schema([("text", pa.string())]), on_truncated="keep"):
        kept += batch.column("text").to_pylist() if batch is not None else []
        cuts += bad.reason if bad is not None else []
    assert len(kept) > 20_000 and kept == [f"row {i} with some words" for i in range(len(kept))]
    assert cuts == ["truncated"]
