"""A run killed with SIGKILL at arbitrary points and resumed gives the uninterrupted run's bytes."""

import os
import random
import signal
import subprocess
import sys
import time

from tests.conftest import write_jsonl
from tests.curate.engine.test_local import data_digest

RECIPE = """
input: {{path: '{inp}', batch_rows: 500}}
output: {{path: '{out}', shard_mb: 1}}
steps:
  - sql_filter: {{where: "n % 5 <> 1"}}
  - exact_dedup: {{}}
  - sql_filter: {{where: "n % 7 <> 2"}}
"""


def curate(recipe, *args):
    return subprocess.Popen([sys.executable, "-m", "curate.cli", "run", str(recipe), "--workers", "2", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def test_sigkill_then_resume_is_identical_to_an_uninterrupted_run(tmp_path):
    for f in range(8):
        write_jsonl(tmp_path / "in" / f"p{f}.jsonl.gz",
                    [{"text": f"document number {(f * 4000 + i) % 9000} " * 20, "n": f * 4000 + i} for i in range(4000)])
    inp = tmp_path / "in" / "*.jsonl.gz"
    ref = tmp_path / "ref.yaml"
    ref.write_text(RECIPE.format(inp=inp, out=tmp_path / "ref"))
    assert curate(ref).wait() == 0
    killed = tmp_path / "killed.yaml"
    killed.write_text(RECIPE.format(inp=inp, out=tmp_path / "killed"))
    rng = random.Random(7)
    kills, args = 0, []
    for _ in range(4):
        proc = curate(killed, *args)
        time.sleep(rng.uniform(0.8, 2.5))
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        args = ["--resume"]
    proc = curate(killed, "--resume")
    assert proc.wait() == 0, proc.stderr.read().decode()
    assert kills >= 1
    assert data_digest(tmp_path / "killed") == data_digest(tmp_path / "ref")
    assert not list((tmp_path / "killed").rglob("*.tmp"))
