"""Model steps run in a stage of their own on the model worker pool: the model loads once per
worker and is freed after the stage, a killed worker is replaced and its task redone, a task
whose worker dies twice sends its rows to the trace, and the bytes do not depend on the pool."""

import os
import signal
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import recipe, registry
from curate.engine.local import pool
from curate.engine.tasks import plan
from curate.errors import CurateError
from curate.ops import TEXT, Map, Resources
from curate.engine.run.runner import RunOptions, run
from tests.curate.engine import faultkit
from tests.curate.engine.test_runner import corpus

STEPS = """
steps:
  - sql_filter: {{where: "n % 7 <> 3"}}
  - fake_model: {{log_dir: '{log}'}}
  - sql_filter: {{where: "score > 5"}}
  - exact_dedup: {{}}
"""


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setitem(registry.catalog(), "fake_model", "tests.curate.engine.model_ops:FakeModel")


def load(tmp_path, out, files=3, output=None):
    """The recipe of these tests, writing to tmp_path/out (or `output`), and its model's log directory."""
    log = tmp_path / f"log-{out}"
    log.mkdir()
    inp = corpus(tmp_path / "in", files=files)
    text = f"input: {{path: '{inp}', batch_rows: 50}}\noutput: {{path: '{output or tmp_path / out}'}}\n" + STEPS.format(log=log)
    return recipe.load(text=text), log


def test_a_model_step_gets_a_stage_of_its_own(tmp_path):
    r, _ = load(tmp_path, "o")
    stages = plan.stages(r.steps)
    assert [(s.resource_class, [x.name for x in s.all_steps]) for s in stages] == [
        ("cpu", ["sql_filter"]), ("model", ["fake_model"]), ("cpu", ["sql_filter"]), ("cpu", ["exact_dedup"])]


def test_the_model_loads_once_per_worker_and_is_freed_after_its_stage(tmp_path):
    r, log = load(tmp_path, "o", files=4)
    manifest = run(r, RunOptions(workers=2, model_workers=2))
    setups = sorted(p.name.split("-")[1] for p in log.glob("setup-*"))
    teardowns = sorted(p.name.split("-")[1] for p in log.glob("teardown-*"))
    assert len(setups) == 2 and setups == teardowns  # 4 tasks, 2 workers: two loads, both freed
    assert str(os.getpid()) not in setups  # never in the main process
    assert manifest.rows_out == pq.read_table(tmp_path / "o" / "data").num_rows > 0


def test_bytes_do_not_depend_on_the_number_of_workers(tmp_path):
    runs = {}
    for name, workers, model_workers in (("a", 1, 1), ("b", 2, 2), ("c", 2, 3)):
        r, _ = load(tmp_path, name) if name == "a" else load_again(tmp_path, name)
        run(r, RunOptions(workers=workers, model_workers=model_workers))
        runs[name] = faultkit.digest(tmp_path / name)
    assert runs["a"] == runs["b"] == runs["c"] and runs["a"]


def load_again(tmp_path, out):
    log = tmp_path / f"log-{out}"
    log.mkdir()
    text = (f"input: {{path: '{tmp_path / 'in' / '*.jsonl.gz'}', batch_rows: 50}}\noutput: {{path: '{tmp_path / out}'}}\n"
            + STEPS.format(log=log))
    return recipe.load(text=text), log


