"""`curate run --submit`: the run's driver sent to Slurm as a job of its own (or, inside an
allocation, run as an srun step of it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from curate.engine.slurm.commands import COMMANDS, slurm, slurm_error
from curate.engine.slurm.scripts import DRIVER_ENV, driver_script
from curate.errors import CurateError


def submit_driver(recipe, run_args: list[str], status: Callable[[str], None]) -> tuple[str, Path | None]:
    """`curate run --submit`: the driver sent to Slurm, so that the machine this runs on (a login
    node) runs nothing heavy. Outside an allocation, sbatch of driver_script (returns at once: the
    job id and its log); inside one (SLURM_JOB_ID set), nothing is submitted: the driver runs as an
    srun step of it on its first node (--overlap: the tasks' steps may use its CPU), its tasks as
    steps too, and this waits for it (returns its exit status as text, no log: it went here)."""
    from curate.recipe_specs import SlurmSpec

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
        raise slurm_error(command, res)
    job = res.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise CurateError(f"--submit: sbatch printed {res.stdout.strip()!r}, not a job id")
    (directory / "job").write_text(job + "\n")
    return job, directory / f"driver-{job}.out"
