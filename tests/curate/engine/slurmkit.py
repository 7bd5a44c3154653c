"""A one-node Slurm cluster on this machine, for the Slurm engine's tests: munged, slurmctld and
slurmd (Debian's `munge`, `slurmctld`, `slurmd`, `slurm-client`), all private to one temporary
directory: their own munge key and socket, their own slurm.conf (reached through `SLURM_CONF`,
so /etc/slurm is never read or written), state, spool, logs and ports.

Where cgroup v1's memory controller is there and writable (`cgroup_memory()`), the tasks' memory
is enforced as on a production cluster: task/cgroup with ConstrainRAMSpace, memory a consumable
(CR_Core_Memory, each CPU's share of the node by default), so a job over its `--mem` is killed
by the kernel and Slurm ends it OUT_OF_MEMORY. (Slurm 22.05's cgroup-free enforcement,
jobacct_gather/linux with OverMemoryKill, kills such a job too, but ends it FAILED, or its step
CANCELLED: never OUT_OF_MEMORY.) Elsewhere memory is not enforced (task/none, CR_Core). Process
tracking is cgroup-free either way (proctrack/linuxproc). The node has a name of its own
(`Cluster.node`), so that Slurm's cgroups (`slurm_<node>/`) are the cluster's own when
clusters of several test sessions run at once; stop() removes them.

Where `unshare` is there, slurmd (and so every job it runs) starts in a mount namespace of its
own with a private tmpfs over `Cluster.private`: a directory the driver (this process) sees and
the node does not, as a node's view of a disk it does not share (a run's output there: its
tasks must take the work files through a work store).

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
import secrets
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


def cgroup_memory() -> Path | None:
    """cgroup v1's memory controller, if it is mounted and this process may make groups in it
    (what Slurm's task/cgroup needs to limit a job's memory); else None."""
    root = Path("/sys/fs/cgroup/memory")
    if not (root / "memory.limit_in_bytes").exists():
        return None
    probe = root / f"curate-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return None
    return root


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
        self.node = f"curate{secrets.token_hex(4)}"
        self.cgroup = cgroup_memory()
        self.enforces_memory = self.cgroup is not None  # a job over its --mem ends OUT_OF_MEMORY
        self.private: Path | None = None  # seen here, not by the node (set by start() where unshare is)
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
        slurmd = [_binary("slurmd"), "-D", "-N", self.node, "-f", str(self.conf)]
        if shutil.which("unshare"):  # a private tmpfs over `private`, seen by the node only
            self.private = self.temp / "private"
            self.private.mkdir()
            slurmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                      f'mount -t tmpfs tmpfs "{self.private}" && exec "$@"', "sh", *slurmd]
        self._daemon(slurmd, "slurmd")
        self._wait(lambda: self._out(["sinfo", "-h", "-n", self.node, "-o", "%T"]).strip() == "idle", timeout,
                   "the node did not become idle in sinfo")

    def config(self) -> str:
        t = self.temp
        memory = _real_memory_mb()
        if self.enforces_memory:  # read by slurmd from slurm.conf's directory
            (t / "cgroup.conf").write_text("\n".join([
                "CgroupPlugin=cgroup/v1",
                "CgroupAutomount=no",
                f"CgroupMountpoint={self.cgroup.parent}",
                "ConstrainRAMSpace=yes",
                "ConstrainSwapSpace=no",
                "",
            ]))
            enforcement = ["TaskPlugin=task/cgroup", "SelectTypeParameters=CR_Core_Memory",
                           f"DefMemPerCPU={memory // self.cpus}"]  # a job without --mem: its CPUs' share
        else:
            enforcement = ["TaskPlugin=task/none", "SelectTypeParameters=CR_Core"]
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
            "SelectType=select/cons_tres",
            *enforcement,
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
            f"NodeName={self.node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} "
            f"RealMemory={memory} State=UNKNOWN",
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
        self._remove_cgroups()
        shutil.rmtree(self.temp, ignore_errors=True)

    def _remove_cgroups(self) -> None:
        """Slurm's cgroups of this node that slurmd left (its processes are gone), deepest first."""
        if self.cgroup is None:
            return
        for top in self.cgroup.parent.glob(f"*/slurm_{self.node}"):
            for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                try:
                    directory.rmdir()
                except OSError:
                    pass
            try:
                top.rmdir()
            except OSError:
                pass

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
