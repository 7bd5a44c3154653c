"""`curate lake` through its Typer app: the whole flow, and user errors exiting 2 without a traceback."""

from __future__ import annotations

import shutil

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from curate_lake.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def lake(lake_root, tmp_path):
    shutil.copytree(lake_root, tmp_path / "lake")
    return tmp_path / "lake"


def test_scan_plan_apply_restore(lake, tmp_path):
    out, q = tmp_path / "scan", tmp_path / "q"
    r = run("scan", lake, "-o", out, "--no-progress")
    assert r.exit_code == 0, r.output
    assert "R2D2 funnel" in r.output and "top containers" in r.output and "unreadable" in r.output
    funnel = orjson.loads((out / "funnel.json").read_bytes())
    assert funnel["confirmed"] == len(orjson.loads((out / "containment.json").read_bytes()))
    assert pq.read_table(out / "graph.parquet").num_rows == funnel["steps"][0]["left"]

    access = tmp_path / "access.csv"
    access.write_text("table,frequency\norders.parquet,5\n")
    r = run("plan", out, "--access", access, "--latency", "10")
    assert r.exit_code == 0, r.output
    assert "milp (HiGHS)" in r.output
    plan = orjson.loads((out / "plan.json").read_bytes())
    assert plan["solver"] == "milp" and plan["deletions"]

    r = run("apply", out / "plan.json", "--quarantine", q)
    assert r.exit_code == 0 and "dry run" in r.output and not q.exists()
    r = run("apply", out / "plan.json", "--quarantine", q, "--yes", "--purge")
    assert r.exit_code == 0, r.output
    gone = [d["table"] for d in plan["deletions"]]
    assert not any((lake / t).exists() for t in gone)
    r = run("restore", "--all", "--quarantine", q)
    assert r.exit_code == 0, r.output
    assert all((lake / t).exists() for t in gone)


@pytest.mark.parametrize(
    "args, message",
    [
        (["scan", "/no/such/lake", "-o", "OUT"], "no such file"),
        (["plan", "NOT_A_SCAN"], "not a lake scan directory"),
        (["apply", "BAD_PLAN"], "not a readable lake plan"),
        (["restore", "missing_table", "--quarantine", "Q"], "not in quarantine"),
        (["restore", "--quarantine", "Q"], "--all"),
    ],
)
def test_user_errors_exit_2(tmp_path, args, message):
    (tmp_path / "BAD_PLAN").write_text("{not json")
    args = [str(tmp_path / a) if a in ("OUT", "NOT_A_SCAN", "BAD_PLAN", "Q") else a for a in args]
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert "Traceback" not in r.output


def test_apply_after_change_exits_2(lake, tmp_path):
    out = tmp_path / "scan"
    assert run("scan", lake, "-o", out, "--no-progress").exit_code == 0
    assert run("plan", out).exit_code == 0
    (lake / "orders_copy.parquet").unlink()
    r = run("apply", out / "plan.json", "--yes", "--quarantine", tmp_path / "q")
    assert r.exit_code == 2 and "changed since the scan" in r.output


def test_bad_access_file_exits_2(lake, tmp_path):
    out = tmp_path / "scan"
    assert run("scan", lake, "-o", out, "--no-progress").exit_code == 0
    access = tmp_path / "access.json"
    access.write_text('{"not_a_table.parquet": 1}')
    r = run("plan", out, "--access", access)
    assert r.exit_code == 2 and "unknown table names" in r.output


def test_curate_output_scans(cli, tmp_path):
    # A run's data has curate's `_id` beside the input's own `id`: two columns, not one.
    (tmp_path / "in").mkdir()
    rows = [{"id": i, "text": f"doc {i % 7}"} for i in range(30)]
    (tmp_path / "in" / "docs.jsonl").write_text("".join(orjson.dumps(r).decode() + "\n" for r in rows))
    for name, steps in (("all", "steps: []\n"), ("dedup", "steps:\n  - exact_dedup: {}\n")):
        recipe = tmp_path / f"{name}.yaml"
        recipe.write_text(f"name: {name}\ninput: {{path: '{tmp_path / 'in'}'}}\noutput: {{path: '{tmp_path / 'runs' / name}'}}\n{steps}")
        assert cli("run", recipe, "-w", "1").exit_code == 0
    r = cli("lake", "scan", tmp_path / "runs", "-o", tmp_path / "scan", "--no-progress")
    assert r.exit_code == 0, r.output
    scanned = pq.read_table(tmp_path / "scan" / "tables.parquet").to_pylist()
    data = {t["name"]: t for t in scanned}
    assert {"all/data", "dedup/data"} <= data.keys()
    assert {"_id", "id", "text"} <= set(data["dedup/data"]["columns"])
    assert "ambiguous" not in r.output
    confirmed = {(e["container"], e["contained"]) for e in orjson.loads((tmp_path / "scan" / "containment.json").read_bytes())}
    assert ("all/data", "dedup/data") in confirmed


def test_quarantine_defaults_to_beside_the_scan_output(lake, tmp_path, monkeypatch):
    out, elsewhere = tmp_path / "scan", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory has nothing to do with the lake
    assert run("scan", lake, "-o", out, "--no-progress").exit_code == 0
    assert run("plan", out).exit_code == 0
    gone = [d["table"] for d in orjson.loads((out / "plan.json").read_bytes())["deletions"]]
    r = run("apply", out / "plan.json", "--yes")
    assert r.exit_code == 0, r.output
    quarantine = tmp_path / ".scan.quarantine"  # hidden, so no later scan takes it for tables
    assert (quarantine / "restore.json").exists() and not any(elsewhere.iterdir())
    assert not any((lake / t).exists() for t in gone)
    r = run("restore", "--all")
    assert r.exit_code == 2 and "--scan" in r.output
    r = run("restore", "--all", "--scan", out)
    assert r.exit_code == 0, r.output
    assert all((lake / t).exists() for t in gone)
