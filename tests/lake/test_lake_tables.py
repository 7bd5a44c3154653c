"""Which files and directories are tables, when a table's fingerprint changes, and when its data does."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from curate_lake.reader import read_table
from curate_lake.tables import discover, same_data, table_at


def write(path, **cols):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), path)


def test_discovery_rules(tmp_path):
    write(tmp_path / "a.parquet", x=[1])
    write(tmp_path / "sub" / "b.parquet", x=[2])
    write(tmp_path / "hive" / "k=1" / "f.parquet", x=[3])
    write(tmp_path / "hive" / "k=2" / "f.parquet", x=[4])
    write(tmp_path / "parts" / "part-0.parquet", x=[5])
    write(tmp_path / "parts" / "part-1.parquet", x=[6])
    write(tmp_path / ".curate-quarantine" / "q.parquet", x=[7])
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "c.csv").write_text("x\n1\n")
    (tmp_path / "d.jsonl").write_text('{"x": 1}\n')
    tables, issues = discover([tmp_path])
    kinds = {t.name: (t.format, t.partitioned, len(t.files)) for t in tables}
    assert kinds == {
        "a.parquet": ("parquet", False, 1),
        "sub/b.parquet": ("parquet", False, 1),
        "hive": ("parquet", True, 2),
        "parts": ("parquet", True, 2),
        "c.csv": ("csv", False, 1),
        "d.jsonl": ("jsonl", False, 1),
    }
    assert not issues
    hive = next(t for t in tables if t.name == "hive")
    data = read_table(hive)
    assert data.column_names == ["x", "k"] and data.column("k").to_pylist() == [1, 2]


def test_fingerprint_follows_files(tmp_path):
    write(tmp_path / "a.parquet", x=[1])
    before = table_at(tmp_path / "a.parquet").fingerprint
    assert table_at(tmp_path / "a.parquet").fingerprint == before
    st = (tmp_path / "a.parquet").stat()
    os.utime(tmp_path / "a.parquet", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert table_at(tmp_path / "a.parquet").fingerprint != before
    assert table_at(tmp_path / "gone.parquet") is None


def test_same_data_is_decided_by_content(tmp_path):
    write(tmp_path / "hive" / "k=1" / "f.parquet", x=[1, 2])
    write(tmp_path / "hive" / "k=2" / "f.parquet", x=[3])
    scanned = table_at(tmp_path / "hive")
    fp, content = scanned.fingerprint, scanned.content_hash()
    f = tmp_path / "hive" / "k=2" / "f.parquet"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    touched = table_at(tmp_path / "hive")
    assert touched.fingerprint != fp and same_data(touched, fp, content)
    assert not same_data(touched, fp, None)  # without a recorded hash the fingerprint is all there is
    # the same bytes under another partition value, then one byte more: other data
    os.rename(tmp_path / "hive" / "k=2", tmp_path / "hive" / "k=3")
    assert not same_data(table_at(tmp_path / "hive"), fp, content)
    os.rename(tmp_path / "hive" / "k=3", tmp_path / "hive" / "k=2")
    assert same_data(table_at(tmp_path / "hive"), fp, content)
    with open(f, "ab") as fh:
        fh.write(b"\0")
    assert not same_data(table_at(tmp_path / "hive"), fp, content)
    assert not same_data(None, fp, content)  # gone
