"""A batch: items (a stage's tasks, a `map`'s pieces) run as array tasks, in a directory the
tasks write to (task.py): results/, errors/ and progress/ by item, where/ (the job and node
that ran it) and logs/. What the driver reads there, and, with a work store, fetches there."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from curate.engine.tasks.context import Progress


@dataclass
class Batch:
    """Items run as array tasks, and what is known of them."""

    name: str
    directory: Path
    total: int
    cpus: int
    options: list[str]  # sbatch options of its launch script
    # A stage's shares on a disk the driver sees: an array task, its own share done, runs those
    # above it that no array task has started (task.py), each under a claim file it holds locked
    steal: bool = False
    # Items whose result has been handed on (run_batch's `on_result`): the results themselves are
    # not kept, so a stage of many tasks costs the driver no memory per finished task
    done: set[int] = field(default_factory=set)
    runs: dict[int, int] = field(default_factory=dict)  # item -> array tasks submitted for it
    element: dict[int, tuple[str, str]] = field(default_factory=dict)  # item -> (job id, index) of its last run
    first_done: dict[int, float] = field(default_factory=dict)  # item -> when Slurm first said it COMPLETED

    def finished(self) -> list[int]:
        """Items whose result is in and not handed on yet."""
        names = os.listdir(self.directory / "results")
        return sorted(int(n[:-4]) for n in names if n.endswith(".pkl") and int(n[:-4]) not in self.done)

    def claimed(self, item: int) -> bool:
        """Whether an array task holds `item`'s claim: it is running the item (task.py _claim)."""
        try:
            fd = os.open(self.directory / "claims" / str(item), os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # and with it the lock this look took
        return False

    def news(self) -> bool:
        """Whether a result not handed on yet, or an error, is in."""
        return bool(self.finished()) or any(n.endswith(".pkl") for n in os.listdir(self.directory / "errors"))

    def raise_errors(self) -> None:
        """A task's own error (bad data, a bug), raised here as the local engine does."""
        for name in sorted(os.listdir(self.directory / "errors")):
            if not name.endswith(".pkl"):
                continue
            raise pickle.loads((self.directory / "errors" / name).read_bytes())

    def relay(self, seen: dict[str, tuple], progress: Progress) -> None:
        """The rows counts array tasks have written since the last look (each task keeps its totals
        in progress/<item>.json), passed to the run's progress."""
        directory = self.directory / "progress"
        for name in os.listdir(directory):
            if not name.endswith(".json"):
                continue
            try:
                stat = os.stat(directory / name)
                if seen.get(name, (None,))[0] == stat.st_mtime_ns:
                    continue
                totals = json.loads((directory / name).read_text())
            except (OSError, ValueError):
                continue  # being replaced: next time
            before = seen.get(name, (None, {}))[1]
            for label, (rows_in, rows_out) in totals.items():
                was = before.get(label, (0, 0))
                if rows_in != was[0] or rows_out != was[1]:
                    progress(label, rows_in - was[0], rows_out - was[1])
            seen[name] = (stat.st_mtime_ns, totals)

    def sync(self, store) -> list[str]:
        """With a work store: what tasks on nodes that do not see the batch put there (their
        records, results, errors and rows counts) into the batch's directory, each once it reads
        whole (on a store whose writes are copies, a file may be caught half written); rows counts
        again while their task runs. Returns the nodes of the results that came from such nodes."""
        blind = []
        for sub in ("where", "results", "errors", "progress"):
            here = self.directory / sub
            have = set(os.listdir(here))
            for name in sorted(store.names(here)):
                if int(name.partition(".")[0]) in self.done or (name in have and sub != "progress"):
                    continue
                data = store.read_bytes(here / name)
                try:
                    if data is None:
                        continue
                    if sub in ("results", "errors"):
                        pickle.loads(data)
                    else:
                        json.loads(data)
                except Exception:  # noqa: BLE001 - cut short: whole at a later look
                    continue
                tmp = here / f".{name}.sync"
                tmp.write_bytes(data)
                os.replace(tmp, here / name)
                if sub == "where" and (ran := json.loads(data)).get("blind"):
                    blind.append(ran["node"])
        return blind

    def log(self, name: str, store) -> Path:
        """A task's log in logs/; with a work store, the copy its task put there first (a task
        killed before its end put none: its log is in /tmp on its node)."""
        log = self.directory / "logs" / name
        if store is not None and not log.exists():
            data = store.read_bytes(log)
            if data is not None:
                log.write_bytes(data)
        return log


def tail(log: Path, lines: int = 5) -> str:
    """The last lines of a task's log, for an error message."""
    try:
        text = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ("; it ends:\n  " + "\n  ".join(text)) if text else ""
