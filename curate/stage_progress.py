"""Where a run stands beside its rows: the current stage's tasks done (by their done markers, as
the runner's Reporter.stage lets them be read) weighted by input bytes, plus the bytes the running
tasks have read so far (Reporter.read, batch by batch), whence a percentage, the bytes read and
their rate, and an ETA that streaming stages (JSONL, CSV: rows unknown until read) have too, and
that moves during a long task; the bytes the stage has written; and, in batch logs (nohup, Slurm:
stderr is no terminal), a plain line every N seconds with all of it, rows and their rate.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from curate.io.sources import Source
from curate.words import count, size

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
    """The current stage's tasks, which are done and what the others have read. `start` is the
    Reporter's `stage` callback, `read` its `read`; `poll` reads the done markers (from another
    thread than the run's)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.index: int | None = None
        self.names: list[str] = []
        self.live: dict[str, int] = {}  # a task of the stage -> bytes of its input read so far
        self.weights: list[int] = []
        self.done: list[bool] = []
        self.before: list[bool] = []  # done when the stage started (a resumed run's)
        self.read_done: Callable[[], list[bool]] = list
        self.read_written: Callable[[], int] = int
        self.written = 0
        self.started = clock()
        self.fit: tuple[int, str, float] | None = None  # a Global fit running before its stage: (stage, label, since)

    def start(self, index: int, tasks: list, done: Callable[[], list[bool]], written: Callable[[], int] = int) -> None:
        weights = [task_bytes(t) for t in tasks]
        fill = max(1, sum(weights) // max(1, sum(1 for w in weights if w)))  # unknown sizes: the mean
        with self.lock:
            self.index, self.read_done, self.read_written, self.started = index, done, written, self.clock()
            self.names, self.live = [t.name for t in tasks], {}
            self.weights = [w or fill for w in weights]
            self.done = self.before = list(done())
            self.written, self.fit = 0, None

    def fitting(self, stage: int, label: str) -> None:
        """Stage `stage`'s Global step `label` fits (over the stage before's shards) until the stage starts."""
        with self.lock:
            self.fit = (stage, label, self.clock())

    def read(self, stage: int, task: str, nbytes: int) -> None:
        """Task `task` of stage `stage` read `nbytes` more of its input (one of an earlier stage,
        relayed late: nothing now)."""
        with self.lock:
            if stage == self.index:
                self.live[task] = self.live.get(task, 0) + nbytes

    def poll(self) -> None:
        with self.lock:
            read, read_written = self.read_done, self.read_written
        done, written = list(read()), read_written()
        with self.lock:
            if read is self.read_done:
                self.done, self.written = done, written

    def finish(self, written: int) -> None:
        """The run is over: every task of its last stage is done (its markers are gone with _work/),
        and `written` bytes are its output."""
        with self.lock:
            self.read_done, self.read_written = (lambda: [True] * len(self.weights)), (lambda: written)
            self.done, self.written = [True] * len(self.weights), written

    def state(self) -> dict | None:
        """stage, tasks, done, percent (of bytes), eta (seconds, or None until bytes are read),
        bytes (the stage's input, from the plan's sizes), read (bytes of the tasks done, and what
        the others read so far), rate (bytes read a second in this run, None until some are) and
        written (bytes)."""
        with self.lock:
            if self.fit is not None:  # the stage before is over: its figures would only go stale
                stage, label, since = self.fit
                return {"stage": stage, "fitting": label, "seconds": self.clock() - since}
            if self.index is None:
                return None
            total = sum(self.weights) or 1
            # a task done weighs what the plan says; one running, what it read (at most that)
            read = [w if d else min(self.live.get(n, 0), w) for n, w, d in zip(self.names, self.weights, self.done)]
            finished = sum(read)
            now = sum(r for r, b in zip(read, self.before) if not b)
            rate = now / max(self.clock() - self.started, 1e-9) if now else None
            eta = (total - finished) / rate if rate else None
            return {
                "stage": self.index,
                "tasks": len(self.weights),
                "done": sum(self.done),
                "percent": 100 * finished / total,
                "eta": 0.0 if finished == total else eta,
                "bytes": sum(self.weights),
                "read": finished,
                "rate": rate,
                "written": self.written,
            }


def ended(stage: dict) -> dict:
    """A stage's state once all its tasks are done."""
    return {**stage, "done": stage["tasks"], "percent": 100.0, "eta": 0.0, "read": stage["bytes"]}


def bytes_text(stage: dict) -> str:
    """`read 1.2 GB of 3.0 GB (45.0 MB/s), written 0.8 GB`."""
    rate = "" if stage["rate"] is None else f" ({size(stage['rate'])}/s)"
    return f"read {size(stage['read'])} of {size(stage['bytes'])}{rate}, written {size(stage['written'])}"


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
    """`progress 1m05s: stage 0, 3/8 tasks (41%), eta 1m30s, read 1.2 GB of 3.0 GB (45.0 MB/s),
    written 0.8 GB; 01_gopher_quality: 12,345 rows in (190 rows/s)`; while a Global step fits,
    `progress 3m10s: stage 2, fitting 03_containment_dedup for 1m05s` (no step reads rows then: a
    rate over the fit's minutes would only fall)."""
    parts = [f"progress {duration(elapsed)}:"]
    if stage is not None and "fitting" in stage:
        parts.append(f"stage {stage['stage']}, fitting {stage['fitting']} for {duration(stage['seconds'])}")
        return " ".join(parts)
    if stage is not None:
        eta = "eta unknown until bytes are read" if stage["eta"] is None else f"eta {duration(stage['eta'])}"
        parts.append(
            f"stage {stage['stage']}, {stage['done']}/{count(stage['tasks'], 'task')} "
            f"({stage['percent']:.0f}%), {eta}, {bytes_text(stage)};"
        )
    if label is not None:
        parts.append(f"{label}: {count(rows, 'row')} in ({rate:,.0f} rows/s)")
    return " ".join(parts).rstrip(";")
