"""The Ray test cluster (raykit.py) dies with the test run that started it, however that ends."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.curate.engine.faultkit import REPO, alive

pytest.importorskip("ray")

HOLD = """
import json, os, sys, time
from tests.curate.engine.raykit import Cluster

def test_hold():
    c = Cluster()
    c.start(cpus=[1])
    with open(os.environ["MARK"] + ".tmp", "w") as f:
        json.dump(c.processes(), f)
    os.replace(os.environ["MARK"] + ".tmp", os.environ["MARK"])
    time.sleep(600)
"""


@pytest.mark.ray
def test_a_test_run_stopped_by_sigterm_leaves_no_ray_process_behind(tmp_path):
    (tmp_path / "test_hold.py").write_text(HOLD)
    mark = tmp_path / "pids.json"
    env = {**os.environ, "MARK": str(mark), "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                            str(tmp_path / "test_hold.py")], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert run.poll() is None and time.monotonic() < deadline, "the cluster did not start"
            time.sleep(0.2)
        pids = json.loads(mark.read_text())
        assert pids and not set(pids) - set(alive(pids, within=0))  # gcs_server, raylet, ... running
        run.send_signal(signal.SIGTERM)  # as a CI timeout stops the test command: no finalizer runs
        run.wait(30)
        assert alive(pids, within=20) == []
    finally:
        run.kill()
