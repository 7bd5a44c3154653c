"""`curate run --engine slurm --dry-run`: what would be submitted, asking Slurm, submitting nothing."""

from __future__ import annotations

import os
from typing import Callable

from curate.engine.slurm.commands import allocation_cpus, cluster_cpus, max_array_size
from curate.engine.slurm.scripts import (
    DRIVER_ENV,
    array_spec,
    driver_script,
    launch_script,
    sbatch_options,
    stage_resources,
    task_shares,
    windows,
)
from curate.errors import CurateError
from curate.words import count


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
    from curate.recipe_specs import SlurmSpec

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
        shares = len(task_shares(n, parallel)) if n is not None else None  # array tasks (or srun steps)
        options = sbatch_options(spec, f"curate.{recipe.name}.{name}", directory, cpus, mem, gres, os.getcwd())
        entry = {
            "stage": stage.index,
            "tasks": n,
            "array_tasks": shares,
            "cpus_per_task": cpus,
            "parallel": parallel,
            "gres": gres,
            "mem": spec.mem or mem,
            "script": launch_script(spec, name, shares, directory, options),
        }
        if shares is not None and allocation:
            entry["steps"] = shares
        elif shares is not None:
            entry["arrays"] = [
                {"array": array_spec(indices, parallel), "offset": offset, "array_tasks": len(indices)}
                for offset, indices in windows(list(range(shares)), max_array)
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
            print_line(f"  stage {s['stage']}: {count(s['tasks'], 'task')} as {count(s['steps'], 'srun step')}, {each}")
        else:
            arrays = ", ".join(
                f"--array={a['array']}" + (f" (offset {a['offset']})" if a["offset"] else "") for a in s["arrays"]
            )
            shared = (
                f" (a share of them each: {count(s['array_tasks'], 'array task')})"
                if (s["array_tasks"] != s["tasks"])
                else ""
            )
            print_line(
                f"  stage {s['stage']}: {count(s['tasks'], 'task')} as {count(len(s['arrays']), 'job array')}"
                f"{shared} ({each}): {arrays}"
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
