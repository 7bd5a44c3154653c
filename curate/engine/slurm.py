"""The Slurm engine: the runner's tasks as sbatch job arrays (`curate run --engine slurm`).

It only runs tasks (executor.py); what a run means stays in runner.py, so the bytes, trace,
manifest and resume are the local engine's. The run directory is on a filesystem the nodes
share (or, for an output at a URI, the tasks also copy their files to the work store, as the
local engine's do).

- A stage's tasks go out as one job array (`%N`: the stage's policy, i.e. `--workers`), split into
  arrays of at most the cluster's `MaxArraySize` (`scontrol show config`, or less: `max_array`),
  chained with `afterany` so that `%N` holds across them. Each array task runs
  `python -m curate.engine.slurm_task DIR INDEX` (slurm_task.py), which calls the same run_task as
  a local worker: its shards, trace and done marker land in `_work/` as ever. A Global fit's `map`
  pieces go out the same way, one array per `map` call (the fit's serial part runs in the driver).
- The driver (this process) waits: it reads each item's result file and polls `squeue` for the
  state of what it submitted. An array task that Slurm ended without a result (cancelled,
  preempted, its node lost, out of time) is resubmitted up to `slurm.retries` times; then the
  run stops with Slurm's state for it, the task's name and its log. One that Slurm ended
  OUT_OF_MEMORY stops the run at once, saying so (it would need as much memory again). A task that raised
  (bad data, a bug) stops the run with its own error, as with the local engine.
- Inside an allocation (`SLURM_JOB_ID` set: the driver is itself a job), nothing is submitted:
  each task runs as an `srun --exclusive` step of that job, the same launch script, at most
  the stage's parallel at once, a step that ends without a result run again likewise.
- Every array's launch script, its logs (`%A_%a.out`) and the sbatch (or srun) commands given
  (`submissions.jsonl`) are kept under `_work/slurm/attempt-N/<batch>/` (gone with `_work/`
  once the run succeeds, unless `--keep-work`).
- An interrupt or error cancels (`scancel`) every job the driver submitted. A driver killed
  outright leaves its jobs, but each array task checks, before and while it works, that the
  driver that submitted it still holds the run's lock, and exits otherwise (as local workers
  die with their parent); a `--resume` also cancels what the earlier attempt left queued, and
  the runner submits only the tasks without a done marker.
- `--dry-run` prints each stage's launch script and job arrays (dry_run: sinfo and scontrol are
  asked, nothing is submitted); the manifest's `slurm` records every submission's job id and, per
  task, the array task (or step) and node that gave its result (manifest_entries, from the
  `where/ITEM.json` each task writes beside its result).
- `--submit` (submit_driver) sends the driver itself as a small job (its script and log under
  ./curate-slurm/), which then submits the arrays (CURATE_SLURM_DRIVER in its environment: it is a
  job, not an allocation to run steps in); inside an allocation it runs the driver as an srun step
  of it instead, and its tasks as steps.
- Nodes that share no disk with the driver: `--work-store URI` (an object store every node
  reaches), as with the Ray engine. Each batch's files (batch.json, items, ctx.pkl) go there
  before it is submitted; a task on a node that does not see them works in a mirror of `_work/`
  (slurm_task.py) and puts there what the driver reads, which the driver fetches each poll
  (_sync); a task's own files come back as the runner receives it (`receive`), a fit's directory
  through shared_dir.py as the Ray engine does, and work that names no directory (the
  publisher's merges) runs in the driver, where the run's files are. Slurm writes the tasks' logs
  to /tmp on their nodes; the tasks put a copy in the store.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from curate.engine.failpoints import failpoint
from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.slurm_task import LOG_ENV, SESSION_ENV, STORE_ENV, WORK_ENV, node_log
from curate.engine.tasks.context import Progress, StageContext
from curate.engine.tasks.plan import Task
from curate.engine.work import shared_dir, work_store
from curate.engine.work.executor import Engine, Executor
from curate.errors import CurateError
from curate.words import count

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
RESULT_GRACE_SECONDS = 30.0  # a task Slurm says COMPLETED whose result file is not visible yet (NFS)
UNREACHABLE_SECONDS = 600.0  # squeue failing this long stops the run
STATUS_SECONDS = 10.0  # how often a changed count of pending/running/done tasks is reported


def _slurm_error(command: list[str], res: subprocess.CompletedProcess) -> CurateError:
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
        raise _slurm_error(command, res)
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


def array_spec(indices: list[int], throttle: int | None) -> str:
    """`--array` for `indices`: ranges where they run on (`0-4,7,9-10`), then `%throttle`."""
    parts, start = [], None
    ordered = sorted(indices)
    for i, n in enumerate(ordered):
        if start is None:
            start = n
        if i + 1 == len(ordered) or ordered[i + 1] != n + 1:
            parts.append(str(n) if start == n else f"{start}-{n}")
            start = None
    return ",".join(parts) + (f"%{throttle}" if throttle else "")


def _mem(gb: float | None) -> str | None:
    return f"{math.ceil(gb * 1024)}M" if gb else None


def sbatch_options(
    spec, job_name: str, directory: str, cpus: int, mem: str | None, gres: str | None, cwd: str, log: str = ""
) -> list[str]:
    """The #SBATCH options of a batch's launch script: the job's name, its logs under
    `directory` (or at `log`), its cores, then the recipe's `slurm:` settings (`slurm.mem` over the
    stage's own)."""
    settings = (
        ("partition", spec.partition),
        ("account", spec.account),
        ("qos", spec.qos),
        ("time", spec.time),
        ("mem", spec.mem or mem),
        ("gres", gres),
        ("constraint", spec.constraint),
    )
    log = log or f"{directory}/logs/%A_%a.out"
    return _job_options(job_name, log, cpus, cwd, settings) + list(spec.extra_sbatch)


