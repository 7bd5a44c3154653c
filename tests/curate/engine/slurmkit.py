"""A one-node Slurm cluster on this machine, for the Slurm engine's tests: munged, slurmctld and
slurmd (Debian's `munge`, `slurmctld`, `slurmd`, `slurm-client`), all private to one temporary
directory: their own munge key and socket, their own slurm.conf (reached through `SLURM_CONF`,
so /etc/slurm is never read or written), state, spool, logs and ports.

`Cluster.start()` writes the configuration, starts the daemons in process groups of their own
and waits for `sinfo` to show the node idle; `stop()` cancels every job, stops the daemons and
kills any process left that carries the cluster's mark (slurmstepd and the jobs below it), so no
process outlives it. It needs root (slurmd runs jobs as their user) and the binaries; `why_not()`
says which is missing, for a skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "scontrol")
MAX_ARRAY_SIZE = 3  # small, so that a run of more tasks than this is split into several arrays
MARK = "CURATE_SLURMKIT"  # in the daemons' environment (and so their slurmstepd's): what stop() kills


def why_not() -> str | None:
    """Why a cluster cannot start here, or None."""
    if os.geteuid() != 0:
        return "the Slurm tests start slurmd, which runs jobs as their user: they need root"
    missing = [b for b in BINARIES if shutil.which(b) is None and not os.path.exists(f"/usr/sbin/{b}")]
    if missing:
        return (f"Slurm or munge is not installed (missing {', '.join(missing)}): "
                f"apt-get install slurmctld slurmd slurm-client munge")
    return None


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_memory_mb() -> int:
    """What slurmd will find (its `-C` line), less a margin: a node declared with more is drained."""
    try:
        line = subprocess.run([_binary("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
        found = int(next(w for w in line.split() if w.startswith("RealMemory=")).split("=")[1])
    except (StopIteration, ValueError, OSError, subprocess.SubprocessError):
        found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return max(256, found - 512)


class Cluster:
    def __init__(self, cpus: int = 2):
        self.cpus = cpus
        self.temp = Path(tempfile.mkdtemp(prefix="cslurm"))
        os.chmod(self.temp, 0o755)  # munged refuses a socket directory others may write to
        self.conf = self.temp / "slurm.conf"
        self.groups: list[int] = []
        self.daemons: list[subprocess.Popen] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), MARK: str(self.temp)}
        for name in list(self.env):
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and name != "SLURM_CONF":
                del self.env[name]  # not inside an allocation of another cluster
        self.stopped = False

    # -- start --------------------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> None:
        munge = self.temp / "munge"
        munge.mkdir(mode=0o700)
        key = munge / "munge.key"
        self._check([_binary("mungekey"), "--create", f"--keyfile={key}"])
        os.chmod(key, 0o400)
        self.socket = munge / "munge.socket"
        self._daemon([_binary("munged"), "--foreground", "--force", f"--socket={self.socket}",
                      f"--key-file={key}", f"--pid-file={munge / 'munged.pid'}",
                      f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'munged.seed'}"], "munged")
        self._wait(lambda: self.socket.exists(), timeout, "munged did not create its socket")
        for d in ("state", "spool", "log"):
            (self.temp / d).mkdir()
        self.conf.write_text(self.config())
        self._daemon([_binary("slurmctld"), "-D", "-f", str(self.conf)], "slurmctld")
        self._wait(lambda: self._ok(["scontrol", "ping"]) and "UP" in self._out(["scontrol", "ping"]), timeout,
                   "slurmctld did not answer `scontrol ping`")
        self._daemon([_binary("slurmd"), "-D", "-N", "localhost", "-f", str(self.conf)], "slurmd")
        self._wait(lambda: self._out(["sinfo", "-h", "-n", "localhost", "-o", "%T"]).strip() == "idle", timeout,
                   "the node did not become idle in sinfo")

    def config(self) -> str:
        t = self.temp
        return "\n".join([
            "ClusterName=curate",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={t}/state",
            f"SlurmdSpoolDir={t}/spool",
            f"SlurmctldPidFile={t}/slurmctld.pid",
            f"SlurmdPidFile={t}/slurmd.pid",
            f"SlurmctldLogFile={t}/log/slurmctld.log",
            f"SlurmdLogFile={t}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            f"MaxArraySize={MAX_ARRAY_SIZE}",
            "KillWait=2",
            "MinJobAge=300",
            "InactiveLimit=0",
            "SchedulerParameters=sched_interval=1,bf_interval=1,sched_min_interval=100000",  # jobs start within a second
            f"NodeName=localhost CPUs={self.cpus} RealMemory={_real_memory_mb()} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def _daemon(self, command: list[str], name: str) -> None:
        log = open(self.temp / f"{name}.out", "wb")
        proc = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        log.close()
        self.groups.append(proc.pid)
        self.daemons.append(proc)

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {timeout:.0f}s; logs:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        out = []
        for path in sorted([*self.temp.glob("*.out"), *(self.temp / "log").glob("*.log")]):
            out.append(f"== {path.name}\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(out)

    # -- use ----------------------------------------------------------------------------------------

    def _out(self, command: list[str]) -> str:
        try:
            return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    def _ok(self, command: list[str]) -> bool:
        try:
            return subprocess.run(command, env=self.env, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    def _check(self, command: list[str]) -> None:
        res = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=60)
        if res.returncode:
            raise RuntimeError(f"{' '.join(command)}: {res.stderr or res.stdout}")

    def squeue(self, *args: str) -> list[list[str]]:
        """Jobs as `squeue -h -o '%i|%T|%j' ARGS` lists them (array elements one a line)."""
        out = self._out(["squeue", "-h", "-r", "-o", "%i|%T|%j", *args])
        return [line.split("|") for line in out.splitlines() if line.strip()]

    def scancel(self, *args: str) -> None:
        self._check(["scancel", *args])

    # -- stop ---------------------------------------------------------------------------------------

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.conf.exists() and self.groups:
            self._out(["scancel", "--full", "--user", "root"])  # this cluster's jobs only (SLURM_CONF)
            deadline = time.monotonic() + 10
            while self.squeue() and time.monotonic() < deadline:
                time.sleep(0.2)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for group in self.groups:
                try:
                    os.killpg(group, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while self.processes() and time.monotonic() < deadline:
                time.sleep(0.1)
        for pid in self.processes():  # slurmstepd and jobs below it, started in sessions of their own
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.daemons:  # reaped: no zombie left either
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)

    def processes(self) -> list[int]:
        """Live processes of this cluster: the daemons' groups, and any process carrying its mark."""
        mine, mark = [], f"{MARK}={self.temp}".encode()
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                pgid = os.getpgid(int(entry))
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state == "Z":
                    continue
                if pgid in self.groups or mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    mine.append(int(entry))
            except (OSError, IndexError):
                continue
        return mine


@pytest.fixture(scope="session")
def slurm_cluster():
    """A one-node cluster for the test session, its SLURM_CONF in this process's environment (so
    `curate run --engine slurm`, in-process or a child, uses it); stopped at the end, and on
    SIGTERM too (then the process exits 143), so no daemon or job outlives the tests."""
    reason = why_not()
    if reason:
        pytest.skip(reason)
    cluster = Cluster()
    saved = {name: os.environ.get(name) for name in cluster.env if name.startswith("SLURM_")}
    saved.update({name: value for name, value in os.environ.items()
                  if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))})

    def on_sigterm(signum, frame):
        cluster.stop()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        try:
            cluster.start()
        except RuntimeError as e:
            pytest.skip(f"a one-node Slurm cluster could not start here: {e}")
        for name in saved:
            os.environ.pop(name, None)
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield cluster
    finally:
        cluster.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
