"""The command line: exit codes (0 ok, 2 bad recipe or input, 1 bug), messages, not tracebacks."""

import json
import os
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


def test_run_prints_the_funnel_and_writes_the_run(cli, tmp_path, manifest_at):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    res = cli("run", recipe_file(tmp_path), "--workers", "1")
    assert res.exit_code == 0, res.output
    assert "02_exact_dedup" not in res.stdout and "01_exact_dedup" in res.stdout
    assert manifest_at(tmp_path / "out").rows_out == 2


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


def test_validate_and_dry_run_write_nothing(cli, tmp_path):
    assert cli("validate", recipe_file(tmp_path), "--no-data").exit_code == 0
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    assert cli("validate", recipe_file(tmp_path)).exit_code == 0
    res = cli("run", recipe_file(tmp_path), "--dry-run")
    assert res.exit_code == 0 and "stage 1 (cpu workers, a task per shard of stage 0): 01_exact_dedup (global)" in res.stdout
    assert "stage 0 (cpu workers, 1 task)" in res.stdout
    assert "columns (first batch): text, _id" in res.stdout
    assert "fit of 01_exact_dedup: memory budget" in res.stdout.replace("\n", " ")
    assert not (tmp_path / "out").exists()


def test_dry_run_json_is_the_plan_the_run_follows(cli, tmp_path):
    for name in ("a", "b"):
        write_jsonl(tmp_path / "in" / f"{name}.jsonl", [{"text": f"{name}{i}"} for i in range(5)])
    res = cli("run", recipe_file(tmp_path), "--dry-run", "--json", "-w", "1")
    assert res.exit_code == 0
    planned = json.loads(res.stdout)
    assert [s["resources"] for s in planned["stages"]] == ["cpu", "cpu"]
    assert planned["stages"][0]["policy"]["parallel"] == 1  # the plan is made for the run's workers
    assert [t["sources"][0]["path"].rsplit("/", 1)[1] for t in planned["stages"][0]["tasks"]] == ["a.jsonl", "b.jsonl"]
    assert planned["stages"][1]["global"] == "01_exact_dedup" and isinstance(planned["stages"][1]["tasks"], str)
    assert planned["memory_gb"] > 0
    assert not (tmp_path / "out").exists()
    assert cli("run", recipe_file(tmp_path), "-w", "1", "--keep-work").exit_code == 0
    ran = json.loads((tmp_path / "out" / "_work" / "plan.json").read_text())
    assert ran["stages"][0] == planned["stages"][0]
    offsets = [t["ord_offset"] for t in ran["stages"][1]["tasks"]]  # known once stage 0 wrote its shards
    assert offsets == [0, 5]


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
    assert res.exit_code == 0 and "01_exact_dedup" in res.stdout and "1 row in 1 file" in flat(res.stdout)
    assert cli("inspect", tmp_path / "missing").exit_code == 2


def test_inspect_refuses_an_unfinished_run_whatever_its_data_holds(cli, tmp_path):
    """Killed between the data/ rename and the manifest: data/ is there, the run is not done."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}, {"text": "x"}])
    assert cli("run", recipe_file(tmp_path), "-w", "1", "--keep-work").exit_code == 0
    (tmp_path / "out" / "manifest.json").unlink()
    res = cli("inspect", tmp_path / "out")
    assert res.exit_code == 2 and "unfinished curate run" in res.stderr and "--resume" in res.stderr


def test_help_imports_no_heavy_packages():
    code = ("import atexit, sys; sys.argv=['curate', '--help']\n"
            "atexit.register(lambda: print('HEAVY', [m for m in ('torch', 'ray', 'transformers', 'polars', 'duckdb') "
            "if m in sys.modules]))\nfrom curate.cli import main\nmain()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "HEAVY []" in out


# `curate` with an object whose finalizer writes "finalized" to the file MARKER (made empty at
# the start) when the interpreter frees it, and with THREAD a thread (not a daemon) that writes
# MARKER.thread 0.3 s after the start.
EXIT_PROBE = """
import os, sys, threading, time
from pathlib import Path
marker, thread = sys.argv[1], sys.argv[2] == "thread"
class Finalized:
    def __init__(self):
        self.fd, self.write = os.open(marker, os.O_WRONLY | os.O_CREAT), os.write
    def __del__(self):
        self.write(self.fd, b"finalized")