def _job_options(job_name: str, output: str, cpus: int, cwd: str, settings) -> list[str]:
    """The #SBATCH options every job of a run has (its name, log, cores, one task, its directory),
    then each of `settings` (flag, value) that is set."""
    options = [
        f"--job-name={re.sub(r'[^A-Za-z0-9_.-]', '_', job_name)}",
        f"--output={output}",
        f"--cpus-per-task={cpus}",
        "--ntasks=1",
        f"--chdir={cwd}",
    ]
    return options + [f"--{flag}={value}" for flag, value in settings if value]


def launch_script(spec, name: str, items: int | None, directory: str, options: list[str], exports: tuple = ()) -> str:
    """A batch's launch script: array task N runs item N + CURATE_SLURM_OFFSET (slurm_task.py);
    `exports`: (name, value) pairs it sets first (the work store, for nodes that share no disk)."""
    python = spec.python or sys.executable
    script = [
        "#!/bin/bash",
        *[f"#SBATCH {o}" for o in options],
        "",
        f"# curate: {name}, {count(items, 'item') if items is not None else 'its items'}; run with "
        f"sbatch --array=INDICES "
        f"--export=ALL,CURATE_SLURM_OFFSET=N",
        spec.env_setup or "",
        "export PYTHONUNBUFFERED=1",
        *[f"export {k}={shlex.quote(v)}" for k, v in exports],
        f"exec {shlex.quote(python)} -m curate.engine.slurm_task {shlex.quote(directory)} "
        f'"$((SLURM_ARRAY_TASK_ID + ${{CURATE_SLURM_OFFSET:-0}}))"',
        "",
    ]
    return "\n".join(script)


def stage_resources(spec, policy, model: bool, model_workers: int) -> tuple[int, int, str | None, str | None]:
    """A stage's array tasks: (cpus each, at most this many at once, --gres, --mem) from its policy
    (plan.py) and `slurm:`; a model stage's ask for `slurm.gres`, or without GPUs run as
    `model_workers` CPU model workers."""
    cpus = spec.cpus_per_task or max(1, math.ceil(policy.cpus))
    parallel = max(1, model_workers) if model and not spec.gres else policy.parallel
    gres = gres_for(spec.gres, policy.gpus) if model and spec.gres else None
    return cpus, parallel, gres, _mem(policy.memory_gb)


def gres_for(gres: str, gpus_each: float) -> str:
    """`slurm.gres` for a model stage whose steps declare `gpus_each` GPUs a worker (Policy.gpus):
    a gres without a count ("gpu", "gpu:a100": Slurm's one) gets the declared count where it is more;
    one whose count is short of it is refused, since the step would fail on the node."""
    need = max(1, math.ceil(gpus_each))
    last = gres.rpartition(":")[2]
    if not last.isdigit():
        return f"{gres}:{need}" if need > 1 else gres
    if int(last) < need:
        raise CurateError(f"slurm.gres {gres!r} asks for {last} GPUs a task; a model step of the stage declares {need}")
    return gres


