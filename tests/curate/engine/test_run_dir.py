"""The run directory: --overwrite deletes only curate's own output, publishing can be redone from
any point, a full disk and a failed start are reported with what to do, a lock keeps runs apart."""

import errno
import json
import shutil

import pytest

from curate import recipe as recipe_module
from curate.engine.work import worker
from curate.engine.run.runner import RunOptions, run
from curate.engine.rundir.layout import RunLayout
from curate.engine.rundir.run_dir import RunLock, RunLocked
from curate.errors import CurateError, NoSpace
from curate.io.writer import ShardWriter
from tests.conftest import write_jsonl, write_recipe
from tests.curate.engine.faultkit import digest
from tests.curate.engine.test_runner import corpus, load


def test_overwrite_refuses_a_directory_curate_did_not_write(cli, tmp_path):
    inp = corpus(tmp_path / "in", files=1)
    mine = tmp_path / "x"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    res = cli("run", write_recipe(tmp_path / "r.yaml", f"input: {{path: '{inp}'}}\nsteps: []\n"),
              "-o", mine, "--overwrite", "-w", "1")
    assert res.exit_code == 2
    assert "not a curate run directory" in res.stderr
    assert (mine / "notes.txt").read_text() == "keep" and sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_overwrite_replaces_curates_output_and_nothing_else(tmp_path):
    inp = corpus(tmp_path / "in", files=2)
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=1))
    (out / "README.txt").write_text("the user's own note")
    (out / "data" / "stale.parquet").write_bytes(b"old")
    run(load(inp, out), RunOptions(workers=1, overwrite=True))
    assert (out / "README.txt").read_text() == "the user's own note"
    assert not (out / "data" / "stale.parquet").exists()


@pytest.mark.parametrize("left_behind", [
    ["manifest.json", "trace"],             # killed after data/ was renamed into place
    ["manifest.json"],                      # killed after the traces, before the manifest
    ["manifest.json", "trace", "data"],     # killed while staging data.tmp
])
def test_publishing_is_redone_by_resume_from_any_point(tmp_path, left_behind, manifest_at):
    inp = corpus(tmp_path / "in", files=3)
    reference = tmp_path / "ref"
    run(load(inp, reference), RunOptions(workers=1))
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=2, keep_work=True))
    for name in left_behind:
        shutil.rmtree(out / name) if (out / name).is_dir() else (out / name).unlink()
    if "data" in left_behind:
        (out / "data.tmp").mkdir()
        (out / "data.tmp" / "part-00000.parquet").write_bytes(b"half")
    manifest = run(load(inp, out), RunOptions(workers=2, resume=True))
    assert digest(out) == digest(reference)
    assert manifest.rows_out == manifest_at(reference).rows_out
    assert not (out / "data.tmp").exists() and not (out / "_work").exists()


def test_resume_of_a_finished_run_says_it_is_finished(tmp_path):
    inp = corpus(tmp_path / "in", files=1)
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=1))
    said = []
    from curate.engine.run.runner import Reporter

    manifest = run(load(inp, out), RunOptions(workers=1, resume=True), Reporter(status=said.append))
    assert manifest.already_finished and said == [f"{out} is already finished; nothing to do"]


def test_a_tampered_task_marker_fails_the_conservation_check(tmp_path):
    """Resume trusts each task's marker; if one disagrees with the rest, the run must not publish."""
    inp = corpus(tmp_path / "in", files=2)
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=1, keep_work=True))
    (out / "manifest.json").unlink()
    marker = sorted((out / "_work" / "stage-0" / "done").glob("*.json"))[0]
    result = json.loads(marker.read_text())
    result["stats"]["01_sql_filter"]["rows_out"] += 1  # within the step: in != out + removed
    marker.write_text(json.dumps(result))
    with pytest.raises(RuntimeError, match="conservation violated at 01_sql_filter"):
        run(load(inp, out), RunOptions(workers=1, resume=True))
    result["stats"]["01_sql_filter"]["rows_out"] -= 1
    for key in ("rows_in", "rows_out"):  # the read step gives one row the filter never saw
        result["stats"]["00_read"][key] += 1
    marker.write_text(json.dumps(result))
    with pytest.raises(RuntimeError, match="conservation violated before 01_sql_filter"):
        run(load(inp, out), RunOptions(workers=1, resume=True))
    assert not (out / "manifest.json").exists()


def test_disk_full_names_the_place_and_says_resume_continues(cli, tmp_path, monkeypatch):
    inp = corpus(tmp_path / "in", files=2)

    def full(self, batch):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ShardWriter, "write", full)
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{inp}'}}\noutput: {{path: '{tmp_path / 'o'}'}}\n"
                                                f"steps: []\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 2
    message = res.stderr.replace("\n", "")
    assert f"no space left on the device of {tmp_path / 'o'}" in message
    assert "free" in message and "continue with --resume" in message and "internal error" not in message


