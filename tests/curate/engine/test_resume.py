"""Runs killed at each phase (the whole process group, or the main process alone) and resumed
give the uninterrupted run's bytes; no process outlives its run; interrupts exit cleanly."""

import itertools
import os
import signal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import write_jsonl
from tests.curate.engine import faultkit

RECIPE = """
input: {{path: '{inp}', batch_rows: 500}}
output: {{path: '{out}', shard_mb: 1}}
steps:
  - sql_filter: {{where: "n % 5 <> 1"}}
  - exact_dedup: {{}}
  - sql_filter: {{where: "n % 7 <> 2"}}
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Input files and the bytes an uninterrupted run makes of them."""
    root = tmp_path_factory.mktemp("resume")
    write_input(root / "in")
    ref = recipe(root, "ref")
    assert faultkit.start(ref).wait() == 0
    return root, faultkit.digest(root / "ref")


def write_input(directory):
    """4 files of 1,500 rows, with exact duplicates across them."""
    for f in range(4):
        write_jsonl(directory / f"p{f}.jsonl.gz",
                    [{"text": f"document number {(f * 1500 + i) % 4000} " * 20, "n": f * 1500 + i} for i in range(1500)])


def recipe(root, name, text=RECIPE):
    path = root / f"{name}.yaml"
    path.write_text(text.format(inp=root / "in" / "*.jsonl.gz", out=root / name))
    return path


def stop_at(path, point, *args):
    proc = faultkit.start(path, *args, failpoint=point)
    assert faultkit.wait_for_failpoint(proc), f"the run never reached {point}: {proc.stderr.read().decode()}"
    return proc


# Every phase boundary of a run: a task done, a stage done, inside a Global fit, its state
# written, apply (a task of the Global's stage), the output staged, and between the data/
# rename and the manifest.
PHASES = ["task-done", "stage-done", "fit", "state-written", "task-done@6", "staged", "published-data"]


_kills = itertools.count()


