"""The scan pipeline on a generated lake: precision/recall against brute force, the funnel,
issues, and the cache that makes a rescan cheap."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from curate_lake import content, scan as scan_mod
from curate_lake.columns import normalize_name
from curate_lake.scan import ScanOptions, scan_lake
from curate_lake.scan_output import write_scan
from tests.lake import brute_force
from tests.lake.brute_force import contained_pairs
from tests.lake.lake_testkit import NEAR_MISSES, PLANTED, confirmed_names


@pytest.fixture(scope="module")
def scanned(lake_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("scan")
    return scan_lake([lake_root], out, ScanOptions(progress=False))


def test_confirmed_edges_equal_brute_force(scanned):
    confirmed = confirmed_names(scanned)
    truth = contained_pairs(scanned.tables)
    assert PLANTED <= truth  # the fixture plants what it says
    true_positive = confirmed & truth
    assert len(true_positive) / len(confirmed) == 1.0  # precision
    assert len(true_positive) / len(truth) >= 0.99  # recall
    assert confirmed == truth


def test_the_oracle_reads_and_normalizes_on_its_own():
    # A bug in the scanner's reader or column names would hide on both sides otherwise:
    # of the lake package, the oracle uses only the list of tables.
    tree = ast.parse(Path(brute_force.__file__).read_text())
    from_lake = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and (node.level or node.module.split(".")[0] == "curate_lake")}
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert from_lake == {"curate_lake.tables"} and not any(m.split(".")[0] == "curate_lake" for m in imported)


@given(st.text())
@example("_id")
@example(" __index_level_0__ ")
@example("User ID")
def test_scanner_and_oracle_normalize_names_alike(name):
    assert normalize_name(name) == brute_force._name(name)


def test_near_misses_are_removed_by_the_step_that_can_see_them(scanned):
    names = [t.name for t in scanned.tables]
    decided = {(names[e.container], names[e.contained]): e for e in scanned.edges}
    assert not NEAR_MISSES & confirmed_names(scanned)
    assert decided[("orders.parquet", "near_out_of_range.parquet")].stage == "minmax"
    assert decided[("orders.parquet", "near_out_of_range.parquet")].evidence["column"] == "amount"
    changed = decided[("orders.parquet", "near_row_changed.parquet")]
    assert (changed.stage, changed.status, changed.evidence["missing"]) == ("content", "pruned", 1)
    # One extra column: never a schema candidate.
    assert ("orders.parquet", "near_extra_column.parquet") not in decided


def test_funnel_is_consistent(scanned):
    f = scanned.funnel
    n = len(scanned.tables)
    assert f["pairs"] == n * (n - 1)
    steps = f["steps"]
    for prev, nxt in zip(steps, steps[1:]):
        assert nxt["seen"] == prev["left"]
    for s in steps:
        assert s["left"] == s["seen"] - s["removed"] - s["errors"]
    assert steps[-1]["left"] == f["confirmed"] == len(scanned.confirmed())
    assert steps[0]["left"] == len(scanned.edges)


def test_unreadable_empty_and_mixed_tables_are_reported(scanned):
    kinds = {i["table"]: i["kind"] for i in scanned.issues}
    assert kinds == {
        "broken.parquet": "unreadable",
        "bad_lines.jsonl": "unreadable",
        "empty.parquet": "empty",
        "mixed": "mixed_schema",
    }
    assert "README.txt" not in {t.name for t in scanned.tables}


def test_rescan_of_unchanged_lake_reads_no_data(lake_root, tmp_path, monkeypatch):
    first = scan_lake([lake_root], tmp_path, ScanOptions(progress=False))

    def no_data(*a, **k):
        raise AssertionError("a rescan of an unchanged lake must not read data")

    monkeypatch.setattr(scan_mod, "compute_stats", no_data)
    monkeypatch.setattr(scan_mod, "check_contained", no_data)
    monkeypatch.setattr(scan_mod, "verify_edge", no_data)
    monkeypatch.setattr(scan_mod.Table, "content_hash", no_data)
    second = scan_lake([lake_root], tmp_path, ScanOptions(progress=False))
    assert second.cache_hits == len(second.tables) + len(second.issues)  # every table from cache
    assert confirmed_names(second) == confirmed_names(first)
    assert second.funnel["steps"] == first.funnel["steps"]
    assert second.contents == first.contents


def test_tables_in_confirmed_edges_have_a_content_hash(scanned):
    in_edges = {k for e in scanned.edges if e.status == "confirmed" for k in (e.container, e.contained)}
    assert in_edges and {k for k, c in enumerate(scanned.contents) if c} == in_edges
    assert all(scanned.contents[k] == scanned.tables[k].content_hash() for k in in_edges)


def test_a_changed_table_is_scanned_again(lake_root, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(lake_root, lake)
    scan_lake([lake], tmp_path / "out", ScanOptions(progress=False))
    # Same bytes, new mtime: the fingerprint changes, so its stats and verdicts are recomputed.
    target = lake / "rows_subset.parquet"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = scan_lake([lake], tmp_path / "out", ScanOptions(progress=False))
    assert again.cache_hits == len(again.tables) + len(again.issues) - 1
    assert ("orders.parquet", "rows_subset.parquet") in confirmed_names(again)


def test_no_verify_leaves_survivors_unverified(lake_root, tmp_path):
    r = scan_lake([lake_root], tmp_path, ScanOptions(progress=False, verify=False))
    assert r.funnel["confirmed"] == 0
    assert r.funnel["unverified"] == len(r.confirmed()) > 0
    assert {e.status for e in r.confirmed()} == {"unverified"}


def test_survival_bound_is_reported_for_partial_samples(lake_root, tmp_path):
    r = scan_lake([lake_root], tmp_path, ScanOptions(progress=False, sample=20))
    partial = [e for e in r.confirmed() if not e.evidence["complete_sample"]]
    assert partial
    for e in partial:
        assert e.evidence["sampled"] == 20
        assert e.evidence["survival_if_1pct_missing"] == pytest.approx(0.99**20)
    assert content.survival_bound(1000, complete=True) == 0.0
    # A small sample can let a near-miss through the content step; verification still removes it.
    assert not NEAR_MISSES & confirmed_names(r)


def test_missing_root_is_a_user_error(tmp_path):
    from curate.errors import CurateError

    with pytest.raises(CurateError, match="no such file"):
        scan_lake([tmp_path / "nope"], tmp_path / "out", ScanOptions(progress=False))


def test_truncated_string_statistics_never_prune_a_true_edge(tmp_path):
    # polars cuts string statistics at 64 bytes, pyarrow writes them whole
    values = ["a" * 100 + str(i) for i in range(50)]
    pq.write_table(pa.table({"s": values}), tmp_path / "exact.parquet")
    pl.DataFrame({"s": values[:20]}).write_parquet(tmp_path / "cut.parquet")
    r = scan_lake([tmp_path], tmp_path / "out", ScanOptions(progress=False))
    assert ("exact.parquet", "cut.parquet") in confirmed_names(r)


def test_the_scan_output_inside_the_lake_is_not_a_table(lake_root, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(lake_root, lake)
    first = scan_lake([lake], lake / "scan", ScanOptions(progress=False))
    write_scan(lake / "scan", [str(lake)], ScanOptions(), first)
    again = scan_lake([lake], lake / "scan", ScanOptions(progress=False))
    assert {t.name for t in again.tables} == {t.name for t in first.tables}
