"""The memory a run's Global fits may hold at once: the recipe's `memory_gb`, else a share of the
machine's memory (its cgroup's limit where that is lower, as in a container)."""

from __future__ import annotations

import os
from pathlib import Path

# Half: the fit shares the machine with the workers' batches in flight and with the page cache
# its on-disk structures are read through.
DEFAULT_SHARE = 0.5


def machine_gb() -> float:
    """Physical memory, or the cgroup v2 limit when one is set and lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = "max"
    if limit.isdigit():
        total = min(total, int(limit))
    return total / 2**30


def budget_gb(recipe_memory_gb: float | None) -> float:
    """The fits' budget in GB: the recipe's, else DEFAULT_SHARE of the machine's memory."""
    return recipe_memory_gb if recipe_memory_gb is not None else DEFAULT_SHARE * machine_gb()


def describe(recipe_memory_gb: float | None) -> str:
    """Where the budget comes from, for the plan (`--dry-run`)."""
    if recipe_memory_gb is not None:
        return f"{recipe_memory_gb:g} GB (the recipe's memory_gb)"
    return f"{budget_gb(None):.1f} GB (default: {DEFAULT_SHARE:g} of the machine's {machine_gb():.1f} GB)"
