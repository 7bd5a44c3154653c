"""Where a run stands beside its rows: the current stage's tasks done (by their done markers, as
the runner's Reporter.stage lets them be read) weighted by input bytes, whence a percentage and
an ETA that streaming stages (JSONL, CSV: rows unknown until read) have too; and, in batch logs
(nohup, Slurm: stderr is no terminal), a plain line every N seconds with rows, rate, stage,
percent of tasks and ETA.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from curate.io.sources import Source

INTERVAL_ENV = "CURATE_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 30.0


def task_bytes(task) -> int:
    """Bytes a task reads: its input files and objects (stage 0) or the shards of the stage
    before; 0 where unknown (a file gone). A Parquet file split among tasks weighs the same in each."""
    return sum(_size(item) for item in task.sources or task.shards)


def _size(item: Source | str) -> int:
    try:  # an object in a store weighs the size its listing gave
        return item.byte_size() if isinstance(item, Source) else os.path.getsize(item)
    except OSError:
        return 0


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{rest}s"


class StageTracker:
    """The current stage's tasks and which are done. `start` is the Reporter's `stage` callback;
    `poll` reads the done markers (from another thread than the run's)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.index: int | None = None
        self.weights: list[int] = []
        self.done: list[bool] = []
        self.before: list[bool] = []  # done when the stage started (a resumed run's)
        self.read_done: Callable[[], list[bool]] = list
        self.started = clock()

    def start(self, index: int, tasks: list, done: Callable[[], list[bool]]) -> None:
        weights = [task_bytes(t) for t in tasks]
        fill = max(1, sum(weights) // max(1, sum(1 for w in weights if w)))  # unknown sizes: the mean
        with self.lock:
            self.index, self.read_done, self.started = index, done, self.clock()
            self.weights = [w or fill for w in weights]
            self.done = self.before = list(done())

    def poll(self) -> None:
        with self.lock:
            read = self.read_done
        done = list(read())
        with self.lock:
            if read is self.read_done:
                self.done = done

    def state(self) -> dict | None:
        """stage, tasks, done, percent (of bytes), eta (seconds, or None until a task is done)."""
        with self.lock:
            if self.index is None:
                return None
            total = sum(self.weights) or 1
            finished = sum(w for w, d in zip(self.weights, self.done) if d)
            now = sum(w for w, d, b in zip(self.weights, self.done, self.before) if d and not b)
            eta = (self.clock() - self.started) * (total - finished) / now if now else None
            return {"stage": self.index, "tasks": len(self.weights), "done": sum(self.done),
                    "percent": 100 * finished / total, "eta": 0.0 if finished == total else eta}


class Ticker:
    """Calls `tick` every `interval` seconds on a thread of its own until stopped."""

    def __init__(self, interval: float, tick: Callable[[], None]):
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, args=(interval, tick), daemon=True, name="curate-progress")

    def _loop(self, interval: float, tick: Callable[[], None]) -> None:
        while not self.stop_event.wait(interval):
            tick()

    def __enter__(self) -> "Ticker":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join()


def plain_line(elapsed: float, stage: dict | None, label: str | None, rows: int, rate: float) -> str:
    """`progress 1m05s: stage 0, 3/8 tasks (41%), eta 1m30s; 01_gopher_quality: 12,345 rows in (190 rows/s)`."""
    from curate.words import count

    parts = [f"progress {duration(elapsed)}:"]
    if stage is not None:
        eta = "eta unknown until a task is done" if stage["eta"] is None else f"eta {duration(stage['eta'])}"
        parts.append(f"stage {stage['stage']}, {stage['done']}/{count(stage['tasks'], 'task')} "
                     f"({stage['percent']:.0f}%), {eta};")
    if label is not None:
        parts.append(f"{label}: {count(rows, 'row')} in ({rate:,.0f} rows/s)")
    return " ".join(parts).rstrip(";")
