"""The driver's side: submitting batches of array tasks (sbatch, or srun steps inside an
allocation), waiting on them, resubmitting what Slurm ended without a result, and cancelling
what it submitted. What each batch holds is executor.py's; the overview is in __init__.py."""

from __future__ import annotations

import json
import os
import pickle
import shlex
import shutil
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from curate.engine.result import TaskResult
from curate.engine.rundir.layout import RunLayout
from curate.engine.slurm import records
from curate.engine.slurm.batch import Batch, tail
from curate.engine.slurm.commands import (
    COMMANDS,
    ENDED,
    GONE,
    Unreachable,
    allocation_cpus,
    cluster_cpus,
    job_states,
    max_array_size,
    slurm,
    slurm_error,
)
from curate.engine.slurm.executor import SlurmExecutor
from curate.engine.slurm.scripts import DRIVER_ENV, array_spec, launch_script, sbatch_options, windows
from curate.engine.slurm.steps import Steps
from curate.engine.slurm.task import SESSION_ENV, STORE_ENV, WORK_ENV, node_log
from curate.engine.tasks.context import Progress, StageContext
from curate.engine.work import work_store
from curate.engine.work.executor import Engine
from curate.errors import CurateError
from curate.words import count, times

RESULT_GRACE_SECONDS = 30.0  # a task Slurm says COMPLETED whose result file is not visible yet (NFS)
UNREACHABLE_SECONDS = 600.0  # squeue failing this long stops the run
STATUS_SECONDS = 10.0  # how often a changed count of pending/running/done tasks is reported
PICKUP_SECONDS = 0.05  # how often the driver looks for a result between its looks at squeue


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
        from curate.recipe_specs import SlurmSpec

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
        # A fit's map calls run two at once (SlurmExecutor.calls_in_flight), each from a thread of
        # its own: what they share (batch numbers, the live jobs) changes under this lock
        self.lock = threading.Lock()
        self.cancelled = False  # the run is stopping: a batch still waited on is not resubmitted
        self.run_name = "run"  # the recipe's name, in the jobs' names (set by the executor)
        self.cwd = os.getcwd()
        self.session = uuid.uuid4().hex  # names the mirrors and logs of this driver's tasks on nodes
        self.fetched = 0  # files of tasks on nodes that do not see _work/, fetched from the store
        self.blind = 0  # results that came from such nodes
        self.blind_nodes: set[str] = set()  # those nodes, each with a mirror of _work/ on its own disk
        if store:
            self.store = work_store.for_run(store, layout)
            self.store.start(resume)
        # Inside an allocation: its srun steps, no sbatch; but a driver sent by --submit is a small
        # job of its own that submits the arrays
        self.allocation = None if os.environ.get(DRIVER_ENV) else os.environ.get("SLURM_JOB_ID")
        self.steps = Steps(self)  # inside an allocation: the srun steps running
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
            states = job_states(ids)
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
        with self.lock:
            self.batches += 1
            directory = self.attempt / f"{self.batches:03d}-{name}"
        for sub in ("items", "results", "errors", "progress", "logs", "where", "claims"):
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
        if self.store is not None:  # a node may not see `directory`: the store carries it (task.py)
            exports = ((STORE_ENV, self.store.uri), (WORK_ENV, str(self.store.work)), (SESSION_ENV, self.session))
            log = node_log(self.session, "%A_%a.out")
            for path in [directory / "batch.json", *sorted((directory / "items").iterdir())]:
                self.store.put(path)
        options = sbatch_options(
            self.spec, f"curate.{self.run_name}.{name}", str(directory), cpus, mem, gres, self.cwd, log
        )
        script = launch_script(self.spec, name, len(items), str(directory), options, exports)
        (directory / "launch.sh").write_text(script)
        return Batch(name, directory, len(items), cpus, options, steal=bool(shared.get("steal")))

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
                raise slurm_error(command, res)
            job = res.stdout.strip().split(";")[0]  # `jobid` or `jobid;cluster`
            if not job.isdigit():
                raise CurateError(f"--engine slurm: sbatch printed {res.stdout.strip()!r}, not a job id")
            previous = job
            with self.lock:
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
            self.steps.run(batch, parallel, describe, on_result)
            return
        self.submit(batch, list(range(batch.total)), parallel)
        retries = self.spec.retries
        reported, last_status = None, 0.0
        seen_progress: dict[str, tuple] = {}
        unreachable = 0.0  # since when squeue has been failing
        while len(batch.done) < batch.total:
            self.poll(batch, seen_progress, on_result)
            open_items = [i for i in range(batch.total) if i not in batch.done]
            if not open_items:
                break
            if self.cancelled:  # another call's error stopped the run: its jobs are cancelled, not lost
                raise CurateError(f"--engine slurm: {batch.name} stopped with the run")
            try:
                states = job_states(sorted({batch.element[i][0] for i in open_items}), detailed=True)
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
                elif batch.steal and batch.claimed(item):
                    counts["running"] += 1  # run by another array task of the batch, its own share done
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
                log = batch.log(store=self.store, name=f"{job}_{index}.out")
                if state.startswith("OUT_OF_MEMORY"):
                    # Not resubmitted, whatever slurm.retries says: unlike a cancel, a preemption or a
                    # lost node, it would read the same input under the same --mem and need as much again
                    raise CurateError(
                        f"{describe(item)}: Slurm ended array task {job}_{index} as {state}: it used more "
                        f"memory than its {_mem_asked(batch.options)}; not submitted again, it would need as "
                        f"much again (raise slurm.mem, e.g. --set slurm.mem=16G, and --resume); its log: {log}"
                        + tail(log)
                    )
                if batch.runs[item] > retries:
                    raise CurateError(
                        f"{describe(item)}: Slurm ended array task {job}_{index} as {state} "
                        f"{times(batch.runs[item])} (slurm.retries: {retries}); its log: {log}" + tail(log)
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
        batch.relay(seen_progress, self.progress)
        if batch.steal:  # every share is in: the array tasks not started yet have nothing left to run
            slurm(["scancel", "--state=PENDING", *sorted({job for job, _ in batch.element.values()})])
        self._forget(batch)

    def poll(self, batch, seen_progress: dict, on_result) -> None:
        """One look at the batch after a poll interval, or as soon as a result or an error is in:
        progress passed on, new results taken (each handed to `on_result`), a task's own error
        raised. (Squeue is asked once a poll interval; a result, a file here, is taken at once: the
        next call of a fit goes out without waiting for the interval.)"""
        deadline = time.monotonic() + self.spec.poll_seconds
        while time.monotonic() < deadline and not (self.store is None and batch.news()):
            time.sleep(PICKUP_SECONDS)
        if self.store is not None:
            self.sync(batch)
        batch.relay(seen_progress, self.progress)
        for item in batch.finished():
            on_result(item, pickle.loads((batch.directory / "results" / f"{item}.pkl").read_bytes()))
            batch.done.add(item)
        batch.raise_errors()

    def sync(self, batch: Batch) -> None:
        """With a work store: what tasks on nodes that do not see the batch put there, into its
        directory; those nodes noted (their mirrors go at the end: _drop_mirrors)."""
        nodes = batch.sync(self.store)
        self.blind += len(nodes)
        self.blind_nodes.update(nodes)

    def receive(self, ctx: StageContext, result: TaskResult) -> None:
        """With a work store, a task's files come to the run's `_work/` (from wherever it ran)."""
        if self.store is not None:
            self.fetched += work_store.fetch_task_files(self.store, ctx.layout, result)

    def _forget(self, batch: Batch) -> None:
        done = {job for job, _ in batch.element.values()}
        with self.lock:
            self.live = [j for j in self.live if j not in done]

    def manifest_entries(self) -> dict:
        """The manifest's `slurm` (records.py), for the runner to write."""
        return records.slurm_entry(self.root, self.allocation)

    def cancel(self) -> None:
        """scancel every job this driver submitted that may still run (inside an allocation: stop
        its srun steps)."""
        self.cancelled = True
        self.steps.stop()
        with self.lock:
            live, self.live = self.live, []
        if live:
            slurm(["scancel", *live])

    def close(self, discard_work: bool = False) -> None:
        blind, nodes = self.blind, sorted(self.blind_nodes)
        if nodes and not self.cancelled:  # a finished run: the nodes' mirrors go, as the Ray engine's do
            self._drop_mirrors(nodes)
        self.cancel()
        if blind:
            self.status(
                f"Slurm: {count(blind, 'result')} came from nodes that do not see {self.layout.work}, through "
                f"the work store (fetched {count(self.fetched, 'file')} of their tasks)"
            )
        if discard_work and self.store is not None:
            self.store.clear()

    def _drop_mirrors(self, nodes: list[str]) -> None:
        """A node that does not see `_work/` ran its tasks in a mirror of it on its own disk
        (work_store.mirror): a small job on each such node removes it, and this session's task logs
        there (task.py --drop-mirror), as the Ray engine drops its nodes' mirrors. Not waited on."""
        python = self.spec.python or sys.executable
        work = shlex.quote(str(self.layout.work))  # the mirror's path: the run's _work/ (work_store.for_run)
        drop = f"exec {shlex.quote(python)} -m curate.engine.slurm.task --drop-mirror {work}"
        for node in nodes:
            options = sbatch_options(
                self.spec, f"curate.{self.run_name}.drop-mirror", "", 1, None, None, self.cwd, "/dev/null"
            )
            command = ["sbatch", "--parsable", f"--nodelist={node}", *options]
            res = slurm([*command, f"--wrap={self.spec.env_setup or ''}\n{drop} {self.session}"])
            if res.returncode:
                self.status(f"Slurm: {node} keeps its copy of {self.layout.work}: {slurm_error(command, res)}")


def _mem_asked(options: list[str]) -> str:
    """What an array task's memory was: its --mem, or the partition's default where it gave none."""
    given = [o for o in options if o.startswith("--mem=")]
    return given[-1] if given else "partition's default memory (no --mem: slurm.mem unset)"
