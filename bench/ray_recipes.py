"""Every recipe in recipes/ on a 2-node Ray cluster gives the local engine's bytes: the campaign the
test suite samples (tests/curate/engine/test_ray_executor.py runs one recipe per kind of stage).

    python bench/ray_recipes.py

Runs that test with CURATE_TEST_EVERY_RECIPE=1 and prints pytest's summary and the wall time; a
failure is a recipe whose Ray bytes differ from the local engine's (or that does not run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/curate/engine/test_ray_executor.py", "-k", "recipes_give_the_local"],
                          cwd=REPO, env={**os.environ, "CURATE_TEST_EVERY_RECIPE": "1"})
    print(f"every recipe on Ray: exit {done.returncode} in {time.perf_counter() - started:.0f} s")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
