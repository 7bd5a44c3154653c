"""The runner folds each task's result into the run's sums as it comes, in task order
(execution._Folded): it keeps no TaskResult per finished task, and an engine that hands results
back in another order gets the same manifest, data and trace."""

import gc
import hashlib
import json
import weakref
from pathlib import Path

import pytest

from curate.engine.local import engine as local
from curate.engine.local.engine import LocalEngine
from curate.engine.run.runner import RunOptions, run
from curate.engine.tasks.task import run_task
from curate.engine.work import engines
from curate.engine.work.executor import Executor
from tests.conftest import write_jsonl
from tests.curate.engine.test_runner import corpus, load


def test_the_driver_keeps_no_result_of_a_finished_task(tmp_path, monkeypatch):
    """One worker runs the tasks in the run process, one after another: before each task starts,
    none of the earlier tasks' results is alive (before, a stage kept every one until it ended).
    The results are tracked by weak reference; a full collection (seconds in a test process that
    has loaded torch) runs only when one is still referenced, to free it if it is cyclic garbage."""
    live = []
    made: list[weakref.ref] = []

    def alive() -> int:
        return sum(ref() is not None for ref in made)

    def counted(*args, **kwargs):
        if alive():
            gc.collect()
        live.append(alive())
        result = run_task(*args, **kwargs)
        made.append(weakref.ref(result))
        return result

    monkeypatch.setattr(local, "run_task", counted)
    inp = corpus(tmp_path / "in", files=12, rows=20)
    m = run(load(inp, tmp_path / "out"), RunOptions(workers=1))
    assert m.rows_in == 240
    assert len(live) == 2 * 12  # stage 0's tasks, then exact_dedup's stage: a task per shard of stage 0
    assert max(live) == 0, live


class _Reversed(Executor):
    """Runs a stage's tasks in the run process and hands their results back last task first."""

    workers = [None]

    def run(self, ctx, tasks, take):
        for i in reversed(range(len(tasks))):
            take(i, run_task(ctx, tasks[i]))

    def map(self, fn, *iterables, files_in=None):
        return [fn(*args) for args in zip(*iterables)]

    def close(self, kill=False):
        pass


class ReversedEngine(LocalEngine):
    def cpu_executor(self, workers):
        return _Reversed()


class _Losing(_Reversed):
    """Runs a stage's tasks but hands back none for its first."""

    def run(self, ctx, tasks, take):
        super().run(ctx, tasks, lambda i, result: i and take(i, result))


class LosingEngine(LocalEngine):
    def cpu_executor(self, workers):
        return _Losing()


STEPS = """
steps:
  - gopher_quality: {min_words: 3}
  - exact_dedup: {}
"""


def _steps(manifest) -> str:
    """The manifest's steps but their timings, as text: the order of each one's reasons counts."""
    untimed = [s.model_dump(exclude_unset=True, exclude={"seconds", "fit_seconds"}) for s in manifest.steps]
    return json.dumps(untimed)


def _digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted([*(out / "data").glob("*.parquet"), *(out / "trace").glob("*.parquet")])}


def test_results_handed_back_in_another_order_are_folded_in_task_order(tmp_path, monkeypatch):
    """The first file's rows fail gopher's word count, the last one's have no text: folded in
    the order they came back (the last task first), the manifest would name no_text first."""
    monkeypatch.setitem(engines.ENGINES, "reversed",
                        engines.Registered(f"{__name__}:ReversedEngine", "the local engine, results last first"))
    inp = tmp_path / "in"
    write_jsonl(inp / "part-0.jsonl", [{"text": f"doc {i}"} for i in range(10)])
    write_jsonl(inp / "part-1.jsonl", [{"text": f"the cat and the dog with a hat, number {i}"} for i in range(10)])
    write_jsonl(inp / "part-2.jsonl", [{"text": " " * (i % 2)} for i in range(10)])
    pattern = str(inp / "*.jsonl")
    forward = run(load(pattern, tmp_path / "local", STEPS), RunOptions(workers=1))
    backward = run(load(pattern, tmp_path / "reversed", STEPS), RunOptions(workers=1, engine="reversed"))
    reasons = next(s.reasons for s in forward.steps if s.step == "01_gopher_quality")
    assert list(reasons) == ["gopher_word_count", "no_text"]
    assert _steps(backward) == _steps(forward)
    assert _digests(tmp_path / "reversed") == _digests(tmp_path / "local")


def test_a_task_an_engine_never_hands_back_stops_the_run(tmp_path, monkeypatch):
    monkeypatch.setitem(engines.ENGINES, "losing",
                        engines.Registered(f"{__name__}:LosingEngine", "the local engine, losing a task"))
    inp = corpus(tmp_path / "in", files=3, rows=20)
    with pytest.raises(AssertionError, match="stage 0: task part-00000 never handed back"):
        run(load(inp, tmp_path / "out"), RunOptions(workers=1, engine="losing"))
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_the_driver_keeps_no_fingerprint_of_the_input_files_while_it_runs(tmp_path, monkeypatch):
    """The fingerprints a --resume is checked against (an entry per input file) are made for that
    check and written to the run directory, not held by the driver while the run's stages run."""
    from curate.engine.run import execution
    from curate.io.sources import Source

    class Print(list):  # a list that can be tracked by weak reference
        pass

    made: list[weakref.ref] = []
    fingerprint = Source.fingerprint

    def tracked(self):
        made.append(weakref.ref(printed := Print(fingerprint(self))))
        return printed

    alive_while_running = []
    execute = execution.Execution.execute

    def executing(self):
        gc.collect()
        alive_while_running.append(sum(ref() is not None for ref in made))
        return execute(self)

    monkeypatch.setattr(Source, "fingerprint", tracked)
    monkeypatch.setattr(execution.Execution, "execute", executing)
    inp = corpus(tmp_path / "in", files=5, rows=4)
    m = run(load(inp, tmp_path / "out"), RunOptions(workers=1))
    assert m.rows_in == 20 and len(made) >= 5
    assert alive_while_running == [0]
