"""An async (io) stage's tasks in the run process overlap on its event loop
(curate/engine/local/engine.py: LocalExecutor._overlapped): the next task reads and sends while
the one before finishes, with the same output, counts and trace as one task after another, and the
garbage collector's thresholds put back once they are all done."""

from __future__ import annotations

import asyncio
import gc
import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from curate import recipe, registry
from curate.engine.local import engine
from curate.engine.run.runner import RunOptions, run
from curate.ops import Map, Resources, Result, Verdict
from tests.conftest import write_jsonl

EVENTS: list[tuple[str, str]] = []  # ("in" or "out", the input file of the batch), as batches pass


class Waiting(Map):
    """Keeps rows whose n is odd (the others traced), a batch at a time after a wait, as an LLM step does."""

    name = "test_waiting"
    resources = Resources(pool="io")

    async def process(self, batch: pa.RecordBatch):
        where = batch.column("text")[0].as_py().split("-")[0]
        EVENTS.append(("in", where))
        await asyncio.sleep(0.02)
        EVENTS.append(("out", where))
        keep = np.array([n % 2 == 1 for n in batch.column("n").to_pylist()], dtype=bool)
        return Result(batch, Verdict(keep, "even", None))


@pytest.fixture(autouse=True)
def waiting(monkeypatch):
    monkeypatch.setitem(registry.catalog(), "test_waiting", "tests.curate.engine.test_io_overlap:Waiting")
    EVENTS.clear()


def _run(root: Path, files: int = 3):
    for f in range(files):
        write_jsonl(root / f"in-{f}.jsonl", [{"text": f"f{f}-{i}", "n": i} for i in range(8)])
    r = recipe.load(
        text=f"input: {{path: '{root}/in-*.jsonl', batch_rows: 2}}\noutput: {{path: '{root}/out'}}\n"
        f"steps:\n  - test_waiting: {{}}\n"
    )
    return run(r, RunOptions(workers=1))


def _files(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*.parquet"))
    }


def test_the_next_task_starts_before_the_one_before_ends(tmp_path):
    _run(tmp_path)
    last_out_of_first = max(j for j, (kind, where) in enumerate(EVENTS) if kind == "out" and where == "f0")
    first_in_of_second = EVENTS.index(("in", "f1"))
    assert first_in_of_second < last_out_of_first, EVENTS


def test_overlapped_tasks_write_what_tasks_one_after_another_write(tmp_path, monkeypatch):
    overlapped = _run(tmp_path / "a")
    monkeypatch.setattr(engine, "TASKS_OVERLAPPED", 1)
    EVENTS.clear()
    alone = _run(tmp_path / "b")
    assert EVENTS.index(("in", "f1")) > max(j for j, e in enumerate(EVENTS) if e == ("out", "f0"))  # one at a time
    assert _files(tmp_path / "a" / "out") == _files(tmp_path / "b" / "out")

    def counts(m) -> list[dict]:
        return [step.model_dump(exclude_unset=True, exclude={"seconds"}) for step in m.steps]

    assert counts(overlapped) == counts(alone) and overlapped.rows_out == 12


@pytest.mark.parametrize("files", [2, 3, 4])
def test_the_collector_thresholds_are_put_back_after_overlapped_tasks(tmp_path, files):
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's own, whatever an earlier run left
    try:
        _run(tmp_path, files)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
