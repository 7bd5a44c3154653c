"""How long the OpenMP threads of the numeric libraries (faiss and its OpenBLAS, torch) spin
before they sleep when they wait for each other.

libgomp spins 300,000 times at a barrier by default (about 0.1-1 ms). On cores busy with other
processes (the run's workers, other jobs on the machine) a spinning thread holds the core that
the thread it waits for needs: faiss's flat search of 1024 x 1024 rows of 384 dimensions on 2
loaded cores took 11-14 ms of CPU and 75-93 ms of wall time that way, 7.5 and 46-55 ms with
10,000 spins (no spinning at all: 6.7 and 46 ms). 10,000 spins still cover the short waits
between the parallel regions of an idle machine. Threads never change what is computed, only
when: the results are the same.
"""

from __future__ import annotations

import os

SPIN_COUNT = "10000"


def spin_briefly() -> None:
    """Before any OpenMP library is loaded (libgomp reads its settings once), here and in the
    worker processes started later (they inherit the environment): a short spin, unless the
    environment chose one (GOMP_SPINCOUNT, or OMP_WAIT_POLICY, which GOMP_SPINCOUNT would override)."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
