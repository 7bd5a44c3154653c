"""Readers: every format streams with _id; bad input is named by file, line and field."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curate.errors import InputError
from curate.io.readers import read_source
from curate.io.sources import discover
from tests.conftest import write_jsonl

ROWS = [{"text": f"document {i}", "n": i} for i in range(25)]


def read_all(path, **kw):
    batches, bad = [], []
    for src in discover(str(path)):
        for batch, b in read_source(src, batch_rows=10, **kw):
            if batch is not None:
                batches.append(batch)
            if b is not None:
                bad.extend(zip(b.line, b.error))
    return pa.Table.from_batches(batches) if batches else None, bad


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz", "a.jsonl.zst"])
def test_jsonl_in_every_compression(tmp_path, name):
    data = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    (tmp_path / name).write_bytes(data)
    table, bad = read_all(tmp_path / name)
    assert table.column("n").to_pylist() == list(range(25)) and not bad
    ids = table.column("_id").to_pylist()
    assert len(set(ids)) == 25
    assert read_all(tmp_path / name)[0].column("_id").to_pylist() == ids  # stable


def test_id_column_becomes_id(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"key": 10 + i, "text": "x"} for i in range(3)])
    src = discover(str(tmp_path / "a.jsonl"))[0]
    batch, _ = next(read_source(src, id_column="key"))
    assert batch.column("_id").to_pylist() == ["10", "11", "12"]


def test_malformed_line_is_traced_with_its_line_number(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "a"}\n{"text": "b"\n{"text": "c"}\n')
    table, bad = read_all(p)
    assert table.column("text").to_pylist() == ["a", "c"]
    assert bad[0][0] == 2 and "malformed JSON" in bad[0][1]


def test_malformed_line_fails_by_policy_naming_file_and_line(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "a"}\n[1, 2]\n')
    with pytest.raises(InputError, match=r"a\.jsonl, line 2: expected a JSON object"):
        read_all(p, on_bad_row="fail")


def test_a_field_first_seen_late_or_changing_kind_keeps_every_line(tmp_path):
    # a field the first rows lack, and a string field that holds a number later: no line is lost
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "a"}\n{"text": "b", "surprise": 1}\n{"text": 5}\n')
    table, bad = read_all(p)
    assert table.column("text").to_pylist() == ["a", "b", "5"]  # scalars of two kinds: carried as text
    assert table.column("surprise").to_pylist() == [None, 1, None]
    assert bad == []


def _encoded(name: str, rows: list[bytes]) -> bytes:
    """JSONL or CSV/TSV text of `rows` (each a raw text value), compressed as the name says."""
    if name.split(".")[1] == "jsonl":
        data = b"".join(b'{"text": "' + r + b'", "n": %d}\n' % i for i, r in enumerate(rows))
    else:
        sep = b"\t" if ".tsv" in name else b","
        data = b"text" + sep + b"n\n" + b"".join(r + sep + b"%d\n" % i for i, r in enumerate(rows))
    if name.endswith(".gz"):
        return gzip.compress(data, mtime=0)
    if name.endswith(".zst"):
        return zstandard.ZstdCompressor().compress(data)
    return data


NON_UTF8 = ["caf\xe9".encode("latin-1"), b"\xff\xfe", b"half \xe2\x82", b"\xc0\xaf overlong"]


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz", "a.jsonl.zst", "a.csv", "a.tsv"])
@pytest.mark.parametrize("bad_value", NON_UTF8)
def test_non_utf8_rows_go_to_the_trace_naming_file_and_line(tmp_path, name, bad_value):
    rows = [b"fine %d" % i for i in range(30)]
    rows[2] = rows[17] = bad_value  # in the first batch and a later one
    (tmp_path / name).write_bytes(_encoded(name, rows))
    table, bad = read_all(tmp_path / name)
    assert table.column("n").to_pylist() == [i for i in range(30) if i not in (2, 17)]
    assert [line for line, _ in bad] == [3, 18] if name.split(".")[1] == "jsonl" else [4, 19]
    assert all("not valid UTF-8" in error for _, error in bad)
    with pytest.raises(InputError, match=rf"{name.replace('.', '[.]')}, line \d+: .*not valid UTF-8"):
        read_all(tmp_path / name, on_bad_row="fail")


def test_an_empty_file_gives_no_rows_or_is_an_error_with_on_bad_row_fail(tmp_path):
    (tmp_path / "e.jsonl").write_bytes(b"")
    table, bad = read_all(tmp_path / "e.jsonl")  # skipped, counted by the task (issue 46)
    assert (table is None or table.num_rows == 0) and not bad
    with pytest.raises(InputError, match="empty"):
        read_all(tmp_path / "e.jsonl", on_bad_row="fail")


def test_truncated_parquet_is_an_error(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["a"] * 1000}), p)
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(InputError, match=r"t\.parquet: not a readable Parquet file"):
        read_all(p)


def test_parquet_directory_with_hive_partitions(tmp_path):
    for lang in ("en", "fr"):
        d = tmp_path / "ds" / f"lang={lang}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"text": [f"{lang}-1", f"{lang}-2"]}), d / "part-0.parquet")
    table, _ = read_all(tmp_path / "ds")
    assert table.column("lang").to_pylist() == ["en", "en", "fr", "fr"]
    assert table.column("text").to_pylist() == ["en-1", "en-2", "fr-1", "fr-2"]


def test_csv_with_a_bad_row_traced(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("text,n\nhello,1\nbad,2,3\nworld,4\n")
    table, bad = read_all(p)
    assert table.column("text").to_pylist() == ["hello", "world"]
    assert len(bad) == 1 and "expected 2 columns" in bad[0][1]


def test_hugging_face_save_to_disk_directory(tmp_path):
    d = tmp_path / "hf"
    d.mkdir()
    table = pa.table({"text": ["a", "b", "c"]})
    with pa.OSFile(str(d / "data-00000-of-00001.arrow"), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
        w.write_table(table)
    (d / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
    (d / "dataset_info.json").write_text("{}")
    out, _ = read_all(d)
    assert out.column("text").to_pylist() == ["a", "b", "c"]


def test_glob_with_no_match_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no input files match"):
        discover(str(tmp_path / "*.jsonl"))
    with pytest.raises(InputError, match="input not found"):
        discover(str(tmp_path / "missing.jsonl"))


def test_large_parquet_splits_by_row_group_with_the_same_ids(tmp_path):
    from curate.io.sources import split_parquet

    p = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(1000)]}), p, row_group_size=100)
    whole = discover(str(p))
    parts = split_parquet(whole, target_bytes=1)
    assert len(parts) == 10 and parts[3].first_row == 300
    ids = lambda srcs: [i for s in srcs for b, _ in read_source(s) for i in b.column("_id").to_pylist()]
    assert ids(parts) == ids(whole)


def test_a_damaged_large_parquet_file_is_named_when_planned(tmp_path):
    # Planning splits files larger than the target by their footers; a damaged one was let through.
    from curate.io.sources import split_parquet

    p = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(1000)]}), p)
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(InputError, match=r"big\.parquet: not a readable Parquet file"):
        split_parquet(discover(str(p)), target_bytes=1)


def test_file_schema_reads_each_format_cheaply(tmp_path):
    from curate.io.jsonl_reader import PEEK_BYTES
    from curate.io.readers import file_schema

    rows = [{"text": "x" * 100, "n": i, "empty": None} for i in range(2 * PEEK_BYTES // 100)]  # past the peek
    write_jsonl(tmp_path / "a.jsonl.gz", rows)
    (tmp_path / "a.csv").write_text("text,n\nhello,1\n")
    pq.write_table(pa.table({"text": ["a"], "n": pa.array([1], pa.int8())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), tmp_path / "none.parquet")
    by_name = {s.name: s for s in discover(str(tmp_path))}
    schema = lambda name: file_schema(by_name[name])[0]
    assert schema("a.jsonl.gz") == pa.schema([("text", pa.string()), ("n", pa.int64()), ("empty", pa.null())])
    assert schema("a.csv") == pa.schema([("text", pa.string()), ("n", pa.int64())])
    assert schema("a.parquet").field("n").type == pa.int8()
    assert schema("none.parquet") is None  # no rows: nothing a step would read
    # the footer read for the schema tells the rows too (the progress bars' total); a peek does not
    assert [file_schema(by_name[name])[1] for name in ("a.parquet", "none.parquet", "a.jsonl.gz")] == [1, 0, None]


def test_real_hugging_face_datasets_on_disk_and_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # in case datasets was imported earlier
        if hasattr(datasets.config, flag):
            monkeypatch.setattr(datasets.config, flag, True)
    ds = datasets.Dataset.from_dict({"text": ["a", "b", "c"]})
    datasets.DatasetDict({"train": ds, "test": ds.select([2])}).save_to_disk(str(tmp_path / "dict"))
    srcs = discover(str(tmp_path / "dict"), None, "test")
    assert [r["text"] for s in srcs for b, _ in read_source(s) for r in b.to_pylist()] == ["c"]
    with pytest.raises(InputError, match="choose one with input.split"):
        discover(str(tmp_path / "dict"))
    # A dataset name resolved by `datasets` (here a local folder, as no hub is reachable).
    write_jsonl(tmp_path / "hub" / "train.jsonl", [{"text": "x"}, {"text": "y"}])
    srcs = discover(f"hf:{tmp_path / 'hub'}", None, "train")
    assert [r["text"] for s in srcs for b, _ in read_source(s) for r in b.to_pylist()] == ["x", "y"]
    with pytest.raises(InputError, match="not available locally"):
        discover("hf:no-such-org/no-such-dataset")
