"""Ordered, bounded fan-out over a thread pool (numpy, polars and duckdb release the GIL)."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def ordered_map(pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Iterable[T], ahead: int) -> Iterator[R]:
    """fn over items in the pool, results in input order, at most `ahead` items in flight
    (memory stays bounded by those, however long `items` is)."""
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        if len(pending) >= max(1, ahead):
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
