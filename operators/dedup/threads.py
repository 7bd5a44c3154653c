"""How many threads the near-dedup fits give duckdb (and their pieces, when run in the fit's process)."""

from __future__ import annotations

import os


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
