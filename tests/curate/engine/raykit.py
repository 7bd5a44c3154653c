"""A Ray cluster of several nodes on this machine, for the Ray engine's tests and bench/sections/ray.py.

Each node is a `ray start` with its own temp dir and free ports, in a process group of its own;
`stop()` kills those groups' processes and the workers below them (never `ray stop`, which stops
every Ray on the machine). `ray start` leaves its daemons running on their own, so a watchdog
process kills them too when the test process that started them is gone without `stop()` (a
SIGTERM or SIGKILL to pytest, as a CI timeout sends: no finalizer runs then). With
`private_worker` (root and unshare needed) the worker nodes start in a mount namespace of their
own with a private tmpfs over `private`: storage the head sees and they do not.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.conftest import free_port
from tests.curate.engine.faultkit import REPO, alive, descendants

RAY = [sys.executable, "-m", "ray.scripts.scripts"]


class Cluster:
    def __init__(self):
        self.groups: list[int] = []
        self.private: Path | None = None
        self.temp = Path(tempfile.mkdtemp(prefix="cray"))  # short: Ray's socket paths must fit
        self.env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
                    "PYTHONPATH": str(REPO)}
        self.env.pop("CURATE_FAILPOINT", None)
        self.env.pop("CURATE_FAILPOINT_ONCE", None)

    def start(self, cpus: list[int], private_worker: bool = False) -> None:
        """A head node with cpus[0] CPUs, then a worker node for each further entry."""
        import ray

        port = free_port()
        self.address = f"127.0.0.1:{port}"
        # before any node: a test process killed while the nodes start leaves none behind either
        self.watchdog = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(os.getpid()), str(self.temp)],
                                         env=self.env, start_new_session=True)
        self._node(["--head", f"--port={port}", f"--ray-client-server-port={free_port()}",
                    f"--dashboard-port={free_port()}", "--include-dashboard=false"], "head", cpus[0])
        if private_worker and os.geteuid() == 0 and shutil.which("unshare"):
            self.private = self.temp / "private"
            self.private.mkdir()
        for i, n in enumerate(cpus[1:]):
            self._node([f"--address={self.address}"], f"worker{i}", n, private=self.private)
        deadline = time.monotonic() + 60
        ray.init(address=self.address, logging_level="ERROR")
        try:
            while len([n for n in ray.nodes() if n["Alive"]]) < len(cpus):
                assert time.monotonic() < deadline, "the worker nodes did not join"
                time.sleep(0.2)
        finally:
            ray.shutdown()

    def _node(self, args: list[str], name: str, cpus: int, private: Path | None = None) -> None:
        command = [*RAY, "start", *args, f"--num-cpus={cpus}", f"--temp-dir={self.temp / name}",
                   "--disable-usage-stats", f"--dashboard-agent-listen-port={free_port()}"]
        if private is not None:  # a private tmpfs over `private`, seen by this node only
            command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       f'mount -t tmpfs tmpfs "{private}" && exec "$@"', "sh", *command]
        proc = subprocess.Popen(command, env=self.env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        self.groups.append(proc.pid)
        (self.temp / "groups").write_text(" ".join(map(str, self.groups)))  # for the watchdog
        output, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, output.decode(errors="replace")[-3000:]

    def worker_node_ran_tasks(self) -> bool:
        return any(self.temp.glob("worker*/session_*/logs/worker-*.out"))

    def processes(self) -> list[int]:
        """The nodes' processes and those below them (Ray workers start sessions of their own)."""
        pids = [p for g in self.groups for p in _group(g)]
        return sorted(set(pids + [d for p in pids for d in descendants(p)]))

    def cpu_seconds(self) -> float:
        """CPU time of the cluster's processes so far, with that of the workers they have reaped."""
        ticks = 0
        for pid in self.processes():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if getattr(self, "watchdog", None) is not None:
            self.watchdog.kill()
            self.watchdog.wait()
        kill_cluster(self.groups, self.temp)


def kill_cluster(groups: list[int], temp: Path) -> None:
    """SIGKILL to the nodes' process groups, every process below them and any other whose command
    line names the cluster's temp dir (a Ray daemon whose parent is gone); the temp dir removed."""
    pids = sorted(set(p for g in groups for p in _group(g)) | {d for g in groups for p in _group(g)
                                                                  for d in descendants(p)} | set(_naming(temp)))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    alive(pids)
    shutil.rmtree(temp, ignore_errors=True)


# Run as `python -c WATCHDOG TEST_PID TEMP`: waits for the test process to end (or the cluster's
# temp dir to go, as stop() removes it), then kills what is left of the cluster (its nodes'
# process groups are in TEMP/groups as they start).
WATCHDOG = """
import sys, time
from pathlib import Path
from tests.curate.engine.faultkit import alive
from tests.curate.engine.raykit import kill_cluster
test, temp = int(sys.argv[1]), Path(sys.argv[2])
groups = []
while temp.exists() and alive([test], within=0):
    if (temp / "groups").exists():
        groups = [int(g) for g in (temp / "groups").read_text().split()]
    time.sleep(0.5)
kill_cluster(groups, temp)
"""


def _naming(temp: Path) -> list[int]:
    """The processes whose command line holds `temp` (Ray's daemons carry their session dir there)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if str(temp).encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


