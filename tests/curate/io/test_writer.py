"""ShardWriter: row groups and shards are cut by the rows alone, so the bytes written do not
depend on how the rows arrived in batches."""

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.io.writer import ShardWriter

ROWS = pa.table({"_id": [f"r{i}" for i in range(3000)],
                 "text": [("word " * (i % 37 + 1)) * (1 + (i % 5 == 0) * 40) for i in range(3000)]})


def _write(tmp, name, cuts, **sizes):
    writer = ShardWriter(tmp / name, "part", **sizes)
    start = 0
    for end in sorted(set(cuts)) + [ROWS.num_rows]:
        for batch in ROWS.slice(start, end - start).to_batches():
            writer.write(batch)
        start = end
    writer.close()
    # the rows it says each shard holds (a later stage is planned from them): the files' own
    assert writer.shard_rows == [pq.ParquetFile(p).metadata.num_rows for p in writer.paths]
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in writer.paths], writer.paths


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, ROWS.num_rows - 1), max_size=40))
@example(cuts=[])  # one batch
@example(cuts=list(range(1, 3000)))  # one row per batch
def test_bytes_do_not_depend_on_batch_boundaries(tmp_path_factory, cuts):
    tmp = tmp_path_factory.mktemp("w")
    sizes = dict(row_group_rows=700, row_group_bytes=30_000, shard_bytes=60_000)
    whole, paths = _write(tmp, "one", [], **sizes)
    split, _ = _write(tmp, "split", cuts, **sizes)
    assert split == whole
    read = pa.concat_tables(pq.read_table(p) for p in paths)
    assert read.equals(ROWS)


def test_row_groups_are_cut_by_rows_then_by_bytes(tmp_path):
    _, paths = _write(tmp_path, "rows", [], row_group_rows=700, row_group_bytes=1 << 30)
    groups = [pq.ParquetFile(p).metadata.row_group(i).num_rows for p in paths
              for i in range(pq.ParquetFile(p).metadata.num_row_groups)]
    assert groups == [700, 700, 700, 700, 200]
    _, paths = _write(tmp_path, "bytes", [], row_group_rows=100_000, row_group_bytes=30_000)
    meta = pq.ParquetFile(paths[0]).metadata
    assert meta.num_row_groups > 1 and all(meta.row_group(i).num_rows % 1024 == 0 for i in range(meta.num_row_groups - 1))