def test_disk_full_in_a_worker_process_comes_back_as_a_user_error(tmp_path, monkeypatch):
    def full(ctx, task, progress=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(worker, "run_task", full)
    with pytest.raises(NoSpace):
        worker.run_task_in_worker(None, None)


def test_a_run_that_fails_before_producing_anything_leaves_nothing(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"body": "no text column", "n": 1}])
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path / 'in' / 'a.jsonl'}'}}\n"
                                               f"output: {{path: '{tmp_path / 'o'}'}}\nsteps:\n  - exact_dedup: {{}}\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 2 and "needs column 'text'" in res.stderr
    assert not (tmp_path / "o").exists()
    write_jsonl(tmp_path / "in" / "fixed.jsonl", [{"text": "now with text", "n": 1}])
    res = cli("run", recipe, "-w", "1", "--input", tmp_path / "in" / "fixed.jsonl")  # a plain run just works
    assert res.exit_code == 0, res.output


def test_a_run_that_fails_part_way_keeps_its_work_and_says_what_to_do(cli, tmp_path):
    # an id the preflight cannot see (it reads the first batch's ids): the second file's task fails
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": "a", "text": "fine", "n": 1}])
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"id": None, "text": "no id", "n": 2}])
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}', id_column: id}}\n"
                                               f"output: {{path: '{tmp_path / 'o'}'}}\nsteps:\n  - exact_dedup: {{}}\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 2 and "id column 'id' is null" in res.stderr
    assert "start over with --overwrite" in res.stderr and "continue with --resume" in res.stderr
    assert (tmp_path / "o" / "_work" / "run.json").is_file()


def test_the_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    first = RunLock(RunLayout.at(tmp_path))
    first.acquire()
    with pytest.raises(RunLocked, match=r"pid \d+ on "):
        RunLock(RunLayout.at(tmp_path)).acquire()
    first.release()
    second = RunLock(RunLayout.at(tmp_path))
    second.acquire()  # released locks (and dead holders) block nobody
    second.release()


def test_failed_recipe_is_a_curate_error_not_a_lock_problem(tmp_path):
    with pytest.raises(CurateError, match="no input files match"):
        run(load(str(tmp_path / "nothing" / "*.jsonl"), tmp_path / "o"), RunOptions(workers=1))
    assert not (tmp_path / "o").exists()


def test_a_run_killed_while_removing_its_work_is_finished_and_resume_keeps_it(tmp_path):
    """The manifest is the commit point: what is left of _work after it is never re-run."""
    inp = corpus(tmp_path / "in", files=2)
    out = tmp_path / "o"
    run(load(inp, out), RunOptions(workers=1, keep_work=True))
    before = digest(out)
    (out / "_work" / "run.json").unlink()  # rmtree got this far
    shutil.rmtree(out / "_work" / "stage-1" / "data")
    manifest = run(load(inp, out), RunOptions(workers=1, resume=True))
    assert manifest.already_finished and digest(out) == before


def test_a_file_of_the_users_called_manifest_json_does_not_make_a_run_directory(cli, tmp_path):
    """--overwrite knows curate's runs by curate's own marks, not by a file name."""
    inp = corpus(tmp_path / "in", files=1)
    mine = tmp_path / "x"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"files": ["a.csv"]}')
    res = cli("run", write_recipe(tmp_path / "r.yaml", f"input: {{path: '{inp}'}}\nsteps: []\n"),
              "-o", mine, "--overwrite", "-w", "1")
    assert res.exit_code == 2 and "not a curate run directory" in res.stderr
    assert "--overwrite" not in res.stderr.split("(it holds")[1]  # it would refuse again: not suggested
    assert (mine / "manifest.json").read_text() == '{"files": ["a.csv"]}'
    run(load(inp, tmp_path / "o"), RunOptions(workers=1))
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["format_version"] == "curate-run/1"
    run(load(inp, tmp_path / "o"), RunOptions(workers=1, overwrite=True))  # its own run: replaced


@pytest.mark.parametrize("policy", ["warn", "fail"])
def test_ids_repeated_with_different_content_are_counted_or_refused(tmp_path, policy):
    rows = [{"id": i % 5, "text": f"document {i}"} for i in range(8)]  # ids 0, 1, 2 twice, differently
    rows += [{"id": 4, "text": "document 4"}]  # the same row again: a duplicate, not a conflict
    write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    r = recipe_module.load(text=f"input: {{path: '{tmp_path / 'in' / 'a.jsonl'}', id_column: id, "
                                f"on_duplicate_id: {policy}}}\noutput: {{path: '{tmp_path / 'o'}'}}\nsteps: []\n")
    if policy == "fail":
        with pytest.raises(CurateError, match="3 values of input.id_column 'id' repeat with different content"):
            run(r, RunOptions(workers=2))
        return
    manifest = run(r, RunOptions(workers=2))
    assert (manifest.duplicate_ids.ids, manifest.duplicate_ids.rows) == (3, 6)


def test_a_failed_start_on_a_store_leaves_no_work_files_of_ray_nodes_there(tmp_path, monkeypatch):
    """The Ray nodes' copy of the work files under the output's prefix goes with its mark."""
    import uuid

    from curate.engine.rundir.run_dir import discard_failed_start

    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    layout = RunLayout.at(f"memory://failed-{uuid.uuid4().hex}/out")
    layout.files.write_bytes(layout.marker, b"{}")
    layout.files.write_bytes(f"{layout.work_files}/run.json", b"{}")
    discard_failed_start(layout, created_out=False)
    assert not layout.files.exists(layout.marker) and not layout.files.exists(layout.work_files)
