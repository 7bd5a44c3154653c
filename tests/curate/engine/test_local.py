"""The local executor's worker pool: the CLI starts it ahead of the run, before the input is
listed, and its workers hold the run's worker lock only once they have work (a --resume waits
for the workers of the run it continues, not for a pool that has done nothing). A stage that
runs in the run's own process frees what its operators loaded when it ends."""

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from curate import recipe
from curate.engine.local import engine as local
from curate.engine.tasks.context import READ_STEP
from curate.engine.rundir.layout import RunLayout
from curate.engine.local.engine import LocalExecutor
from curate.engine.rundir.run_dir import wait_for_workers
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError, InputError
from tests.conftest import write_jsonl, write_recipe


ONE_STEP = "steps:\n  - normalize_text: {}\n"  # a stage with no operator runs on threads: no worker to start


def _pid(_) -> int:
    return os.getpid()


def test_workers_started_ahead_are_the_runs_and_hold_its_lock_from_their_first_task(tmp_path):
    local.start_workers_ahead(2, 2)
    ahead = local._ahead[1]
    # The run directory is opened after the workers start (a fresh run empties _work)
    layout = RunLayout.at(str(tmp_path / "out"))
    Path(layout.work).mkdir(parents=True)
    executor = LocalExecutor(2, lambda *counts: None, layout)
    try:
        assert executor.pool is ahead and local._ahead is None
        wait_for_workers(layout, timeout=0.2)  # alive, with no work yet: nothing to wait for
        pids = set(executor.map(_pid, range(8)))
        assert pids and os.getpid() not in pids
        with pytest.raises(CurateError, match="still alive"):
            wait_for_workers(layout, timeout=0.2)
    finally:
        executor.close()
    wait_for_workers(layout, timeout=10)


def test_an_executor_of_another_size_stops_the_workers_started_ahead(tmp_path):
    local.start_workers_ahead(3, 1)
    ahead = local._ahead[1]
    executor = LocalExecutor(2, lambda *counts: None, RunLayout.at(str(tmp_path / "out")))
    try:
        assert executor.pool is not ahead and local._ahead is None
        assert len(set(executor.map(_pid, range(4)))) >= 1
    finally:
        executor.close()
    assert multiprocessing.active_children() == []


