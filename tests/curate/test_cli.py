"""The command line: exit codes (0 ok, 2 bad recipe or input, 1 bug), messages, not tracebacks."""

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import write_jsonl


def flat(text: str) -> str:
    return " ".join(text.split())


def recipe_file(tmp_path, steps="steps:\n  - exact_dedup: {}\n", inp=None):
    p = tmp_path / "r.yaml"
    p.write_text(f"name: t\ninput: {{path: '{inp or tmp_path / 'in'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n{steps}")
    return p


def test_run_prints_the_funnel_and_writes_the_run(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    res = cli("run", recipe_file(tmp_path), "--workers", "1")
    assert res.exit_code == 0, res.output
    assert "02_exact_dedup" not in res.stdout and "01_exact_dedup" in res.stdout
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["rows_out"] == 2


def test_input_and_output_options_replace_the_recipe(cli, tmp_path):
    write_jsonl(tmp_path / "other.jsonl", [{"text": "z"}])
    p = tmp_path / "r.yaml"
    p.write_text("steps: []\n")
    res = cli("run", p, "--input", tmp_path / "other.jsonl", "--output", tmp_path / "o2", "-w", "1")
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "o2" / "data").column("text").to_pylist() == ["z"]


@pytest.mark.parametrize("setup, expected", [
    (lambda d: (d / "in").mkdir() or (d / "in" / "a.jsonl").write_text('{"text": "a"}\n{"text": \n'), "a.jsonl, line 2"),
    (lambda d: write_jsonl(d / "in" / "a.jsonl", [{"body": "a"}]), "needs column 'text'"),
    (lambda d: (d / "in").mkdir() or (d / "in" / "a.parquet").write_bytes(b"PAR1 truncated"), "not a readable Parquet file"),
    (lambda d: (d / "in").mkdir() or (d / "in" / "a.jsonl").write_bytes(b""), "a.jsonl: the file is empty"),
    (lambda d: (d / "in").mkdir() or (d / "in" / "a.jsonl").write_bytes(b'{"text": "\xff"}\n'), "not valid UTF-8"),
])
def test_bad_input_exits_2_with_a_message_naming_file_and_place(cli, tmp_path, setup, expected):
    setup(tmp_path)
    res = cli("run", recipe_file(tmp_path), "-w", "1", "--set", "input.on_bad_row=fail")
    assert res.exit_code == 2
    assert expected in res.stderr.replace("\n", "")
    assert "Traceback" not in res.output
    assert not (tmp_path / "out" / "data").exists()


@pytest.mark.parametrize("steps, expected", [
    ("steps:\n  - no_such_op: {}\n", "steps[0]: unknown operator 'no_such_op'"),
    ("steps:\n  - exact_dedup: {bogus: 1}\n", "steps[0].exact_dedup.bogus: unknown parameter"),
    ("steps:\n  - exact_dedup: {lowercase: [1]}\n", "steps[0].exact_dedup.lowercase"),
])
def test_bad_recipe_exits_2_before_reading(cli, tmp_path, steps, expected):
    res = cli("validate", recipe_file(tmp_path, steps))
    assert res.exit_code == 2 and expected in res.stderr.replace("\n", "")
    res = cli("run", recipe_file(tmp_path, steps))  # the input does not even exist
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_validate_and_dry_run_read_no_data(cli, tmp_path):
    assert cli("validate", recipe_file(tmp_path)).exit_code == 0
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    res = cli("run", recipe_file(tmp_path), "--dry-run")
    assert res.exit_code == 0 and "stage 1: 01_exact_dedup (global)" in res.stdout
    assert not (tmp_path / "out").exists()


def test_ops_lists_operators_and_describes_parameters(cli):
    res = cli("ops")
    assert res.exit_code == 0 and "exact_dedup" in res.stdout and "sql_filter" in res.stdout
    res = cli("ops", "exact_dedup")
    assert res.exit_code == 0
    for word in ("columns", "prefer", "lowercase", "False"):
        assert word in res.stdout
    assert cli("ops", "nope").exit_code == 2


def test_inspect_summarizes_a_run_and_a_parquet_file(cli, tmp_path):
    pq.write_table(pa.table({"text": ["a", "bb", None], "n": [1, 2, 3]}), tmp_path / "t.parquet")
    res = cli("inspect", tmp_path / "t.parquet")
    assert res.exit_code == 0 and "3 rows" in flat(res.stdout) and "null %" in res.stdout
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}, {"text": "x"}])
    cli("run", recipe_file(tmp_path), "-w", "1")
    res = cli("inspect", tmp_path / "out")
    assert res.exit_code == 0 and "01_exact_dedup" in res.stdout and "1 rows" in flat(res.stdout)
    assert cli("inspect", tmp_path / "missing").exit_code == 2


def test_help_imports_no_heavy_packages():
    code = ("import sys; sys.argv=['curate', '--help']\nfrom curate.cli import main\ntry: main()\nexcept SystemExit: pass\n"
            "heavy = [m for m in ('torch', 'ray', 'transformers', 'polars', 'duckdb') if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "HEAVY []" in out


def test_a_bug_exits_1_with_one_line_and_no_traceback(cli, monkeypatch):
    import curate.describe

    def broken():
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(curate.describe, "operator_list", broken)
    res = cli("ops")
    assert res.exit_code == 1
    assert "internal error: ZeroDivisionError: oops" in res.stderr and "Traceback" not in res.output
    res = cli("--debug", "ops")
    assert res.exit_code == 1 and "Traceback" in res.stderr
