"""Slurm's client commands: running them (a missing or silent one is a CurateError saying so),
the cluster's figures (MaxArraySize, CPUs), and what squeue and sacct say of jobs."""

from __future__ import annotations

import shlex
import subprocess

from curate.errors import CurateError

COMMANDS = ("sbatch", "squeue", "scancel", "scontrol")
# Slurm's states in which a job will not run again by itself (squeue's long names)
ENDED = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "REVOKED",
    "SPECIAL_EXIT",
}
GONE = "GONE"  # no longer listed by Slurm (purged after MinJobAge) nor by sacct


def slurm_error(command: list[str], res: subprocess.CompletedProcess) -> CurateError:
    said = (res.stderr or res.stdout or "").strip() or f"exit status {res.returncode}"
    return CurateError(f"--engine slurm: `{' '.join(shlex.quote(c) for c in command[:3])} ...` failed: {said}")


def slurm(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """A Slurm client command; a command that cannot run at all is a CurateError saying so."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise CurateError(
            f"--engine slurm needs Slurm's client commands on PATH ({', '.join(COMMANDS)}); {command[0]} is not there"
        ) from None
    except subprocess.TimeoutExpired:
        raise CurateError(
            f"--engine slurm: `{command[0]}` did not answer in {timeout:.0f}s (is slurmctld up?)"
        ) from None


def max_array_size() -> int:
    """The cluster's MaxArraySize: array indices run 0..MaxArraySize-1 (0: arrays disabled)."""
    command = ["scontrol", "show", "config"]
    res = slurm(command)
    if res.returncode:
        raise slurm_error(command, res)
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize":
            return int(value.strip())
    return 1001  # Slurm's default


def cluster_cpus(partition: str | None) -> int:
    """CPUs of the partition's nodes (sinfo's total), at least 1."""
    command = ["sinfo", "-h", "-o", "%C"] + (["-p", partition] if partition else [])
    try:
        res = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return 1
    total = 0
    for line in res.stdout.split():
        parts = line.split("/")  # allocated/idle/other/total
        if len(parts) == 4 and parts[3].isdigit():
            total += int(parts[3])
    return max(1, total)


def allocation_cpus(per_node: str) -> int:
    """CPUs of an allocation from SLURM_JOB_CPUS_PER_NODE (`2(x3),1`: three nodes of 2, one of 1)."""
    total = 0
    for part in filter(None, per_node.split(",")):
        cpus, _, times = part.partition("(x")
        if cpus.isdigit():
            total += int(cpus) * int(times.rstrip(")") or 1)
    return total


class Unreachable(Exception):
    """squeue failed for another reason than a job it no longer knows (slurmctld busy or down)."""


def job_states(jobs: list[str], detailed: bool = False) -> dict:
    """Slurm's state of `jobs` and of each of their array tasks (`JOB_INDEX`): from squeue (what
    ended within MinJobAge too), else sacct; a job known to neither is GONE. With `detailed`,
    (state, reason) pairs."""
    if not jobs:
        return {}
    out: dict = {}
    command = ["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%r", "-j", ",".join(jobs)]
    res = slurm(command)
    if res.returncode and "invalid job id" not in res.stderr.lower():
        raise Unreachable(res.stderr.strip() or f"squeue: exit status {res.returncode}")
    if res.returncode:  # one of them no longer known: ask one by one
        lines: list[str] = []
        for job in jobs:
            one = slurm(command[:-1] + [job])
            lines += one.stdout.splitlines() if one.returncode == 0 else []
    else:
        lines = res.stdout.splitlines()
    for line in lines:
        parts = line.strip().split("|")
        if len(parts) >= 2:
            out[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "") if detailed else parts[1]
    missing = [j for j in jobs if j not in out and not any(k.startswith(f"{j}_") for k in out)]
    if missing:
        out.update(_sacct(missing, detailed))
    return out


def _sacct(jobs: list[str], detailed: bool) -> dict:
    """States from accounting where the cluster keeps it; GONE for jobs it does not know."""
    out: dict = {}
    try:
        res = subprocess.run(
            ["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(jobs)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        for line in res.stdout.splitlines() if res.returncode == 0 else []:
            job, _, state = line.partition("|")
            state = state.split()[0] if state else ""  # "CANCELLED by 0"
            if state:
                out[job] = (state, "") if detailed else state
    except (OSError, subprocess.SubprocessError):
        pass
    for job in jobs:
        if job not in out and not any(k.startswith(f"{job}_") for k in out):
            out[job] = (GONE, "no longer known to Slurm") if detailed else GONE
    return out