def test_a_run_its_checks_refuse_leaves_no_worker_started_ahead(cli, tmp_path):
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path}/none/*.jsonl'}}\n{ONE_STEP}")
    res = cli("run", recipe, "-o", tmp_path / "out", "-w", "2")
    assert res.exit_code == 2 and "no input files match" in res.stderr
    assert local._ahead is None
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("files, steps, started", [(1, ONE_STEP, []), (3, ONE_STEP, [(2, 2)]),
                                                   (3, "steps: []\n", [])])  # no operator: threads
def test_the_cli_starts_as_many_workers_ahead_as_a_local_input_has_files(cli, tmp_path, monkeypatch, files, steps,
                                                                         started):
    calls = []
    monkeypatch.setattr(local, "start_workers_ahead", lambda processes, start: calls.append((processes, start)))
    for i in range(files):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{i}.jsonl").write_text('{"text": "a"}\n')
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path}/in'}}\n{steps}")
    res = cli("run", recipe, "-o", tmp_path / "out", "-w", "2", "--no-report")
    assert res.exit_code == 0, res.output
    assert calls == started


def _corpus(root: Path, files: int, rows: int) -> str:
    for f in range(files):
        write_jsonl(root / f"part-{f}.jsonl", [{"text": f"doc {f} {i}", "n": i} for i in range(rows)])
    return str(root / "*.jsonl")


def _stepless(inp: str, out: Path, **input_fields) -> recipe.Recipe:
    fields = "".join(f", {k}: {v}" for k, v in input_fields.items())
    return recipe.load(text=f"input: {{path: '{inp}', batch_rows: 50{fields}}}\noutput: {{path: '{out}'}}\nsteps: []\n")


def test_a_stage_with_no_operator_runs_its_tasks_on_threads_of_the_run_process(tmp_path, monkeypatch):
    inp = _corpus(tmp_path / "in", files=4, rows=300)
    ran = []

    def recorded(ctx, task, progress):
        ran.append((os.getpid(), threading.current_thread().name))
        return real(ctx, task, progress)

    real = local.run_task
    monkeypatch.setattr(local, "run_task", recorded)
    run(_stepless(inp, tmp_path / "threads"), RunOptions(workers=2))
    assert len(ran) == 4 and {pid for pid, _ in ran} == {os.getpid()}
    assert len({name for _, name in ran}) == 2 and all(name.startswith("curate-task") for _, name in ran)
    assert multiprocessing.active_children() == []  # no worker process was started
    run(_stepless(inp, tmp_path / "inline"), RunOptions(workers=1))
    threads, inline = (sorted((tmp_path / side / "data").glob("*.parquet")) for side in ("threads", "inline"))
    assert [p.name for p in threads] == [p.name for p in inline] and threads
    assert [p.read_bytes() for p in threads] == [p.read_bytes() for p in inline]


def test_a_failed_task_on_threads_stops_the_others_at_their_next_batch(tmp_path, monkeypatch):
    """A thread cannot be killed: when a task fails, the stage's running tasks stop at their next
    batch (what they wrote aborted) and the run waits for them before it unwinds."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"long {i}"} for i in range(2000)])  # 40 batches
    # the bad line lies past what the checks peek at: the task finds it
    (tmp_path / "in" / "b.jsonl").write_text('{"text": "' + "x" * 100_000 + '"}\n{"text": \n')
    failed, stage_ended, rows_of_a = threading.Event(), threading.Event(), []

    def held(ctx, task, progress):
        if task.sources[0].path.endswith("b.jsonl"):
            try:
                return real(ctx, task, progress)
            finally:
                failed.set()

        def after_b_failed(label, rows_in, rows_out):
            # a goes on once the run has taken b's error and ended the stage: waiting for b's error
            # alone, a could read its 40 small batches before the run did (CI, a loaded machine)
            assert failed.wait(30) and stage_ended.wait(30)
            progress(label, rows_in, rows_out)
            if label == READ_STEP:
                rows_of_a.append(rows_in)
        return real(ctx, task, after_b_failed)

    def cancel(self, handles):
        stage_ended.set()
        return real_cancel(self, handles)

    real, real_cancel = local.run_task, local._ThreadSlots.cancel
    monkeypatch.setattr(local, "run_task", held)
    monkeypatch.setattr(local._ThreadSlots, "cancel", cancel)
    with pytest.raises(InputError, match="b.jsonl, line 2"):
        run(_stepless(str(tmp_path / "in" / "*.jsonl"), tmp_path / "out", on_bad_row="fail"), RunOptions(workers=2))
    assert sum(rows_of_a) < 2000  # a stopped part-way (without the stop it reads all its rows)
    assert not [t for t in threading.enumerate() if t.name.startswith("curate-task")]
    assert not (tmp_path / "out").exists()  # nothing written after the failed run was cleared away


def test_a_stage_run_in_the_run_process_frees_what_its_operators_loaded_when_it_ends(tmp_path, monkeypatch):
    from curate import registry

    monkeypatch.setitem(registry.catalog(), "fake_cpu_model", "tests.curate.engine.model_ops:FakeCpuModel")
    log = tmp_path / "log"
    log.mkdir()
    docs = write_jsonl(tmp_path / "in.jsonl", [{"text": f"document {i}"} for i in range(20)])
    r = recipe.load(text=f"input: {{path: '{docs}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                         f"steps:\n  - fake_cpu_model: {{log_dir: '{log}'}}\n  - exact_dedup: {{}}\n")
    run(r, RunOptions(workers=1))
    me = str(os.getpid())
    assert sorted(p.name for p in log.iterdir()) == [f"setup-{me}", f"teardown-{me}"]  # loaded here, freed here
