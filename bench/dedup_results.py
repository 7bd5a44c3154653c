"""Write one named section of bench/RESULTS.md (replaced in place on a re-run; others' sections untouched)."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path


def machine() -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("model name")), platform.processor())
    cores = len(os.sched_getaffinity(0))
    mem = int(next(l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal"))) / 2**20
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {cores} cores, {mem:.0f} GiB RAM; load average at the end: {load} (the machine is shared)"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def write_section(path: Path, key: str, title: str, body: str, command: str) -> None:
    start, end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"{start}\n## {title}\n\n- Date: {stamp} (commit {commit()})\n- Machine: {machine()}\n"
               f"- Command: `{command}`\n\n{body.rstrip()}\n{end}\n")
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)
