"""apply -> restore reproduces every deleted table exactly; apply refuses without --yes and
after a change; restore refuses what it cannot rebuild exactly."""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.errors import CurateError
from curate_lake.apply import apply_plan
from curate_lake.plan_file import make_plan
from curate_lake.quarantine import Quarantine
from curate_lake.reader import read_table
from curate_lake.restore import restore_tables
from curate_lake.scan import ScanOptions, scan_lake
from curate_lake.scan_output import write_scan
from curate_lake.tables import discover


@pytest.fixture
def planned(lake_root, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(lake_root, lake)
    out = tmp_path / "scan"
    opts = ScanOptions(progress=False)
    write_scan(out, [str(lake)], opts, scan_lake([lake], out, opts))
    return lake, make_plan(out), Quarantine(tmp_path / "quarantine")


def snapshot(lake):
    tables, _ = discover([lake])
    return {t.name: read_table(t) for t in tables if t.name not in ("broken.parquet", "bad_lines.jsonl", "mixed")}


@pytest.mark.parametrize("purge", [False, True])
def test_apply_then_restore_is_exact(planned, purge):
    lake, plan, quarantine = planned
    before = snapshot(lake)
    deleted = {d["table"] for d in plan["deletions"]}
    # every kind of planted table ends up deleted: subsets, projections, renamed, widened, partitioned
    assert {"rows_subset.parquet", "projection.parquet", "widened.parquet", "orders_by_region"} <= deleted
    report = apply_plan(plan, quarantine, yes=True, purge=purge)
    assert set(report.moved) == deleted and not report.skipped
    assert not any((lake / name).exists() for name in deleted)
    restored = restore_tables(quarantine, None)
    assert {r.table for r in restored} == deleted
    assert {r.source for r in restored} == {"container"}
    after = snapshot(lake)
    assert after.keys() == before.keys()
    for name, table in before.items():
        assert after[name].equals(table, check_metadata=True), name  # rows, order, schema
    assert quarantine.entries() == {}


def test_restore_keeps_partition_layout(planned):
    lake, plan, quarantine = planned
    files_before = sorted(p.relative_to(lake).as_posix() for p in (lake / "orders_by_region").rglob("*.parquet"))
    schema_before = pq.read_schema(lake / "orders_by_region" / "region=eu" / "part-0.parquet")
    apply_plan(plan, quarantine, yes=True, purge=True)
    restore_tables(quarantine, ["orders_by_region"])
    files_after = sorted(p.relative_to(lake).as_posix() for p in (lake / "orders_by_region").rglob("*.parquet"))
    assert files_after == files_before
    assert pq.read_schema(lake / "orders_by_region" / "region=eu" / "part-0.parquet").equals(schema_before, check_metadata=True)


def test_nothing_moves_without_yes(planned):
    lake, plan, quarantine = planned
    before = sorted(p.name for p in lake.iterdir())
    report = apply_plan(plan, quarantine, yes=False)
    assert report.dry_run and report.moved
    assert sorted(p.name for p in lake.iterdir()) == before
    assert not quarantine.root.exists()


def test_apply_refuses_after_a_change(planned):
    lake, plan, quarantine = planned
    container = next(d for d in plan["deletions"] if d["table"] == "rows_subset.parquet")["container_path"]
    pq.write_table(pq.read_table(container).slice(1), container)
    before = sorted(p.name for p in lake.iterdir())
    with pytest.raises(CurateError, match="changed since the scan"):
        apply_plan(plan, quarantine, yes=True)
    assert sorted(p.name for p in lake.iterdir()) == before


def touch(path):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def copy_back(path, tmp_path):
    """The same bytes written again: a new file (new mtime, maybe a new inode) with the old content."""
    shutil.copyfile(path, tmp_path / "saved")
    os.unlink(path)
    shutil.copyfile(tmp_path / "saved", path)
    touch(path)  # whatever the clock's resolution, the mtime differs from the scanned one


@pytest.mark.parametrize("how", ["touch", "copy back"])
def test_a_container_with_the_same_bytes_still_restores_after_purge(planned, tmp_path, how):
    """Issue 21: "changed" is decided by content; a new mtime on the same bytes changes nothing."""
    lake, plan, quarantine = planned
    before = snapshot(lake)
    container = next(d for d in plan["deletions"] if d["table"] == "rows_subset.parquet")["container_path"]
    inside = {d["table"] for d in plan["deletions"] if d["container_path"] == container}
    apply_plan(plan, quarantine, yes=True, purge=True)
    touch(container) if how == "touch" else copy_back(container, tmp_path)
    restored = restore_tables(quarantine, sorted(inside))
    assert {r.table for r in restored} == inside and {r.source for r in restored} == {"container"}
    after = snapshot(lake)
    assert all(after[name].equals(before[name], check_metadata=True) for name in inside)


def test_apply_goes_ahead_when_only_mtimes_changed(planned, tmp_path):
    lake, plan, quarantine = planned
    d = next(d for d in plan["deletions"] if d["table"] == "rows_subset.parquet")
    touch(d["path"])
    copy_back(d["container_path"], tmp_path)
    report = apply_plan(plan, quarantine, yes=True, purge=True)
    assert "rows_subset.parquet" in report.moved and not report.skipped
    (r,) = restore_tables(quarantine, ["rows_subset.parquet"])
    assert r.source == "container"


def test_restore_falls_back_to_quarantine_copy_when_container_changed(planned):
    lake, plan, quarantine = planned
    d = next(d for d in plan["deletions"] if d["table"] == "rows_subset.parquet")
    original = read_table(discover([lake / "rows_subset.parquet"])[0][0])
    apply_plan(plan, quarantine, yes=True, purge=False)
    pq.write_table(pq.read_table(d["container_path"]).slice(1), d["container_path"])
    (r,) = restore_tables(quarantine, ["rows_subset.parquet"])
    assert r.source == "quarantine"
    assert read_table(discover([lake / "rows_subset.parquet"])[0][0]).equals(original, check_metadata=True)


def test_restore_refuses_what_it_cannot_rebuild(planned):
    lake, plan, quarantine = planned
    d = next(d for d in plan["deletions"] if d["table"] == "rows_subset.parquet")
    apply_plan(plan, quarantine, yes=True, purge=True)
    with pytest.raises(CurateError, match="not in quarantine"):
        restore_tables(quarantine, ["no_such_table"])
    pq.write_table(pq.read_table(d["container_path"]).slice(1), d["container_path"])
    with pytest.raises(CurateError, match="cannot be rebuilt exactly"):
        restore_tables(quarantine, ["rows_subset.parquet"])
    assert "rows_subset.parquet" in quarantine.entries()  # still recorded, nothing lost


def test_a_moved_quarantine_still_restores(planned, tmp_path):
    lake, plan, quarantine = planned
    before = snapshot(lake)
    apply_plan(plan, quarantine, yes=True)
    moved = Quarantine(shutil.move(quarantine.root, tmp_path / "elsewhere"))
    restore_tables(moved, None)
    after = snapshot(lake)
    assert all(after[k].equals(v, check_metadata=True) for k, v in before.items())
    assert not any(p.is_dir() for p in moved.root.iterdir())  # slots cleaned up


def test_a_second_apply_of_the_same_plan_is_refused(planned):
    _, plan, quarantine = planned
    apply_plan(plan, quarantine, yes=True)
    with pytest.raises(CurateError, match="is gone"):
        apply_plan(plan, quarantine, yes=True)


def test_a_parquet_table_inside_a_csv_is_rebuilt_from_the_csv_text(tmp_path):
    # pandas wrote the container: integers with NULLs as 12.0, midnights as bare dates
    lake = tmp_path / "lake"
    lake.mkdir()
    n = 50
    full = pa.table(
        {
            "id": pa.array(range(n), pa.int32()),
            "day": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)], pa.timestamp("us")),
            "qty": pa.array([None if i % 4 == 0 else i * 3 for i in range(n)], pa.int64()),
            "code": [str(1000 + i) for i in range(n)],
        }
    )
    full.to_pandas().to_csv(lake / "full.csv", index=False)
    subset = full.take([7, 3, 3, 40, 12])
    pq.write_table(subset, lake / "subset.parquet")
    out = tmp_path / "scan"
    opts = ScanOptions(progress=False)
    write_scan(out, [str(lake)], opts, scan_lake([lake], out, opts))
    plan = make_plan(out)
    assert [(d["container"], d["table"]) for d in plan["deletions"]] == [("full.csv", "subset.parquet")]
    quarantine = Quarantine(tmp_path / "q")
    report = apply_plan(plan, quarantine, yes=True, purge=True)
    assert report.moved == ["subset.parquet"], report.skipped
    restore_tables(quarantine, None)
    assert pq.read_table(lake / "subset.parquet").equals(subset, check_metadata=True)
