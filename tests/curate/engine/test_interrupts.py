"""SIGINT and SIGTERM in every phase of a run, sent to the process group (Ctrl-C, a batch system)
or to the main process alone: the run exits within seconds with 130 / 143, says how to continue,
shows no traceback, leaves no process behind, and --resume gives the uninterrupted run's bytes.

Each run stops at a failpoint (in the main process or in a worker) so the signal lands exactly
in the phase named; the stopped process is then continued, as a running one would be."""

import itertools
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate import recipe as recipe_module
from curate.engine.run.runner import RunOptions, run
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit

RECIPE = """
input: {{path: '{inp}', batch_rows: 100}}
output: {{path: '{out}', shard_mb: 1}}
steps:
  - sql_filter: {{where: "n % 5 <> 1"}}
  - embed: {{backend: hash, dtype: float16, dim: 16}}
  - semantic_dedup: {{eps: 0.05, k: 4}}
"""

# phase -> (failpoint, whether a worker process reaches it rather than the main process)
PHASES = {
    "reading": ("read-batch", True),
    "cpu-task": ("task-batch", True),
    "model-stage": ("model-batch", True),
    "fit": ("fit", False),
    "fit-piece": ("map-piece", True),
    "publishing": ("published-data", False),
    "report": ("report", False),
}
EXIT_WITHIN = 10.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Input files and the bytes an uninterrupted run makes of them."""
    root = tmp_path_factory.mktemp("interrupts")
    for f in range(3):
        write_jsonl(root / "in" / f"p{f}.jsonl.gz",
                    [{"text": f"document {(f * 300 + i) % 500} about topic {i % 17} " * 8, "n": f * 300 + i}
                     for i in range(300)])
    run(load(root, "ref"), RunOptions(workers=1))
    return root, faultkit.digest(root / "ref")


def load(root, name):
    return recipe_module.load(text=RECIPE.format(inp=root / "in" / "*.jsonl.gz", out=root / name))


_runs = itertools.count()


# Every phase x signal x target would be 28 runs: here a sample of them, drawn anew each time,
# beside the boundaries (the first phase and the last, a worker of a fit's map and of the model
# pool, each signal to the group and to the main process alone). bench/sections/signals.py sends
# the signals at random points of whole runs, many times.
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(phase=st.sampled_from(list(PHASES)), sig=st.sampled_from([signal.SIGINT, signal.SIGTERM]),
       target=st.sampled_from(["group", "main"]))
@example(phase="reading", sig=signal.SIGINT, target="group")
@example(phase="report", sig=signal.SIGTERM, target="main")
@example(phase="fit-piece", sig=signal.SIGTERM, target="group")
@example(phase="model-stage", sig=signal.SIGINT, target="main")
def test_a_signal_in_each_phase_exits_cleanly_and_resumes_identically(corpus, phase, sig, target):
    root, reference = corpus
    name = f"{phase}-{sig.name}-{target}-{next(_runs)}"
    path = root / f"{name}.yaml"
    path.write_text(RECIPE.format(inp=root / "in" / "*.jsonl.gz", out=root / name))
    point, in_worker = PHASES[phase]
    proc = faultkit.start(path, failpoint=point)
    reached = faultkit.wait_for_failpoint_below(proc) if in_worker else faultkit.wait_for_failpoint(proc)
    assert reached, f"the run never reached {point}: {proc.stderr.read().decode()}"
    below = faultkit.descendants(proc.pid)
    os.killpg(proc.pid, sig) if target == "group" else os.kill(proc.pid, sig)
    sent = time.monotonic()
    for pid in [proc.pid, *below]:  # the stopped process goes on, as a running one would
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    code = proc.wait(timeout=60)
    took = time.monotonic() - sent
    stderr = proc.stderr.read().decode()
    assert code == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], stderr
    assert took < EXIT_WITHIN, f"exited after {took:.1f}s"
    assert stderr.count("interrupted; continue with --resume") == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert faultkit.alive(below) == []
    run(load(root, name), RunOptions(workers=1, resume=True))
    assert faultkit.digest(root / name) == reference
