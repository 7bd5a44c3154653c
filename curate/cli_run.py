"""`curate run` and `curate validate`: the commands that load a recipe (as curate.run() does) and
run it, show its plan (--dry-run), or check it without running it. Heavy packages are imported
inside the commands, so `curate --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from curate import cli_errors
from curate.cli_console import out
from curate.cli_errors import handle_errors


def _load(recipe: Path, overrides, input_path=None, output_path=None):
    from curate.api import load_recipe  # as curate.run() loads it

    return load_recipe(recipe, overrides or [], input_path, output_path)


def _engines() -> str:
    """The registry's engines, for --engine's help (a bracket escaped from rich's markup)."""
    from curate.engine.work import engines

    return engines.described().replace("[", "\\[")


@handle_errors
def run(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    input: Optional[str] = typer.Option(None, "--input", "-i", help="Replace the recipe's input.path."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Replace the recipe's output.path."),
    set_: Optional[List[str]] = typer.Option(
        None, "--set", help="Override a recipe value: key.path=value (repeatable)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run in the same output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output."),
    workers: Optional[int] = typer.Option(
        None, "--workers", "-w", min=1, help="Worker processes (default: one per core)."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Process only the first N input rows."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Check the recipe against the input's first batch and show the plan; process nothing, write nothing.",
    ),
    keep_work: bool = typer.Option(False, "--keep-work", help="Keep the _work directory after success."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: print the plan as JSON."),
    engine: str = typer.Option("local", "--engine", help=f"What runs the tasks: {_engines()}."),
    address: Optional[str] = typer.Option(
        None,
        "--address",
        help="With --engine ray: the cluster's address "
        "(host:port, or auto); default: a Ray instance "
        "started for the run.",
    ),
    work_store: Optional[str] = typer.Option(
        None,
        "--work-store",
        help="An fsspec URI (s3://BUCKET/PREFIX, "
        "gs://...) the tasks copy the run's work files to as they finish: "
        "with --engine ray or slurm, for nodes that do not see the output directory; "
        "with an output at a URI, so that --resume continues the run on "
        "another machine.",
    ),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write report.html at the end."),
    submit: bool = typer.Option(
        False,
        "--submit",
        help="With --engine slurm: send the run's driver to Slurm as a "
        "small job (sbatch; its script and log in ./curate-slurm/) and return, so that "
        "this machine (a login node) runs nothing heavy; inside an allocation "
        "(SLURM_JOB_ID set), run it as an srun step of it instead and wait.",
    ),
    progress_seconds: float = typer.Option(
        30.0,
        "--progress-seconds",
        min=0.1,
        envvar="CURATE_PROGRESS_SECONDS",
        help="When stderr is no terminal (nohup, Slurm): a progress line every this many seconds.",
    ),
) -> None:
    """Run a recipe, print the per-step funnel and write report.html."""
    from curate import preflight
    from curate.engine.work import engines
    from curate.errors import CurateError

    try:
        engines.check(engine, address)
    except CurateError as e:
        raise typer.BadParameter(str(e)) from None
    if submit and engine != "slurm":
        raise typer.BadParameter("--submit sends the driver to Slurm: it is for --engine slurm", param_hint="--submit")
    r = _load(recipe, set_, input, output)
    driver_args = None  # --submit: the driver's `curate run` arguments
    if submit:
        driver_args = [
            str(recipe),
            *(["--input", input] if input else []),
            *(["--output", output] if output else []),
            *[a for s in set_ or [] for a in ("--set", s)],
            *(["--resume"] if resume else []),
            *(["--overwrite"] if overwrite else []),
            *(["--workers", str(workers)] if workers else []),
            *(["--limit", str(limit)] if limit else []),
            *(["--keep-work"] if keep_work else []),
            *(["--work-store", work_store] if work_store else []),
            *(["--no-report"] if no_report else []),
            "--progress-seconds",
            str(progress_seconds),
            "--engine",
            "slurm",
        ]
    if driver_args is not None and not dry_run:  # --submit
        _submit_driver(r, driver_args)
        return
    if resume and not _to_hub(r) and _finished(r):  # a Hub output's finished run is published by the runner
        if not no_report and not _on_store(r) and not (Path(r.output.path) / "report.html").is_file():
            _report_after_run(Path(r.output.path))  # the run was interrupted while it was written
        return
    if dry_run:
        _show_plan(r, preflight.check(r), limit, as_json, workers or 0, engine, driver_args)
        return
    from curate.api import execute
    from curate.engine.run.runner import RunOptions
    from curate.progress import funnel_table
    from curate.trace import emptied_by
    from curate.words import count

    opts = RunOptions(
        workers=workers or 0,
        resume=resume,
        overwrite=overwrite,
        limit=limit,
        keep_work=keep_work,
        engine=engine,
        address=address,
        work_store=work_store,
        report=not no_report,
    )
    # what curate.run() runs too: the manifest, saying for a Hub output where it went (hub, run_dir)
    manifest = execute(r, opts, cli_errors.err, progress_seconds)
    staged = Path(manifest.run_dir) if _to_hub(r) and manifest.run_dir else None  # a Hub output's run

    out.print(funnel_table(manifest))
    if _to_hub(r):
        published = manifest.hub
        assert published is not None and staged is not None  # the runner says both for every Hub output
        state = "held it already" if published["already"] else f"commit {published['commit']}"
        if published.get("retries"):
            state += f", {published['retries']} Hub requests retried"
        out.print(
            f"published {count(manifest.rows_out, 'row')} to {r.output.path} ({state}): {published['url']}; "
            f"the run: {staged}",
            soft_wrap=True,
        )
    else:
        data = f"{r.output.path.rstrip('/')}/data" if _on_store(r) else Path(r.output.path) / "data"
        out.print(
            f"wrote {count(manifest.rows_out, 'row')} to {data} "
            f"({count(manifest.data_files, 'file')}) in {manifest.seconds:.1f}s"
        )
    if manifest.duplicate_ids is not None:
        cli_errors.err.print(
            f"[bold yellow]warning:[/] {manifest.duplicate_ids.message} (manifest.json "
            f"duplicate_ids; input.on_duplicate_id: fail refuses them)",
            highlight=False,
        )
    empty_files = (manifest.steps[0].counts or {}).get("empty_files") if manifest.steps else None
    if empty_files:  # skipped, as input.on_bad_row: trace has it (fail refuses them)
        cli_errors.err.print(
            f"[bold yellow]warning:[/] {count(empty_files, 'input file')} "
            f"{'was' if empty_files == 1 else 'were'} empty (no rows) and skipped (manifest.json: "
            f"the read step's counts.empty_files; input.on_bad_row: fail refuses them)",
            highlight=False,
        )
    emptied = emptied_by([s.model_dump() for s in manifest.steps])
    if emptied:  # the recipe allows it (allow_empty: true), else the run stopped with an error
        cli_errors.err.print(f"[bold yellow]warning:[/] every row was removed: {emptied}", highlight=False)
    if not no_report and staged is not None:  # beside the run in its staging directory
        if not (staged / "report.html").is_file():
            _report_after_run(staged)
    elif not no_report and not _on_store(r):  # a store's was uploaded before its manifest (the runner's)
        _report_after_run(Path(r.output.path))


def _submit_driver(r, run_args: list[str]) -> None:
    """--submit: the driver as a Slurm job (or, inside an allocation, an srun step of it, waited for)."""
    from curate.engine.slurm.submit import submit_driver

    job, log = submit_driver(r, run_args, lambda line: cli_errors.err.print(line, markup=False, highlight=False))
    if log is None:  # ran here, as a step of the allocation: its exit status is the run's
        if job != "0":
            raise typer.Exit(int(job))
        return
    out.print(
        f"submitted the driver of {r.name} as Slurm job {job}; its log: {log} (tail -f it); its script: "
        f"{log.parent / 'driver.sh'}; scancel {job} stops the run and cancels its tasks",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )


def _on_store(r) -> bool:
    from curate.api import output_on_store

    return output_on_store(r)


def _to_hub(r) -> bool:
    """Whether the output is published to the Hugging Face Hub (hf://datasets/ORG/NAME)."""
    return r.output.path.startswith("hf://")


def _report_after_run(run_dir: Path) -> None:
    """The run succeeded: a report that cannot be written is a warning, never a failed run."""
    try:
        from curate.report.report import write_report

        path = write_report(run_dir)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, the run's data stands
        cli_errors.err.print(
            f"[bold yellow]warning:[/] report.html not written ({type(e).__name__}: {e}); "
            f"`curate report {run_dir}` tries again",
            highlight=False,
        )
        return
    out.print(f"report: {path}")


def _finished(r) -> bool:
    """On --resume, a run directory whose run finished: show its funnel and say so."""
    from curate.api import finished_run
    from curate.progress import funnel_table

    path = r.output.path
    manifest = finished_run(r)
    if manifest is None:
        return False
    out.print(funnel_table(manifest))
    out.print(f"{path} is already finished; nothing to do (--overwrite runs it again)")
    return True


def _show_plan(
    r,
    checked,
    limit: int | None,
    as_json: bool,
    workers: int,
    engine: str = "local",
    driver_args: list[str] | None = None,
) -> None:
    import json

    from curate import memory
    from curate.engine.tasks import plan
    from curate.words import count

    the_plan = plan.make(r.steps, checked.sources, limit, workers)
    on_slurm = None
    if engine == "slurm":  # what it would submit: its scripts and job arrays (sinfo, scontrol: nothing sent)
        from curate.engine.slurm.dry_run import dry_run

        on_slurm = dry_run(r, checked.sources, limit, workers, driver_args=driver_args)
    if as_json:
        print(
            json.dumps(
                {
                    **the_plan.describe(),
                    "memory_gb": memory.budget_gb(r.memory_gb),
                    **({"slurm": on_slurm} if on_slurm else {}),
                },
                indent=1,
            )
        )
        return
    sources = checked.sources
    out.print(f"[bold]{r.name}[/]: {count(len(sources), 'input file')} ({sources[0].format}, first: {sources[0].path})")
    if checked.schema is not None:
        out.print(f"  columns (first batch): {', '.join(checked.schema.names)}")
    for stage, tasks in zip(the_plan.stages, the_plan.tasks):
        names = [f"{s.label} ({s.op_class.kind})" for s in stage.all_steps] or ["(read and write)"]
        where = {"model": "model workers", "io": "cpu workers, async I/O"}.get(stage.resource_class, "cpu workers")
        tally = count(len(tasks), "task") if tasks is not None else f"a task per shard of stage {stage.index - 1}"
        out.print(f"  stage {stage.index} ({where}, {tally}): " + " -> ".join(names))
        if stage.global_step is not None:
            out.print(
                f"    fit of {stage.global_step.label}: memory budget {memory.describe(r.memory_gb)}, "
                f"spilling to disk past it"
            )
    out.print(f"  output: {r.output.path}")
    if on_slurm:
        from curate.engine.slurm.dry_run import show_dry_run

        show_dry_run(on_slurm, lambda line: out.print(line, markup=False, highlight=False, soft_wrap=True))
    out.print("  (--dry-run --json prints the whole plan: every task, its inputs and _ord offset)")


@handle_errors
def validate(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    input: Optional[str] = typer.Option(None, "--input", "-i", help="Replace the recipe's input.path."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Replace the recipe's output.path."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a recipe value: key.path=value."),
    no_data: bool = typer.Option(False, "--no-data", help="Check the recipe alone; do not look at its input."),
) -> None:
    """Check a recipe, its output path and its input, without running it.

    Checks operators, parameters and their values, that the models, tokenizers and files the
    steps name exist (also with --no-data), then that the output path can be a directory
    outside the input, that the input files exist, that each step's columns and SQL fit the schema
    of the input's first batch, and that the other files give the columns the steps read the same
    kinds of type (their schemas are read cheaply: Parquet footers, the first lines of JSONL)."""
    from curate import preflight
    from curate.errors import InputError
    from curate.words import count

    r = _load(recipe, set_, input, output)
    steps = f"{count(len(r.steps), 'step')}: {', '.join(s.name for s in r.steps) or 'none'}"
    preflight.check_paths(r)  # models and lists are the recipe's, not the input's: --no-data checks them too
    if no_data:
        out.print(f"ok: {recipe} ({steps}); input not checked (--no-data)", soft_wrap=True)
        return
    try:
        sources = preflight.inputs(r)
    except InputError as e:
        raise InputError(f"{e} (--no-data checks the recipe without its input)") from None
    checked = preflight.check(r, sources)
    against = f"the first batch of {checked.first.path}" if checked.first else "nothing: the input has no rows"
    out.print(
        f"ok: {recipe} ({steps}); {count(len(sources), 'input file')}; columns checked against {against}",
        soft_wrap=True,
    )