def windows(items: list[int], max_array: int) -> list[tuple[int, list[int]]]:
    """`items` cut into arrays: (offset, indices) per window of `max_array` item numbers."""
    out: dict[int, list[int]] = {}
    for item in items:
        out.setdefault(item // max_array * max_array, []).append(item - item // max_array * max_array)
    return sorted(out.items())


@dataclass
class Submission:
    """One sbatch of an array: its job id, the item number of index 0 and the indices given."""

    job: str
    offset: int
    indices: list[int]
    attempt: int = 1


@dataclass
class Batch:
    """Items (a stage's tasks, a `map`'s pieces) run as array tasks, and what is known of them."""

    name: str
    directory: Path
    total: int
    cpus: int
    options: list[str]  # sbatch options of its launch script
    # Items whose result has been handed on (run_batch's `on_result`): the results themselves are
    # not kept, so a stage of many tasks costs the driver no memory per finished task
    done: set[int] = field(default_factory=set)
    runs: dict[int, int] = field(default_factory=dict)  # item -> array tasks submitted for it
    element: dict[int, tuple[str, str]] = field(default_factory=dict)  # item -> (job id, index) of its last run
    first_done: dict[int, float] = field(default_factory=dict)  # item -> when Slurm first said it COMPLETED


class SlurmEngine(Engine):
    """The run's connection to a Slurm cluster through its client commands (sbatch, squeue,
    scancel, scontrol). `spec`: the recipe's `slurm:` (recipe.SlurmSpec) or None for the
    defaults; `store`: a work store URI (an output at a URI); `resume`: whether the run resumes
    (the earlier attempt's jobs, if any are left, are cancelled)."""

    @classmethod
    def from_config(cls, config) -> "SlurmEngine":
        return cls(config.progress, config.layout, config.status, config.slurm, config.store, config.resume)

    def __init__(
        self,
        progress: Progress,
        layout: RunLayout,
        status=lambda message: None,
        spec=None,
        store: str | None = None,
        resume: bool = False,
    ):
        from curate.recipe import SlurmSpec

        self.progress = progress
        self.status = status
        self.layout = layout
        self.spec = spec or SlurmSpec()
        missing = [c for c in COMMANDS if shutil.which(c) is None]
        if missing:
            raise CurateError(
                f"--engine slurm needs Slurm's client commands on PATH; not found: "
                f"{', '.join(missing)} (run from a login node of the cluster)"
            )
        self.max_array = max_array_size()
        if self.max_array < 1:
            raise CurateError(
                "--engine slurm runs each stage as a job array, and this cluster has them off "
                "(MaxArraySize=0 in slurm.conf)"
            )
        self.cores = cluster_cpus(self.spec.partition)
        self.root = Path(layout.work) / "slurm"
        self.root.mkdir(parents=True, exist_ok=True)
        self.jobs_file = self.root / "jobs.txt"  # every job id any attempt of the run submitted
        if resume:
            self._cancel_earlier()
        attempts = [
            int(p.name.removeprefix("attempt-"))
            for p in self.root.glob("attempt-*")
            if p.name.removeprefix("attempt-").isdigit()
        ]
        self.attempt = self.root / f"attempt-{max(attempts, default=0) + 1}"
        self.attempt.mkdir()
        self.live: list[str] = []  # job ids submitted and not known to be over
        self.batches = 0
        self.run_name = "run"  # the recipe's name, in the jobs' names (set by the executor)
        self.cwd = os.getcwd()
        self.session = uuid.uuid4().hex  # names the mirrors and logs of this driver's tasks on nodes
        self.fetched = 0  # files of tasks on nodes that do not see _work/, fetched from the store
        self.blind = 0  # results that came from such nodes
        if store:
            self.store = work_store.for_run(store, layout)
            self.store.start(resume)
        # Inside an allocation: its srun steps, no sbatch; but a driver sent by --submit is a small
        # job of its own that submits the arrays
        self.allocation = None if os.environ.get(DRIVER_ENV) else os.environ.get("SLURM_JOB_ID")
        self.steps: dict[int, subprocess.Popen] = {}  # srun steps running, by item (of the current batch)
        if self.allocation:
            self.cores = allocation_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")) or self.cores
            status(
                f"Slurm: inside allocation {self.allocation} ({self.cores} CPUs): each task runs as an srun "
                f"step of it; scripts and logs in {self.attempt}"
            )
        else:
            status(
                f"Slurm: {self.cores} CPUs in {self.spec.partition or 'the default partition'}, arrays of at "
                f"most {self.max_array} tasks; scripts and logs in {self.attempt}"
            )

    def _cancel_earlier(self) -> None:
        """Cancel what an earlier attempt of the run submitted and left (its driver was killed)."""
        try:
            ids = sorted(set(self.jobs_file.read_text().split()))
        except FileNotFoundError:
            return
        try:
            states = _states(ids)
        except Unreachable as e:
            raise CurateError(f"--engine slurm: cannot ask Slurm about the interrupted attempt's jobs: {e}") from None
        live = [job for job, state in states.items() if state not in ENDED and state != GONE]
        if live:
            slurm(["scancel", *live])
            self.status(f"Slurm: cancelled {count(len(live), 'job')} of the interrupted attempt ({', '.join(live)})")

    def cpu_executor(self, workers: int) -> "SlurmExecutor":
        return SlurmExecutor(self)

    def model_pool(self, cpu_workers: int, gpus_each: float = 0.0) -> "SlurmExecutor":
        # gpus_each is the stage's Policy.gpus, which the executor reads from the plan (gres_for)
        return SlurmExecutor(self, model=True, cpu_workers=cpu_workers)

    # -- batches of array tasks --------------------------------------------------------------------

    def new_batch(
        self, name: str, items: list, shared: dict, cpus: int, parallel: int | None, mem: str | None, gres: str | None
    ) -> Batch:
        """A directory for `items` (pickled one a file), `shared` (batch.json) and its launch script."""
        self.batches += 1
        directory = self.attempt / f"{self.batches:03d}-{name}"
        for sub in ("items", "results", "errors", "progress", "logs", "where"):
            (directory / sub).mkdir(parents=True)
        for i, item in enumerate(items):
            (directory / "items" / f"{i}.pkl").write_bytes(pickle.dumps(item))
        lock = json.loads(Path(self.layout.lock).read_text() or "{}")
        (directory / "batch.json").write_text(
            json.dumps(
                {
                    **shared,
                    "cwd": self.cwd,
                    "threads": cpus,
                    "lock": self.layout.lock,
                    "workers_lock": self.layout.workers_lock,
                    "driver": {"pid": lock.get("pid", os.getpid()), "host": lock.get("host", socket.gethostname())},
                }
            )
        )
        exports: tuple = ()
        log = ""
        if self.store is not None:  # a node may not see `directory`: the store carries it (slurm_task.py)
            exports = ((STORE_ENV, self.store.uri), (WORK_ENV, str(self.store.work)), (SESSION_ENV, self.session))
            log = node_log(self.session, "%A_%a.out")
            for path in [directory / "batch.json", *sorted((directory / "items").iterdir())]:
                self.store.put(path)
        options = sbatch_options(
            self.spec, f"curate.{self.run_name}.{name}", str(directory), cpus, mem, gres, self.cwd, log
        )
        script = launch_script(self.spec, name, len(items), str(directory), options, exports)
        (directory / "launch.sh").write_text(script)
        return Batch(name, directory, len(items), cpus, options)

    def submit(self, batch: Batch, items: list[int], parallel: int | None) -> None:
        """sbatch arrays for `items`: one per window of `max_array` item numbers, each after the
        one before (afterany), so that `%parallel` holds over them all."""
        previous = None
        for offset, indices in windows(items, self.max_array):
            members = [offset + i for i in indices]
            command = [
                "sbatch",
                "--parsable",
                f"--array={array_spec(indices, parallel)}",
                f"--export=ALL,CURATE_SLURM_OFFSET={offset}",
            ]
            if previous:
                command.append(f"--dependency=afterany:{previous}")
            command.append(str(batch.directory / "launch.sh"))
            res = slurm(command)
            if res.returncode:
                raise _slurm_error(command, res)
            job = res.stdout.strip().split(";")[0]  # `jobid` or `jobid;cluster`
            if not job.isdigit():
                raise CurateError(f"--engine slurm: sbatch printed {res.stdout.strip()!r}, not a job id")
            previous = job
            self.live.append(job)
            with open(self.jobs_file, "a") as f:
                f.write(job + "\n")
            attempt = max(batch.runs.get(m, 0) for m in members) + 1
            for m, i in zip(members, indices):
                batch.runs[m] = batch.runs.get(m, 0) + 1
                batch.element[m] = (job, str(i))
            with open(batch.directory / "submissions.jsonl", "a") as f:
                f.write(
                    json.dumps(
                        {
                            "job": job,
                            "array": array_spec(indices, parallel),
                            "offset": offset,
                            "items": members,
                            "attempt": attempt,
                            "command": command,
                        }
                    )
                    + "\n"
                )

    def run_batch(
        self,
        batch: Batch,
        parallel: int | None,
        describe: Callable[[int], str],
        on_result: Callable[[int, object], None],
    ) -> None:
        """Submit every item of `batch`, wait for all their results (resubmitting what Slurm ended
        without one); each result to `on_result` (its item, the result) as it comes."""
        if self.allocation:
            self._run_steps(batch, parallel, describe, on_result)
            return
        self.submit(batch, list(range(batch.total)), parallel)
        retries = self.spec.retries
        reported, last_status = None, 0.0
        seen_progress: dict[str, tuple] = {}
        unreachable = 0.0  # since when squeue has been failing
        while len(batch.done) < batch.total:
            self._poll(batch, seen_progress, on_result)
            open_items = [i for i in range(batch.total) if i not in batch.done]
            if not open_items:
                break
            try:
                states = _states(sorted({batch.element[i][0] for i in open_items}), detailed=True)
            except Unreachable as e:  # nothing is known of the tasks this round: none is taken as lost
                unreachable = unreachable or time.monotonic()
                if time.monotonic() - unreachable > UNREACHABLE_SECONDS:
                    raise CurateError(
                        f"--engine slurm: squeue has failed for {UNREACHABLE_SECONDS:.0f}s: {e}; "
                        f"the run's jobs are cancelled, continue with --resume"
                    ) from None
                continue
            unreachable = 0.0
            counts = {"pending": 0, "running": 0}
            lost: dict[int, str] = {}
            for item in open_items:
                job, index = batch.element[item]
                state = states.get(f"{job}_{index}") or states.get(job) or ("PENDING", "")
                name = state[0] if isinstance(state, tuple) else state
                if name in ("PENDING", "REQUEUED", "CONFIGURING", "SUSPENDED", "RESV_DEL_HOLD", "REQUEUE_HOLD"):
                    counts["pending"] += 1
                elif name not in ENDED and name != GONE:
                    counts["running"] += 1
                elif (batch.directory / "errors" / f"{item}.pkl").exists():
                    continue  # raised next round, once its file is whole
                elif (
                    name == "COMPLETED"
                    and time.monotonic() - batch.first_done.setdefault(item, time.monotonic()) < RESULT_GRACE_SECONDS
                ):
                    continue  # its result file may not be visible here yet
                else:
                    reason = state[1] if isinstance(state, tuple) else ""
                    lost[item] = f"{name}{f' ({reason})' if reason and reason != 'None' else ''}"
            for item, state in lost.items():
                job, index = batch.element[item]
                log = self._log(batch, f"{job}_{index}.out")
                if state.startswith("OUT_OF_MEMORY"):
                    # Not resubmitted, whatever slurm.retries says: unlike a cancel, a preemption or a
                    # lost node, it would read the same input under the same --mem and need as much again
                    raise CurateError(
                        f"{describe(item)}: Slurm ended array task {job}_{index} as {state}: it used more "
                        f"memory than its {_mem_asked(batch.options)}; not submitted again, it would need as "
                        f"much again (raise slurm.mem, e.g. --set slurm.mem=16G, and --resume); its log: {log}"
                        + _tail(log)
                    )
                if batch.runs[item] > retries:
                    raise CurateError(
                        f"{describe(item)}: Slurm ended array task {job}_{index} as {state} "
                        f"{_times(batch.runs[item])} (slurm.retries: {retries}); its log: {log}" + _tail(log)
                    )
                self.status(
                    f"Slurm: {describe(item)}: array task {job}_{index} ended as {state} without a "
                    f"result; submitting it again ({batch.runs[item]} of {retries + 1} runs)"
                )
            if lost:
                self.submit(batch, sorted(lost), parallel)
            now = time.monotonic()
            summary = (counts["pending"], counts["running"], len(batch.done))
            if summary != reported and now - last_status >= STATUS_SECONDS:
                self.status(
                    f"Slurm: {batch.name}: {summary[0]} pending, {summary[1]} running, "
                    f"{summary[2]} of {batch.total} done"
                )
                reported, last_status = summary, now
        self._relay(batch, seen_progress)
        self._forget(batch)

    def _run_steps(
        self,
        batch: Batch,
        parallel: int | None,
        describe: Callable[[int], str],
        on_result: Callable[[int, object], None],
    ) -> None:
        """Inside an allocation: each item as an srun step of it (its launch script, the item
        number in CURATE_SLURM_OFFSET), at most `parallel` at once; a step that ends without a
        result is run again up to `slurm.retries` times."""
        queued = list(range(batch.total))
        retries = self.spec.retries
        seen_progress: dict[str, tuple] = {}
        options = [o for o in batch.options if o.startswith(("--job-name", "--cpus-per-task", "--gres", "--mem"))]
        while len(batch.done) < batch.total:
            while queued and len(self.steps) < (parallel or len(queued)):
                item = queued.pop(0)
                batch.runs[item] = batch.runs.get(item, 0) + 1
                log = batch.directory / "logs" / f"step_{item}_{batch.runs[item]}.out"
                command = [
                    "srun",
                    "--exclusive",
                    "--ntasks=1",
                    "--nodes=1",
                    *options,
                    f"--output={node_log(self.session, log.name) if self.store is not None else log}",
                    "bash",
                    str(batch.directory / "launch.sh"),
                ]
                env = {**os.environ, "CURATE_SLURM_OFFSET": str(item), LOG_ENV: log.name}
                env.pop("SLURM_ARRAY_TASK_ID", None)
                with open(log.with_suffix(".srun"), "wb") as said:  # srun's own messages
                    self.steps[item] = subprocess.Popen(
                        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=said
                    )
                with open(batch.directory / "submissions.jsonl", "a") as f:
                    f.write(
                        json.dumps(
                            {
                                "step": item,
                                "allocation": self.allocation,
                                "attempt": batch.runs[item],
                                "items": [item],
                                "command": command,
                            }
                        )
                        + "\n"
                    )
            self._poll(batch, seen_progress, on_result)
            for item, proc in list(self.steps.items()):
                if proc.poll() is None:
                    continue
                del self.steps[item]
                if self.store is not None:
                    self._sync(batch)  # what it put in the store before it ended
                if item in batch.done or (batch.directory / "results" / f"{item}.pkl").exists():
                    continue
                log = self._log(batch, f"step_{item}_{batch.runs[item]}.out")
                told = log.with_suffix(".srun").read_text(errors="replace").strip().splitlines()
                state = f"exit status {proc.returncode}" + (f": {told[-1]}" if told else "")
                if (batch.directory / "errors" / f"{item}.pkl").exists():
                    continue  # raised next round
                if batch.runs[item] > retries:
                    raise CurateError(
                        f"{describe(item)}: its srun step in allocation {self.allocation} ended "
                        f"without a result {_times(batch.runs[item])} ({state}; slurm.retries: "
                        f"{retries}); its log: {log}" + _tail(log)
                    )
                self.status(
                    f"Slurm: {describe(item)}: its srun step ended without a result ({state}); running "
                    f"it again ({batch.runs[item]} of {retries + 1} runs)"
                )
                queued.insert(0, item)
        self._relay(batch, seen_progress)
        for proc in list(self.steps.values()):  # their results are in: srun is ending
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self._stop_steps()

    def _stop_steps(self) -> None:
        """End the srun steps running (srun passes the signal on to its step's task)."""
        steps, self.steps = list(self.steps.values()), {}
        for proc in steps:
            proc.terminate()
        deadline = time.monotonic() + 3
        for proc in steps:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _finished(self, batch: Batch) -> list[int]:
        names = os.listdir(batch.directory / "results")
        return sorted(int(n[:-4]) for n in names if n.endswith(".pkl") and int(n[:-4]) not in batch.done)

    def _raise_errors(self, batch: Batch) -> None:
        for name in sorted(os.listdir(batch.directory / "errors")):
            if not name.endswith(".pkl"):
                continue
            raise pickle.loads((batch.directory / "errors" / name).read_bytes())

    def _poll(self, batch, seen_progress: dict, on_result) -> None:
        """One look at the batch after a poll interval: progress passed on, new results taken
        (each handed to `on_result`), a task's own error raised."""
        time.sleep(self.spec.poll_seconds)
        if self.store is not None:
            self._sync(batch)
        self._relay(batch, seen_progress)
        for item in self._finished(batch):
            on_result(item, pickle.loads((batch.directory / "results" / f"{item}.pkl").read_bytes()))
            batch.done.add(item)
        self._raise_errors(batch)

    def _sync(self, batch: Batch) -> None:
        """With a work store: what tasks on nodes that do not see the batch put there (their
        records, results, errors and rows counts) into the batch's directory, each once it reads
        whole (on a store whose writes are copies, a file may be caught half written); rows counts
        again while their task runs."""
        assert self.store is not None
        for sub in ("where", "results", "errors", "progress"):
            here = batch.directory / sub
            have = set(os.listdir(here))
            for name in sorted(self.store.names(here)):
                if int(name.partition(".")[0]) in batch.done or (name in have and sub != "progress"):
                    continue
                data = self.store.read_bytes(here / name)
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
                if sub == "where" and json.loads(data).get("blind"):
                    self.blind += 1

    def _log(self, batch: Batch, name: str) -> Path:
        """A task's log in the batch's logs/; with a work store, the copy its task put there
        first (a task killed before its end put none: its log is in /tmp on its node)."""
        log = batch.directory / "logs" / name
        if self.store is not None and not log.exists():
            data = self.store.read_bytes(log)
            if data is not None:
                log.write_bytes(data)
        return log

    def receive(self, ctx: StageContext, result: TaskResult) -> None:
        """With a work store, a task's files come to the run's `_work/` (from wherever it ran)."""
        if self.store is not None:
            self.fetched += work_store.fetch_task_files(self.store, ctx.layout, result)

    def _relay(self, batch: Batch, seen: dict[str, tuple]) -> None:
        """The rows counts array tasks have written since the last look (each task keeps its totals
        in progress/<item>.json), passed to the run's progress."""
        directory = batch.directory / "progress"
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
                    self.progress(label, rows_in - was[0], rows_out - was[1])
            seen[name] = (stat.st_mtime_ns, totals)

    def _forget(self, batch: Batch) -> None:
        done = {job for job, _ in batch.element.values()}
        self.live = [j for j in self.live if j not in done]

    def manifest_entries(self) -> dict:
        """The manifest's `slurm` (manifest.SlurmEntry), for the runner to write: every attempt's
        submissions (job ids), and for each item that gave a result the job and node that ran it
        (its task's `where/ITEM.json`)."""
        jobs, tasks = [], []
        attempts = sorted(
            (int(p.name.removeprefix("attempt-")), p)
            for p in self.root.glob("attempt-*")
            if p.name.removeprefix("attempt-").isdigit()
        )
        for number, attempt in attempts:
            for directory in sorted(p for p in attempt.iterdir() if (p / "batch.json").is_file()):
                name = directory.name.partition("-")[2]
                names = json.loads((directory / "batch.json").read_text()).get("tasks")
                runs: dict[int, int] = {}
                try:
                    lines = (directory / "submissions.jsonl").read_text().splitlines()
                except FileNotFoundError:
                    lines = []
                for line in lines:
                    sent = json.loads(line)
                    for m in sent["items"]:
                        runs[m] = runs.get(m, 0) + 1
                    jobs.append(
                        {
                            "job": sent.get("job") or sent.get("allocation", "?"),
                            "batch": name,
                            "array": sent.get("array"),
                            "offset": sent.get("offset", 0),
                            "items": sent["items"],
                            "attempt": sent.get("attempt", 1),
                            "run_attempt": number,
                        }
                    )
                for where in sorted((directory / "where").glob("*.json"), key=lambda p: int(p.stem)):
                    item = int(where.stem)
                    if not (directory / "results" / f"{item}.pkl").exists():
                        continue
                    ran = json.loads(where.read_text())
                    tasks.append(
                        {
                            "batch": name,
                            "item": item,
                            "task": names[item] if names else None,
                            "job": ran["job"],
                            "node": ran["node"],
                            "runs": runs.get(item, 1),
                            "run_attempt": number,
                        }
                    )
        return {
            "slurm": {
                "driver_job": os.environ.get("SLURM_JOB_ID"),
                "allocation": self.allocation,
                "jobs": jobs,
                "tasks": tasks,
            }
        }

    def cancel(self) -> None:
        """scancel every job this driver submitted that may still run (inside an allocation: stop
        its srun steps)."""
        self._stop_steps()
        if self.live:
            live, self.live = self.live, []
            slurm(["scancel", *live])

    def close(self, discard_work: bool = False) -> None:
        self.cancel()
        if self.blind:
            self.status(
                f"Slurm: {count(self.blind, 'result')} came from nodes that do not see {self.layout.work}, through "
                f"the work store (fetched {count(self.fetched, 'file')} of their tasks)"
            )
        if discard_work and self.store is not None:
            self.store.clear()


def _listed(numbers: list[int], shown: int = 8) -> str:
    return ", ".join(map(str, numbers[:shown])) + (", ..." if len(numbers) > shown else "")


def _mem_asked(options: list[str]) -> str:
    """What an array task's memory was: its --mem, or the partition's default where it gave none."""
    given = [o for o in options if o.startswith("--mem=")]
    return given[-1] if given else "partition's default memory (no --mem: slurm.mem unset)"


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ("; it ends:\n  " + "\n  ".join(text)) if text else ""


class Unreachable(Exception):
    """squeue failed for another reason than a job it no longer knows (slurmctld busy or down)."""


def _states(jobs: list[str], detailed: bool = False) -> dict:
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


class SlurmExecutor(Executor):
    """A stage's tasks as one job array (split past MaxArraySize), `map` pieces likewise. For a
    model stage (`model`), the array tasks ask for `slurm.gres` (GPUs) and each runs as one
    model worker."""

    worker = "Slurm array task"

    def __init__(self, engine: SlurmEngine, model: bool = False, cpu_workers: int = 1):
        self.engine = engine
        self.model = model
        self.workers = [None] * (max(1, cpu_workers) if model else 1)  # what the runner counts of a model pool
        self.maps = 0
        self.pushed: dict[str, dict] = {}  # with a store: per fit directory, the versions of its files there

    def run(self, ctx: StageContext, tasks: list[Task], take: Callable[[int, TaskResult], None]) -> None:
        self.engine.run_name = ctx.recipe.name
        cpus, parallel, gres, mem = stage_resources(self.engine.spec, ctx.stage.policy, self.model, len(self.workers))
        name = f"stage{ctx.stage.index}"
        batch = self.engine.new_batch(
            name,
            [("task", task) for task in tasks],
            {"ctx": "ctx.pkl", "tasks": [t.name for t in tasks]},
            cpus,
            parallel,
            mem,
            gres,
        )
        (batch.directory / "ctx.pkl").write_bytes(pickle.dumps((ctx, self.engine.store)))
        if self.engine.store is not None:
            self.engine.store.put(batch.directory / "ctx.pkl")
        self.engine.status(
            f"Slurm: stage {ctx.stage.index}: {count(len(tasks), 'task')} as "
            f"{'srun steps' if self.engine.allocation else 'a job array'} "
            f"(at most {parallel} at once, {cpus} CPUs each"
            f"{f', --gres={gres}' if gres else ''}): {batch.directory / 'launch.sh'}"
        )

        def describe(i: int) -> str:
            return f"stage {ctx.stage.index} task {tasks[i].name}"

        def done(i: int, result) -> None:
            failpoint("task-done")
            take(i, result)

        self.engine.run_batch(batch, parallel, describe, done)

    def map(self, fn, *iterables, files_in: str | None = None) -> list:
        """`fn` over the items as an array of one-CPU tasks on the cluster (a fit's pieces, which
        read and write `files_in` on the shared filesystem; the publisher's merges)."""
        pieces = list(zip(*iterables))
        if not pieces:
            return []
        store = self.engine.store
        if store is not None and files_in is None:
            # Work that names no directory of its own (the publisher's merges) reads the run's
            # files, which nodes that share no disk do not see: it runs here
            return [fn(*args) for args in pieces]
        self.maps += 1
        fname = getattr(getattr(fn, "func", fn), "__name__", "map").strip("<>")
        spec = self.engine.spec
        view = None
        if store is not None:  # the fit's directory through the store, for nodes that do not see it
            assert files_in is not None
            view = shared_dir.push(store, Path(files_in), self.pushed.setdefault(files_in, {}))
        parallel = max(1, self.engine.cores // (spec.cpus_per_task or 1))
        # As many array tasks as run at once, each running its share of the pieces in turn: an
        # array task's start (a Python process importing curate) is paid once per share
        groups = [list(range(len(pieces)))[g::parallel] for g in range(min(parallel, len(pieces)))]
        batch = self.engine.new_batch(
            f"map{self.maps}-{fname}",
            [
                ("calls", fn, [pieces[i] for i in group])
                if view is None
                else ("shared", files_in, view, fn, [pieces[i] for i in group])
                for group in groups
            ],
            {},
            spec.cpus_per_task or 1,
            parallel,
            None,
            None,
        )
        results: list = [None] * len(pieces)
        written: list = []  # with a store: the files each piece wrote (shared_dir.run_piece)

        def place(g: int, share) -> None:  # an array task's share of the pieces: their results in place
            for i, result in zip(groups[g], share):
                if view is not None:
                    result, files = result
                    written.append(files)
                results[i] = result

        self.engine.run_batch(batch, parallel, lambda g: f"{fname} pieces {_listed(groups[g])} of {len(pieces)}", place)
        if store is not None:
            assert files_in is not None
            shared_dir.receive(store, Path(files_in), written, self.pushed[files_in])
        return results

    def close(self, kill: bool = False) -> None:
        if kill:
            self.engine.cancel()


def dry_run(
    recipe, sources: list, limit: int | None, workers: int, model_workers: int = 1, driver_args: list[str] | None = None
) -> dict:
    """What `--engine slurm` would submit for `recipe`, submitting nothing (`curate run --dry-run`):
    the cluster's figures it plans with, and per stage its tasks' resources, its launch script and
    its job arrays (the first stage's; a later stage has a task per shard of the one before, known
    once that one ends). Asks Slurm (sinfo, scontrol) where its commands are on PATH; else plans
    with MaxArraySize's default and this machine's cores, and says so. `driver_args` (--submit):
    also the driver's job script, outside an allocation."""
    from curate.engine.tasks import plan
    from curate.recipe import SlurmSpec

    spec = recipe.slurm or SlurmSpec()
    notes = []
    try:
        max_array = max_array_size()
        cores = cluster_cpus(spec.partition)
    except CurateError as e:
        max_array, cores = 1001, plan.available_cores()
        notes.append(
            f"Slurm not reachable here ({str(e).strip().splitlines()[-1]}): planned with MaxArraySize "
            f"1001 and this machine's "
            f"{count(cores, 'CPU')}"
        )
    allocation = None if os.environ.get(DRIVER_ENV) else os.environ.get("SLURM_JOB_ID")
    if allocation:
        cores = allocation_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")) or cores
    the_plan = plan.make(recipe.steps, sources, limit, workers or cores, cores)
    directory = "BATCH_DIR"  # _work/slurm/attempt-N/NNN-stageK under the run directory, when it runs
    stages = []
    for stage, tasks in zip(the_plan.stages, the_plan.tasks):
        cpus, parallel, gres, mem = stage_resources(spec, stage.policy, stage.resource_class == "model", model_workers)
        name = f"stage{stage.index}"
        n = len(tasks) if tasks is not None else None
        options = sbatch_options(spec, f"curate.{recipe.name}.{name}", directory, cpus, mem, gres, os.getcwd())
        entry = {
            "stage": stage.index,
            "tasks": n,
            "cpus_per_task": cpus,
            "parallel": parallel,
            "gres": gres,
            "mem": spec.mem or mem,
            "script": launch_script(spec, name, n, directory, options),
        }
        if n is not None and allocation:
            entry["steps"] = n
        elif n is not None:
            entry["arrays"] = [
                {"array": array_spec(indices, parallel), "offset": offset, "tasks": len(indices)}
                for offset, indices in windows(list(range(n)), max_array)
            ]
        if stage.global_step is not None:
            entry["fit"] = {
                "step": stage.global_step.label,
                "pieces_parallel": max(1, cores // (spec.cpus_per_task or 1)),
            }
        stages.append(entry)
    planned = {
        "max_array_size": max_array,
        "cpus": cores,
        "partition": spec.partition,
        "allocation": allocation,
        "stages": stages,
        "notes": notes,
    }
    if driver_args is not None and not allocation:
        planned["driver_script"] = driver_script(spec, recipe.name, driver_args, "curate-slurm/NAME-DATE", os.getcwd())
    return planned


def show_dry_run(planned: dict, print_line: Callable[[str], None]) -> None:
    """`dry_run`'s plan as lines for the terminal: the array sizes per stage, then each launch script."""
    where = planned["partition"] or "the default partition"
    if planned["allocation"]:
        print_line(
            f"Slurm (nothing submitted): inside allocation {planned['allocation']} ({planned['cpus']} CPUs): "
            f"each task would run as an srun step of it"
        )
    else:
        print_line(
            f"Slurm (nothing submitted): {planned['cpus']} CPUs in {where}, MaxArraySize {planned['max_array_size']}"
        )
    for note in planned["notes"]:
        print_line(f"  note: {note}")
    for s in planned["stages"]:
        asks = [f"{count(s['cpus_per_task'], 'CPU')} each"] + [f"--{k}={s[k]}" for k in ("gres", "mem") if s[k]]
        each = f"{', '.join(asks)}, at most {s['parallel']} at once"
        if "fit" in s:
            print_line(
                f"  stage {s['stage']}: fit of {s['fit']['step']} first, its parallel pieces as arrays of at "
                f"most {s['fit']['pieces_parallel']} tasks"
            )
        if s["tasks"] is None:
            print_line(f"  stage {s['stage']}: a task per shard of stage {s['stage'] - 1} (known when it ends), {each}")
        elif "steps" in s:
            print_line(f"  stage {s['stage']}: {count(s['tasks'], 'srun step')}, {each}")
        else:
            arrays = ", ".join(
                f"--array={a['array']}" + (f" (offset {a['offset']})" if a["offset"] else "") for a in s["arrays"]
            )
            print_line(
                f"  stage {s['stage']}: {count(s['tasks'], 'task')} as {count(len(s['arrays']), 'job array')}"
                f" ({each}): {arrays}"
            )
    if "driver_script" in planned:
        print_line("  --submit: the driver's job script (curate-slurm/NAME-DATE under this directory):")
        for line in planned["driver_script"].rstrip("\n").splitlines():
            print_line(f"    {line}")
    for s in planned["stages"]:
        print_line(
            f"  launch script of stage {s['stage']} (BATCH_DIR: _work/slurm/attempt-N/NNN-stage{s['stage']} "
            f"in the run directory):"
        )
        for line in s["script"].rstrip("\n").splitlines():
            print_line(f"    {line}")


DRIVER_ENV = "CURATE_SLURM_DRIVER"  # set in a --submit driver's job: it submits arrays, though SLURM_JOB_ID is set


def driver_script(spec, name: str, run_args: list[str], directory: str, cwd: str) -> str:
    """The sbatch script of `--submit`: `curate run RUN_ARGS` as a small job of its own (the
    driver only waits on its tasks' arrays, submitted from the job; a Global fit's serial part and
    the publishing run in it), its log `driver-%j.out` in `directory`."""
    settings = (
        ("partition", spec.partition),
        ("account", spec.account),
        ("qos", spec.qos),
        ("time", spec.driver_time),
        ("mem", spec.driver_mem),
        ("constraint", spec.constraint),
    )
    options = _job_options(f"curate.{name}.driver", f"{directory}/driver-%j.out", spec.driver_cpus, cwd, settings)
    python = spec.python or sys.executable
    command = " ".join(shlex.quote(a) for a in [python, "-m", "curate.cli", "run", *run_args])
    return "\n".join(
        [
            "#!/bin/bash",
            *[f"#SBATCH {o}" for o in options],
            "",
            f"# curate: the driver of {name}: it submits each stage's job arrays and waits on them",
            spec.env_setup or "",
            "export PYTHONUNBUFFERED=1",
            f"export {DRIVER_ENV}=1",
            f"exec {command}",
            "",
        ]
    )


def submit_driver(recipe, run_args: list[str], status: Callable[[str], None]) -> tuple[str, Path | None]:
    """`curate run --submit`: the driver sent to Slurm, so that the machine this runs on (a login
    node) runs nothing heavy. Outside an allocation, sbatch of driver_script (returns at once: the
    job id and its log); inside one (SLURM_JOB_ID set), nothing is submitted: the driver runs as an
    srun step of it on its first node (--overlap: the tasks' steps may use its CPU), its tasks as
    steps too, and this waits for it (returns its exit status as text, no log: it went here)."""
    from curate.recipe import SlurmSpec

    spec = recipe.slurm or SlurmSpec()
    cwd = os.getcwd()
    python = spec.python or sys.executable
    allocation = os.environ.get("SLURM_JOB_ID")
    if allocation:
        if shutil.which("srun") is None:
            raise CurateError("--submit inside an allocation runs the driver as an srun step: srun is not on PATH")
        command = [
            "srun",
            "--overlap",
            "--ntasks=1",
            "--nodes=1",
            f"--cpus-per-task={spec.driver_cpus}",
            f"--job-name=curate.{re.sub(r'[^A-Za-z0-9_.-]', '_', recipe.name)}.driver",
            python,
            "-m",
            "curate.cli",
            "run",
            *run_args,
        ]
        status(
            f"Slurm: inside allocation {allocation}: the driver runs as an srun step of it, its tasks as steps "
            f"too (nothing submitted)"
        )
        env = {k: v for k, v in os.environ.items() if k != DRIVER_ENV}
        return str(subprocess.run(command, env=env, stdin=subprocess.DEVNULL).returncode), None
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        raise CurateError(f"--submit needs Slurm's client commands on PATH; not found: {', '.join(missing)}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    directory = Path(cwd) / "curate-slurm" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', recipe.name)}-{stamp}"
    base, n = directory, 1
    while directory.exists():
        n += 1
        directory = base.with_name(f"{base.name}.{n}")
    directory.mkdir(parents=True)
    script = directory / "driver.sh"
    script.write_text(driver_script(spec, recipe.name, run_args, str(directory), cwd))
    command = ["sbatch", "--parsable", str(script)]
    res = slurm(command)
    if res.returncode:
        raise _slurm_error(command, res)
    job = res.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise CurateError(f"--submit: sbatch printed {res.stdout.strip()!r}, not a job id")
    (directory / "job").write_text(job + "\n")
    return job, directory / f"driver-{job}.out"
