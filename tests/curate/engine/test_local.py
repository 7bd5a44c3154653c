"""The local executor's worker pool: the CLI starts it ahead of the run, before the input is
listed, and its workers hold the run's worker lock only once they have work (a --resume waits
for the workers of the run it continues, not for a pool that has done nothing)."""

import multiprocessing
import os
from pathlib import Path

import pytest

from curate.engine import local
from curate.engine.layout import RunLayout
from curate.engine.local import LocalExecutor
from curate.engine.run_dir import wait_for_workers
from curate.errors import CurateError
from tests.conftest import write_recipe


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
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path}/none/*.jsonl'}}\nsteps: []\n")
    res = cli("run", recipe, "-o", tmp_path / "out", "-w", "2")
    assert res.exit_code == 2 and "no input files match" in res.stderr
    assert local._ahead is None
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("files, started", [(1, []), (3, [(2, 2)])])
def test_the_cli_starts_as_many_workers_ahead_as_a_local_input_has_files(cli, tmp_path, monkeypatch, files, started):
    calls = []
    monkeypatch.setattr(local, "start_workers_ahead", lambda processes, start: calls.append((processes, start)))
    for i in range(files):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{i}.jsonl").write_text('{"text": "a"}\n')
    recipe = write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path}/in'}}\nsteps: []\n")
    res = cli("run", recipe, "-o", tmp_path / "out", "-w", "2", "--no-report")
    assert res.exit_code == 0, res.output
    assert calls == started