def kill_stopped_workers(times: int, done: threading.Event) -> threading.Thread:
    """A thread that SIGKILLs model workers which stopped at their failpoint, `times` times."""

    def watch():
        killed = 0
        while killed < times and not done.is_set():
            for pid in faultkit.descendants(os.getpid()):
                if faultkit._state(pid) == "T":
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            done.wait(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_killed_model_worker_is_replaced_and_the_output_is_identical(tmp_path, monkeypatch):
    r, _ = load(tmp_path, "ref")
    run(r, RunOptions(workers=1))
    r, _ = load_again(tmp_path, "killed")
    monkeypatch.setenv("CURATE_FAILPOINT", "model-batch@2")
    monkeypatch.setenv("CURATE_FAILPOINT_ONCE", str(tmp_path / "fired"))
    done = threading.Event()
    watcher = kill_stopped_workers(1, done)
    try:
        run(r, RunOptions(workers=1))
    finally:
        done.set()
        watcher.join()
    assert (tmp_path / "fired").exists()  # the worker was stopped, and killed
    assert faultkit.digest(tmp_path / "killed") == faultkit.digest(tmp_path / "ref")


def test_a_task_whose_worker_dies_twice_sends_its_rows_to_the_trace(tmp_path, monkeypatch):
    r, _ = load(tmp_path, "o", files=1)
    r = r.model_copy(update={"allow_empty": True})  # every row ends in the trace: the output is empty
    monkeypatch.setenv("CURATE_FAILPOINT", "model-batch")  # every new worker stops at its first batch
    done = threading.Event()
    watcher = kill_stopped_workers(2, done)
    try:
        manifest = run(r, RunOptions(workers=1))
    finally:
        done.set()
        watcher.join()
    model = next(s for s in manifest.steps if s.op == "fake_model")
    assert model.rows_in == model.removed > 0 and model.reasons == {"worker_failed": model.removed}
    trace = pq.read_table(tmp_path / "o" / "trace" / f"{model.step}.parquet")
    assert trace.num_rows == model.removed
    assert "the model worker died twice" in trace.column("detail")[0].as_py()
    assert manifest.rows_out == 0


@pytest.mark.parametrize("devices, cores, threads", [
    (["0"], 16, 16),  # a GPU worker tokenizes on every core while the GPU waits
    (["0", "1"], 16, 8),
    ([str(i) for i in range(32)], 16, 1),
    ([None, None], 16, 8),  # two CPU model workers
    ([None], 2, 2),
])
def test_model_workers_share_the_cores_with_or_without_gpus(monkeypatch, devices, cores, threads):
    from curate.engine.local import pool

    monkeypatch.setattr(pool, "available_cores", lambda: cores)
    assert pool.cores_per_worker(devices) == threads


class DeviceProbe(Map):
    """Writes the CUDA_VISIBLE_DEVICES its model worker was pinned to (no CUDA is touched)."""

    name = "device_probe"
    resources = Resources(pool="model", gpus=2)
    requires = (TEXT,)
    provides = ("devices",)

    def process(self, batch):
        devices = pa.array([os.environ.get("CUDA_VISIBLE_DEVICES", "")] * batch.num_rows)
        return batch.append_column("devices", devices)


def test_gpu_workers_hold_the_gpus_their_step_declares():
    four = ["0", "1", "2", "3"]
    assert pool.gpu_workers(four, 0) == four  # undeclared: one worker a GPU
    assert pool.gpu_workers(four, 2) == ["0,1", "2,3"]
    assert pool.gpu_workers(four[:3], 1.5) == ["0,1"]  # a third GPU is not enough for a worker
    assert pool.gpu_workers(["0"], 0.5) == ["0", "0"]  # two workers share it
    with pytest.raises(CurateError, match="declares 4 GPUs a worker; this machine shows 3"):
        pool.gpu_workers(four[:3], 4)


def test_a_model_step_declaring_two_gpus_runs_on_workers_pinned_to_two(tmp_path, monkeypatch):
    """The plan reads Resources.gpus into the stage's Policy and the model pool pins each worker
    to that many devices (CUDA_VISIBLE_DEVICES lists four that the probe never opens)."""
    monkeypatch.setitem(registry.catalog(), "device_probe", f"{__name__}:DeviceProbe")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    inp = corpus(tmp_path / "in", files=4)
    r = recipe.load(text=f"input: {{path: '{inp}'}}\noutput: {{path: '{tmp_path / 'o'}'}}\nsteps:\n  - device_probe: {{}}\n")
    assert plan.policy(plan.stages(r.steps)[0], workers=2, cores=2).gpus == 2
    run(r, RunOptions(workers=2))
    seen = set(pq.read_table(tmp_path / "o" / "data").column("devices").to_pylist())
    assert seen and seen <= {"0,1", "2,3"}
