"""`curate run` as a child process that stops at a named failpoint, and the processes it started.

Shared by the fault tests and bench/sections/faults.py: a kill lands at a chosen phase, not
after a sleep.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def start(recipe: Path, *args: str, failpoint: str | None = None, workers: int = 2) -> subprocess.Popen:
    """`curate run RECIPE ARGS` in its own process group (so the whole run can be killed at once)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CURATE_FAILPOINT", None)
    if failpoint:
        env["CURATE_FAILPOINT"] = failpoint
    return subprocess.Popen([sys.executable, "-m", "curate.cli", "run", str(recipe), "--workers", str(workers), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)


def wait_for_failpoint(proc: subprocess.Popen, timeout: float = 120) -> bool:
    """Wait until the run stops at its failpoint (True) or ends without reaching it (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if _state(proc.pid) == "T":
            return True
        time.sleep(0.01)
    raise TimeoutError(f"run {proc.pid} neither stopped nor ended in {timeout}s")


def wait_for_failpoint_below(proc: subprocess.Popen, timeout: float = 120) -> bool:
    """Wait until a process below the run (a worker) stops at its failpoint."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if any(_state(p) == "T" for p in descendants(proc.pid)):
            return True
        time.sleep(0.01)
    raise TimeoutError(f"no worker of run {proc.pid} stopped in {timeout}s")


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (workers, and multiprocessing's resource tracker)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill(proc: subprocess.Popen, whole_group: bool) -> list[int]:
    """SIGKILL the run (its process group, or the main process alone); returns the pids that
    were below it, which must all be gone soon after."""
    below = descendants(proc.pid)
    if whole_group:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return below


def alive(pids: list[int], within: float = 10.0) -> list[int]:
    """The pids still running (not zombies) after waiting up to `within` seconds for them to go."""
    deadline = time.monotonic() + within
    while True:
        left = [p for p in pids if _state(p) not in (None, "Z")]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def digest(out: Path) -> dict[str, str]:
    """sha256 of every published file (data shards and traces), by relative path."""
    files = sorted([*out.glob("data/*.parquet"), *out.glob("trace/*.parquet")])
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