probe = Finalized()
if thread:
    threading.Thread(target=lambda: (time.sleep(0.3), Path(marker + ".thread").write_text("done"))).start()
sys.argv = ["curate", *sys.argv[3:]]
from curate.cli import main
main()
"""


@pytest.mark.parametrize("thread", [False, True])
def test_the_command_ends_without_the_interpreters_finalization_but_waits_for_its_threads(tmp_path, thread):
    """`curate` exits as soon as a command is done and the atexit hooks ran (the finalization
    after them took 0.5 s of every run reading S3): its output whole, its exit code kept."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    marker = tmp_path / "marker"
    args = [str(marker), "thread" if thread else "-", "run", str(recipe_file(tmp_path)), "-w", "1", "--no-report"]
    res = subprocess.run([sys.executable, "-c", EXIT_PROBE, *args], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "wrote 2 rows" in res.stdout and (tmp_path / "out" / "manifest.json").exists()
    if thread:  # exited as Python does: after the thread
        assert (tmp_path / "marker.thread").read_text() == "done"
    else:
        assert marker.read_text() == "", "the interpreter finalized its objects: its finalization was not skipped"
    bad = subprocess.run([sys.executable, "-c", EXIT_PROBE, str(marker), "-", "run", str(tmp_path / "missing.yaml")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "recipe file not found" in bad.stderr


def test_curate_log_level_shows_a_fits_phases_and_a_bad_level_exits_2(tmp_path):
    """A long run's Global fit says its phases with their times at CURATE_LOG_LEVEL=info; unset,
    the terminal shows only the progress and the funnel."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"the same words here {i % 3} and more"} for i in range(9)])
    recipe = recipe_file(tmp_path, "steps:\n  - containment_dedup: {threshold: 0.8, ngram: 2}\n")
    command = [sys.executable, "-m", "curate.cli", "run", str(recipe), "-w", "1", "--no-report", "--overwrite"]
    shown = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "CURATE_LOG_LEVEL": "info"})
    assert shown.returncode == 0, shown.stderr
    assert "curate_operators.dedup.containment: containment_dedup: signed" in shown.stderr
    quiet = subprocess.run(command, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "CURATE_LOG_LEVEL"})
    assert quiet.returncode == 0 and "containment_dedup: signed" not in quiet.stderr + quiet.stdout
    bad = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "CURATE_LOG_LEVEL": "loud"})
    assert bad.returncode == 2 and "CURATE_LOG_LEVEL='loud' is not a log level" in bad.stderr


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


def test_version(cli):
    import curate

    res = cli("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"curate {curate.__version__}"


def test_shell_completion_is_offered(cli):
    res = cli("--help")
    assert "--install-completion" in res.stdout and "--show-completion" in res.stdout


@pytest.mark.parametrize("value", ["0", "-2"])
def test_workers_must_be_positive(cli, tmp_path, value):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    res = cli("run", recipe_file(tmp_path), "--workers", value)
    assert res.exit_code == 2 and "--workers" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_workers_default_to_one_per_core(cli, tmp_path, monkeypatch):
    import curate.progress

    seen = {}

    def fake_run(recipe, opts, *args):
        seen["workers"] = opts.workers
        raise KeyboardInterrupt  # stop here: only the options matter

    monkeypatch.setattr(curate.progress, "run_with_progress", fake_run)
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    cli("run", recipe_file(tmp_path))
    assert seen["workers"] == 0  # RunOptions: 0 means one worker per core


def test_misspelt_parameter_suggests_the_right_one(cli, tmp_path):
    res = cli("validate", recipe_file(tmp_path, "steps:\n  - gopher_quality: {min_word: 3}\n"), "--no-data")
    assert res.exit_code == 2
    assert "steps[0].gopher_quality.min_word: unknown parameter. Did you mean min_words?" in flat(res.stderr)


def test_yaml_error_names_the_recipe_file(cli, tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("steps:\n  - exact_dedup: {\n")
    res = cli("validate", p)
    assert res.exit_code == 2 and f"{p}, line 3" in flat(res.stderr)


def test_set_on_the_wrong_operator_says_which_is_there(cli, tmp_path):
    res = cli("validate", recipe_file(tmp_path), "--set", "steps[0].gopher_quality.min_words=3", "--no-data")
    assert res.exit_code == 2 and "steps[0] is exact_dedup, not gopher_quality" in flat(res.stderr)


def test_inspect_a_missing_path_says_it_is_missing(cli, tmp_path):
    res = cli("inspect", tmp_path / "missing")
    assert res.exit_code == 2 and f"{tmp_path / 'missing'}: not found" in flat(res.stderr)


def test_inspect_reads_jsonl_and_counts_distinct_values_exactly_on_small_data(cli, tmp_path):
    write_jsonl(tmp_path / "a.jsonl.gz", [{"text": t, "n": i % 3} for i, t in enumerate("abcdefghij" * 7)])
    res = cli("inspect", tmp_path / "a.jsonl.gz")
    assert res.exit_code == 0, res.output
    shown = flat(res.stdout)
    assert "70 rows in 1 file" in shown and "distinct" in shown and "~" not in shown
    rows = {line.split("│")[1].strip(): line for line in res.stdout.splitlines() if line.count("│") > 3}
    assert rows["text"].split("│")[5].strip() == "10" and rows["n"].split("│")[5].strip() == "3"


def test_inspect_labels_estimated_distinct_counts(cli, tmp_path, monkeypatch):
    import curate.describe

    monkeypatch.setattr(curate.describe, "EXACT_DISTINCT_ROWS", 10)
    pq.write_table(pa.table({"text": [str(i) for i in range(50)]}), tmp_path / "t.parquet")
    res = cli("inspect", tmp_path / "t.parquet")
    assert res.exit_code == 0 and "distinct (estimate)" in flat(res.stdout)


def test_inspect_reads_a_hugging_face_save_to_disk_directory(cli, tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"text": ["a", "b", "c"]}).save_to_disk(str(tmp_path / "ds"))
    res = cli("inspect", tmp_path / "ds")
    assert res.exit_code == 0, res.output
    assert "3 rows" in flat(res.stdout)


def test_funnel_says_step_seconds_are_summed_over_workers(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    res = cli("run", recipe_file(tmp_path), "-w", "1")
    assert res.exit_code == 0 and "summed over workers" in flat(res.stdout)


def test_a_run_that_removes_every_row_stops_unless_the_recipe_allows_it(cli, tmp_path, manifest_at):
    # It ended with exit 0 and a warning; an empty output is almost always a mistake.
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    r = recipe_file(tmp_path, "steps:\n  - exact_dedup: {}\n  - sql_filter: {where: 'length(text) > 5'}\n")
    res = cli("run", r, "-w", "1")
    assert res.exit_code == 2, res.output
    assert ("error: steps[1].sql_filter removed the last 2 rows (sql_filter (2)), so the output would be empty. "
            "Check that step's parameters, or set `allow_empty: true`") in flat(res.stderr)
    assert not (tmp_path / "out" / "manifest.json").exists() and (tmp_path / "out" / "_work").is_dir()
    # Allowing it does not change what the run computes: --resume publishes the work already done.
    res = cli("run", r, "-w", "1", "--resume", "--set", "allow_empty=true")
    assert res.exit_code == 0, res.output
    assert "warning: every row was removed: steps[1].sql_filter removed the last 2 rows" in flat(res.stderr)
    assert manifest_at(tmp_path / "out").rows_out == 0
    assert pq.read_table(tmp_path / "out" / "trace" / "02_sql_filter.parquet").num_rows == 2


def test_a_run_directory_inside_the_input_is_not_read_back(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "z"]])
    # Written beside the input (in/*.jsonl does not look into in/run1), then in the way of
    # inputs that search in/: a finished run, and one stopped part-way.
    res = cli("run", recipe_file(tmp_path, "steps: []\n", inp=tmp_path / "in" / "*.jsonl"), "-w", "1",
              "--output", tmp_path / "in" / "run1")
    assert res.exit_code == 0, res.output
    stopped = tmp_path / "in" / "stopped"
    (stopped / "_work" / "stage-0" / "data").mkdir(parents=True)
    (stopped / "_work" / "run.json").write_text(json.dumps({"recipe": "0123", "inputs": [], "limit": None}))
    pq.write_table(pa.table({"text": ["work"]}), stopped / "_work" / "stage-0" / "data" / "t-0.parquet")

    def rows_read(inp: str, out: str) -> list[str]:
        res = cli("run", recipe_file(tmp_path, "steps: []\n", inp=tmp_path / inp), "-w", "1", "-o", tmp_path / out)
        assert res.exit_code == 0, (inp, res.output)
        return sorted(pq.read_table(tmp_path / out / "data").column("text").to_pylist())

    assert rows_read("in", "o1") == rows_read("in/**/*", "o2") == ["x", "y", "z"]  # in/a.jsonl alone
    # A run's data, named, is read: directly or through a glob whose wildcard is not on the way to it.
    assert rows_read("in/run1/data", "o3") == rows_read("in/*/data/*.parquet", "o4") == ["x", "y", "z"]
    res = cli("run", recipe_file(tmp_path, "steps: []\n", inp=tmp_path / "in" / "run1"), "-w", "1")
    assert res.exit_code == 2
    assert f"{tmp_path / 'in' / 'run1'} is a curate run directory; to read its output, name its data: " \
           f"{tmp_path / 'in' / 'run1' / 'data'}" in flat(res.stderr)
    deep = tmp_path / "in" / "*" / "*" / "*" / "*" / "*.parquet"  # only the stopped run's work file is that deep
    res = cli("run", recipe_file(tmp_path, "steps: []\n", inp=deep), "-w", "1")
    assert res.exit_code == 2 and f"left out: the curate run directory {stopped}" in flat(res.stderr)


def test_resume_of_a_finished_run_says_it_is_finished(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    assert cli("run", recipe_file(tmp_path), "-w", "1").exit_code == 0
    res = cli("run", recipe_file(tmp_path), "-w", "1", "--resume")
    assert res.exit_code == 0
    assert f"{tmp_path / 'out'} is already finished; nothing to do" in flat(res.output)
    assert "wrote" not in res.output


def test_resume_of_a_finished_run_of_another_recipe_is_refused(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": t} for t in ["x", "y", "x"]])
    assert cli("run", recipe_file(tmp_path), "-w", "1").exit_code == 0
    res = cli("run", recipe_file(tmp_path), "-w", "1", "--resume", "--set", "steps[0].exact_dedup.lowercase=true")
    assert res.exit_code == 2 and "holds a finished run of another recipe" in flat(res.stderr)


def test_ops_shows_the_range_of_a_parameter(cli):
    res = cli("ops", "gopher_quality")
    assert res.exit_code == 0
    row = next(line for line in res.stdout.splitlines() if "max_dup_line_frac" in line)
    assert ">= 0, <= 1" in row


def test_ops_marks_the_parameters_naming_columns(cli):
    rows = cli("ops", "language_id").stdout.splitlines()
    assert "output column" in next(line for line in rows if "score_column" in line)
    assert "column" not in next(line for line in rows if "max_chars" in line).split("│")[2]
    rows = cli("ops", "exact_dedup").stdout.splitlines()
    assert "input column" in next(line for line in rows if "prefer " in line)
