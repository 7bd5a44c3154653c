"""Every recipe in recipes/ gives the local engine's bytes on a 2-node Ray cluster and with its
input and output on an object store: the campaigns the test suite samples
(tests/curate/engine/test_ray_executor.py runs one recipe per kind of Ray stage;
tests/recipes/test_recipes_on_store.py the recipes without models and one per input format).

    python bench/sections/every_recipe.py

Runs those tests with CURATE_TEST_EVERY_RECIPE=1 and prints pytest's summary and the wall time; a
failure is a recipe whose bytes differ from the local engine's (or that does not run).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import os
import subprocess
import time

REPO = Path(__file__).resolve().parents[2]
CAMPAIGNS = {"on Ray": ["tests/curate/engine/test_ray_executor.py", "-k", "recipes_give_the_local"],
             "on a store": ["tests/recipes/test_recipes_on_store.py"]}


def main() -> int:
    failed = 0
    for name, args in CAMPAIGNS.items():
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                              cwd=REPO, env={**os.environ, "CURATE_TEST_EVERY_RECIPE": "1"})
        print(f"every recipe {name}: exit {done.returncode} in {time.perf_counter() - started:.0f} s")
        failed = failed or done.returncode
    return failed


if __name__ == "__main__":
    sys.exit(main())
