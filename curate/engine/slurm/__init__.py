"""The Slurm engine: the runner's tasks as sbatch job arrays (`curate run --engine slurm`).

It only runs tasks (executor.py); what a run means stays in runner.py, so the bytes, trace,
manifest and resume are the local engine's. The run directory is on a filesystem the nodes
share (or, for an output at a URI, the tasks also copy their files to the work store, as the
local engine's do).

- A stage's tasks go out as one job array (`%N`: the stage's policy, i.e. `--workers`), split into
  arrays of at most the cluster's `MaxArraySize` (`scontrol show config`, or less: `max_array`),
  chained with `afterany` so that `%N` holds across them. Each array task runs
  `python -m curate.engine.slurm.task DIR INDEX` (task.py), which calls the same run_task as
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
- `--dry-run` prints each stage's launch script and job arrays (dry_run.py: sinfo and scontrol are
  asked, nothing is submitted); the manifest's `slurm` records every submission's job id and, per
  task, the array task (or step) and node that gave its result (records.py, from the
  `where/ITEM.json` each task writes beside its result).
- `--submit` (submit.py) sends the driver itself as a small job (its script and log under
  ./curate-slurm/), which then submits the arrays (CURATE_SLURM_DRIVER in its environment: it is a
  job, not an allocation to run steps in); inside an allocation it runs the driver as an srun step
  of it instead, and its tasks as steps.
- Nodes that share no disk with the driver: `--work-store URI` (an object store every node
  reaches), as with the Ray engine. Each batch's files (batch.json, items, ctx.pkl) go there
  before it is submitted; a task on a node that does not see them works in a mirror of `_work/`
  (task.py) and puts there what the driver reads, which the driver fetches each poll
  (Batch.sync); a task's own files come back as the runner receives it (`receive`), a fit's directory
  through shared_dir.py as the Ray engine does, and work that names no directory (the
  publisher's merges) runs in the driver, where the run's files are. Slurm writes the tasks' logs
  to /tmp on their nodes; the tasks put a copy in the store.

Its parts: commands.py (Slurm's client commands, and what squeue and sacct say of jobs),
scripts.py (#SBATCH options and launch scripts), batch.py (a batch of array tasks and its files),
engine.py (submitting batches and waiting on them), executor.py (a stage's tasks and a fit's
pieces as batches), records.py (the manifest's `slurm`), dry_run.py (`--dry-run`), submit.py
(`--submit`) and task.py (one array task, on its node).
"""
