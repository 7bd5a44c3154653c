"""The `curate` command makes OpenMP's threads spin briefly before they sleep (curate/omp_wait.py),
set before faiss or torch load libgomp, unless the environment chose how they wait."""

import os
import subprocess
import sys

import pytest

from curate.omp_wait import SPIN_COUNT

# The command's entry point with its commands replaced by a print of what libgomp will read.
SHOW = """
import os
from curate import cli
cli.app = lambda: print(os.environ.get("GOMP_SPINCOUNT"), any("libgomp" in line for line in open("/proc/self/maps")))
cli.main()
"""


@pytest.mark.parametrize("chosen, expected", [
    ({}, SPIN_COUNT),
    ({"GOMP_SPINCOUNT": "5"}, "5"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "None"),  # GOMP_SPINCOUNT would override the policy
])
def test_the_command_spins_briefly_unless_the_environment_chose(chosen, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", SHOW], env={**env, **chosen}, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [expected, "False"]  # libgomp not loaded yet: it reads the setting when it is