# Every phase x target would be 14 runs: here a sample, drawn anew each time, beside the
# boundaries (the first and last phase, inside a fit, the output staged). bench/sections/faults.py
# kills runs at every failpoint and at random points, many times.
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(point=st.sampled_from(PHASES), whole_group=st.booleans())
@example(point="task-done", whole_group=True)
@example(point="published-data", whole_group=False)
@example(point="fit", whole_group=False)
@example(point="staged", whole_group=True)
def test_kill_at_each_phase_then_resume_is_identical(corpus, point, whole_group):
    root, reference = corpus
    path = recipe(root, f"killed-{point}-{whole_group}-{next(_kills)}".replace("@", "-"))
    below = faultkit.kill(stop_at(path, point), whole_group)
    assert below, "the run had started no worker"
    assert faultkit.alive(below) == []  # workers die with their parent
    resumed = faultkit.start(path, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    out = path.with_suffix("")
    assert faultkit.digest(out) == reference
    assert not list(out.rglob("*.tmp")) and not (out / "_work").exists()


def test_a_resume_killed_again_still_finishes_identically(corpus):
    root, reference = corpus
    path = recipe(root, "twice")
    faultkit.kill(stop_at(path, "fit"), whole_group=True)
    below = faultkit.kill(stop_at(path, "published-data", "--resume"), whole_group=False)
    assert faultkit.alive(below) == []
    assert faultkit.start(path, "--resume").wait() == 0
    assert faultkit.digest(path.with_suffix("")) == reference


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_workers_and_says_how_to_continue(corpus, sig, code):
    root, reference = corpus
    path = recipe(root, f"interrupted-{sig.name}")
    proc = stop_at(path, "task-done")
    below = faultkit.descendants(proc.pid)
    os.killpg(proc.pid, sig)  # as Ctrl-C (or a batch system) signals the whole group
    os.kill(proc.pid, signal.SIGCONT)
    assert proc.wait(timeout=60) == code
    stderr = proc.stderr.read().decode()
    assert "interrupted; continue with --resume" in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert faultkit.alive(below) == []
    out = path.with_suffix("")
    assert not (out / "data").exists() and not (out / "manifest.json").exists()
    assert faultkit.start(path, "--resume").wait() == 0
    assert faultkit.digest(out) == reference


@pytest.mark.parametrize("how", ["--resume", "--overwrite"])
def test_a_second_run_into_a_live_run_directory_is_refused_with_its_pid(corpus, how):
    root, reference = corpus
    path = recipe(root, f"busy{how}")
    first = stop_at(path, "stage-done")
    second = faultkit.start(path, how)
    assert second.wait(timeout=60) == 2
    assert f"another curate run is writing here (pid {first.pid} on " in second.stderr.read().decode()
    faultkit.kill(first, whole_group=True)
    assert faultkit.start(path, "--resume").wait() == 0
    assert faultkit.digest(path.with_suffix("")) == reference


# Three stages: a second Global (lowercase: a second key, which removes nothing more here)
THREE_STAGES = RECIPE + "  - exact_dedup: {{lowercase: true}}\n"


def test_a_stage_s_shards_go_once_the_next_stage_is_done_and_a_resume_plans_without_them(corpus):
    """_work/ holds one stage's shards at a time: stage 0's are gone once stage 1 is done, and a
    resume after that plans stage 2's tasks from the results' rows (it cannot read stage 0's)."""
    root, _ = corpus
    reference = recipe(root, "three-ref", THREE_STAGES)
    assert faultkit.start(reference).wait() == 0
    path = recipe(root, "three-killed", THREE_STAGES)
    faultkit.kill(stop_at(path, "state-written@2"), whole_group=True)  # stage 2 fitted, its tasks not run
    work = path.with_suffix("") / "_work"
    assert not list(work.glob("stage-0/data/*.parquet"))
    assert list(work.glob("stage-1/data/*.parquet"))  # stage 2's tasks read these
    resumed = faultkit.start(path, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert faultkit.digest(path.with_suffix("")) == faultkit.digest(reference.with_suffix(""))


def test_keep_work_keeps_every_stage_s_shards(corpus):
    root, _ = corpus
    path = recipe(root, "three-kept", THREE_STAGES)
    assert faultkit.start(path, "--keep-work").wait() == 0
    work = path.with_suffix("") / "_work"
    assert all(list(work.glob(f"stage-{k}/data/*.parquet")) for k in range(3))


EMBED_RECIPE = """
input: {{path: '{inp}', batch_rows: 500}}
output: {{path: '{out}', shard_mb: 1}}
steps:
  - sql_filter: {{where: "n % 5 <> 1"}}
  - embed: {{backend: hash, dtype: float16}}
  - semantic_dedup: {{eps: 0.05, k: 4}}
"""


@pytest.mark.parametrize("point", ["model-batch@3", "task-done@6", "fit"])
def test_kill_in_a_model_stage_then_resume_is_identical(corpus, point):
    """A run with a model stage (embed on the model worker pool, then a Global over its output)
    killed inside the model stage, between its tasks, or in the fit after it."""
    root, _ = corpus
    paths = {}
    for name in ("embed-ref", f"embed-{point}".replace("@", "-")):
        paths[name] = root / f"{name}.yaml"
        paths[name].write_text(EMBED_RECIPE.format(inp=root / "in" / "*.jsonl.gz", out=root / name))
    ref, killed = paths.values()
    assert faultkit.start(ref, "--overwrite").wait() == 0
    proc = faultkit.start(killed, failpoint=point)
    if point.startswith("model-batch"):  # a model worker stopped itself: kill the whole run
        assert faultkit.wait_for_failpoint_below(proc)
    else:
        assert faultkit.wait_for_failpoint(proc)
    assert faultkit.alive(faultkit.kill(proc, whole_group=False)) == []
    resumed = faultkit.start(killed, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert faultkit.digest(killed.with_suffix("")) == faultkit.digest(ref.with_suffix(""))
