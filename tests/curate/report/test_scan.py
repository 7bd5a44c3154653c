"""The report's few rows of a trace: the first rows of each reason, read without decoding the
rows around them more than a small batch at a time (a trace's rows can hold whole pages)."""

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.report import scan


def _trace(path, reasons: list[str], row_group: int):
    rows = [{"text": f"page {i} " + "x" * (i % 7)} for i in range(len(reasons))]
    table = pa.table({"_id": [f"id{i}" for i in range(len(reasons))], "reason": reasons, "row": rows})
    pq.write_table(table, path, row_group_size=row_group)


@settings(max_examples=40, deadline=None)
@given(reasons=st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=300), per=st.integers(1, 4),
       scan_rows=st.integers(0, 320), row_group=st.integers(1, 100))
@example(reasons=[], per=3, scan_rows=10, row_group=1)
@example(reasons=["a"] * 130 + ["b"], per=3, scan_rows=131, row_group=200)  # the last row, past a batch
@example(reasons=["a"] * 130 + ["b"], per=3, scan_rows=130, row_group=200)  # ... and just outside the scan
def test_the_first_rows_of_each_reason_are_those_a_full_read_finds(tmp_path_factory, reasons, per, scan_rows,
                                                                   row_group):
    path = tmp_path_factory.mktemp("t") / "trace.parquet"
    _trace(path, reasons, row_group)
    expected: dict[str, list[int]] = {}
    for i, reason in enumerate(reasons[:scan_rows]):
        if len(expected.setdefault(reason, [])) < per:
            expected[reason].append(i)
    found = scan.first_of_each(path, per, scan_rows)
    assert found == expected and list(found) == list(expected)  # the reasons in order of appearance
    wanted = [p for ps in found.values() for p in ps]
    everything = pq.read_table(path).to_pylist()
    assert scan.rows_at(path, wanted) == {p: everything[p] for p in wanted}


def test_rows_at_stops_decoding_after_the_last_row_it_wants(tmp_path, monkeypatch):
    path = tmp_path / "trace.parquet"
    _trace(path, ["a"] * 1000, row_group=1000)
    decoded = []
    real = pq.ParquetFile.iter_batches

    def counting(self, *args, **kwargs):
        for batch in real(self, *args, **kwargs):
            decoded.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counting)
    assert list(scan.rows_at(path, [3, 70])) == [3, 70]
    assert max(decoded) <= scan.ROWS_AT_BATCH and sum(decoded) <= 2 * scan.ROWS_AT_BATCH
