"""What a batch asks Slurm for and runs: its #SBATCH options, its launch script (each array task
runs `python -m curate.engine.slurm.task`), its array indices, and `--submit`'s driver script."""

from __future__ import annotations

import math
import re
import shlex
import sys

from curate.errors import CurateError
from curate.words import count


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
    """A batch's launch script: array task N runs item N + CURATE_SLURM_OFFSET (task.py);
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
        f"exec {shlex.quote(python)} -m curate.engine.slurm.task {shlex.quote(directory)} "
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


WAVES = 4  # a stage's array tasks run in about this many waves of `parallel` at once


def task_shares(tasks: int, parallel: int) -> list[range]:
    """A stage's tasks cut into array tasks: contiguous shares, in task order, about WAVES waves of
    `parallel` at once. An array task is a Python process importing curate and its stage's
    libraries (seconds: more than Slurm's scheduling, on a short task) and, in a model stage,
    loading the model: that start is paid once per share, not once per task. Few tasks: one a
    share. More waves would balance a stage whose tasks differ in length better; fewer, start less."""
    if tasks == 0:
        return []
    size = -(-tasks // min(tasks, max(1, parallel) * WAVES))
    return [range(start, min(start + size, tasks)) for start in range(0, tasks, size)]


def windows(items: list[int], max_array: int) -> list[tuple[int, list[int]]]:
    """`items` cut into arrays: (offset, indices) per window of `max_array` item numbers."""
    out: dict[int, list[int]] = {}
    for item in items:
        out.setdefault(item // max_array * max_array, []).append(item - item // max_array * max_array)
    return sorted(out.items())


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
