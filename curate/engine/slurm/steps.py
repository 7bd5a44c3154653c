"""Inside an allocation (the driver is itself a job: SLURM_JOB_ID set), each item of a batch runs as
an `srun --exclusive` step of that job, with the batch's launch script, instead of an array task."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import TYPE_CHECKING, Callable

from curate.engine.slurm.batch import Batch, tail
from curate.engine.slurm.task import LOG_ENV, node_log
from curate.errors import CurateError
from curate.words import times

if TYPE_CHECKING:
    from curate.engine.slurm.engine import SlurmEngine


class Steps:
    """The srun steps of the engine's allocation that are running, by item (of the current batch)."""

    def __init__(self, engine: "SlurmEngine"):
        self.engine = engine
        self.running: dict[int, subprocess.Popen] = {}

    def run(
        self,
        batch: Batch,
        parallel: int | None,
        describe: Callable[[int], str],
        on_result: Callable[[int, object], None],
    ) -> None:
        """Inside an allocation: each item as an srun step of it (its launch script, the item
        number in CURATE_SLURM_OFFSET), at most `parallel` at once; a step that ends without a
        result is run again up to `slurm.retries` times."""
        e = self.engine
        queued = list(range(batch.total))
        retries = e.spec.retries
        seen_progress: dict[str, tuple] = {}
        options = [o for o in batch.options if o.startswith(("--job-name", "--cpus-per-task", "--gres", "--mem"))]
        while len(batch.done) < batch.total:
            while queued and len(self.running) < (parallel or len(queued)):
                item = queued.pop(0)
                batch.runs[item] = batch.runs.get(item, 0) + 1
                log = batch.directory / "logs" / f"step_{item}_{batch.runs[item]}.out"
                command = [
                    "srun",
                    "--exclusive",
                    "--ntasks=1",
                    "--nodes=1",
                    *options,
                    f"--output={node_log(e.session, log.name) if e.store is not None else log}",
                    "bash",
                    str(batch.directory / "launch.sh"),
                ]
                env = {**os.environ, "CURATE_SLURM_OFFSET": str(item), LOG_ENV: log.name}
                env.pop("SLURM_ARRAY_TASK_ID", None)
                with open(log.with_suffix(".srun"), "wb") as said:  # srun's own messages
                    self.running[item] = subprocess.Popen(
                        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=said
                    )
                with open(batch.directory / "submissions.jsonl", "a") as f:
                    f.write(
                        json.dumps(
                            {
                                "step": item,
                                "allocation": e.allocation,
                                "attempt": batch.runs[item],
                                "items": [item],
                                "command": command,
                            }
                        )
                        + "\n"
                    )
            e.poll(batch, seen_progress, on_result)
            for item, proc in list(self.running.items()):
                if proc.poll() is None:
                    continue
                del self.running[item]
                if e.store is not None:
                    e.sync(batch)  # what it put in the store before it ended
                if item in batch.done or (batch.directory / "results" / f"{item}.pkl").exists():
                    continue
                log = batch.log(store=e.store, name=f"step_{item}_{batch.runs[item]}.out")
                told = log.with_suffix(".srun").read_text(errors="replace").strip().splitlines()
                state = f"exit status {proc.returncode}" + (f": {told[-1]}" if told else "")
                if (batch.directory / "errors" / f"{item}.pkl").exists():
                    continue  # raised next round
                if batch.runs[item] > retries:
                    raise CurateError(
                        f"{describe(item)}: its srun step in allocation {e.allocation} ended "
                        f"without a result {times(batch.runs[item])} ({state}; slurm.retries: "
                        f"{retries}); its log: {log}" + tail(log)
                    )
                e.status(
                    f"Slurm: {describe(item)}: its srun step ended without a result ({state}); running "
                    f"it again ({batch.runs[item]} of {retries + 1} runs)"
                )
                queued.insert(0, item)
        batch.relay(seen_progress, e.progress)
        for proc in list(self.running.values()):  # their results are in: srun is ending
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self.stop()

    def stop(self) -> None:
        """End the srun steps running (srun passes the signal on to its step's task)."""
        steps, self.running = list(self.running.values()), {}
        for proc in steps:
            proc.terminate()
        deadline = time.monotonic() + 3
        for proc in steps:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
