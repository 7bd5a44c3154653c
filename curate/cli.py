"""The `curate` command. Errors in recipes or data print a message and exit 2; bugs exit 1.

Heavy packages are imported inside the commands, so `curate --help` stays fast.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, cast

import typer
from rich.console import Console
from typer.core import TyperGroup, TyperOption

from curate import cli_errors, plugins
from curate.cli_errors import handle_errors

if TYPE_CHECKING:
    from typer._click.core import Context  # typer vendors click: its Context, not click's


class _Commands(TyperGroup):
    """curate's own commands, then the command groups packages register in the `curate.commands`
    entry points (`curate adp`, `curate lake`). A group is imported only when it is run or a
    listing (--help, shell completion) needs its help, so `curate run` imports none of them."""

    def list_commands(self, ctx: Context) -> list[str]:
        own = super().list_commands(ctx)
        return own + [name for name in plugins.registered(plugins.COMMANDS) if name not in own]

    def get_command(self, ctx: Context, name: str):
        own = super().get_command(ctx, name)  # a plugin cannot replace one of curate's commands
        if own is not None or name not in plugins.registered(plugins.COMMANDS):
            return _own_options(own, self)
        return _own_options(_command_group(name), self)

    def resolve_command(self, ctx: Context, args: list[str]):
        if args and self.get_command(ctx, args[0]) is None:
            # No such command: Typer's "Did you mean ...?" looks in self.commands only.
            self.commands.update(
                {
                    name: _command_group(name)
                    for name in plugins.registered(plugins.COMMANDS)
                    if name not in self.commands
                }
            )
        return super().resolve_command(ctx, args)


def _flag_type(display_type_rich):
    """Typer's help shows each option's type, `<bool>` for a flag (--resume, --help), which takes
    no value: show none for flags."""

    def shown(self, ctx):
        return None if getattr(self, "is_flag", False) else display_type_rich(self, ctx)

    shown.flags_untyped = True
    return shown


if not getattr(TyperOption.display_type_rich, "flags_untyped", False):
    # a deliberate patch of Typer's help rendering (a method replaced on the class)
    TyperOption.display_type_rich = _flag_type(TyperOption.display_type_rich)  # type: ignore[method-assign]


def _debug(ctx, param, value: bool) -> None:
    if value:
        cli_errors.show_tracebacks = True


def _own_options(command, root):
    """`command` and the commands under it take --debug after their name too, as `curate --debug`
    (errors say "run with --debug")."""
    import copy

    if command is None:
        return None
    if not any("--debug" in p.opts for p in command.params):
        debug = copy.copy(next(p for p in root.params if "--debug" in p.opts))  # `curate --debug`'s, as built
        debug.callback, debug.expose_value, debug.is_eager = _debug, False, True
        debug.help = "Show tracebacks of errors (as curate --debug does)."
        command.params.append(debug)
    for sub in getattr(command, "commands", {}).values():
        _own_options(sub, root)
    return command


@lru_cache(maxsize=None)
def _command_group(name: str):
    """The registered group `name` as a command; one that does not load becomes a command that
    says why (a package installed without its code, an import error in it), not a traceback."""
    ep = plugins.registered(plugins.COMMANDS)[name]
    try:
        target = ep.load()
        if not isinstance(target, typer.Typer):
            raise TypeError(f"it is a {type(target).__name__}, not a Typer app")
        # Mounted as app.add_typer(target, name=name) would: named so, and without a group's
        # own --install-completion (that belongs to `curate` itself).
        host = typer.Typer(add_completion=False)
        host.add_typer(target, name=name)
        return cast(TyperGroup, typer.main.get_command(host)).commands[name]  # a Typer with a group: a TyperGroup
    except Exception as e:  # noqa: BLE001 - whatever a broken package raises, the rest of curate works
        return _unavailable(name, ep, e)


def _unavailable(name: str, ep, error: Exception):
    why = f"{type(error).__name__}: {error}"
    stub = typer.Typer(add_completion=False)

    # No options of its own and any arguments accepted, so `curate NAME ... --help` explains too.
    @stub.command(
        name=name,
        help=f"(unavailable: {why})",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def explain() -> None:
        if cli_errors.show_tracebacks:
            import traceback

            cli_errors.err.print("".join(traceback.format_exception(error)), markup=False, highlight=False)
        cli_errors.err.print(
            f"[bold red]error:[/] `curate {name}` is unavailable: {plugins.origin(ep)} does not "
            f"load ({why}); reinstall or uninstall that package",
            highlight=False,
        )
        raise typer.Exit(1)

    return typer.main.get_command(stub)


app = typer.Typer(
    cls=_Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Curate training data: YAML recipes of operators over streamed Arrow batches.",
)
out = Console(width=None if sys.stdout.isatty() else 120)  # logs of batch jobs get full tables


def _version(value: bool) -> None:
    if value:
        from curate import __version__

        out.print(f"curate {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    cli_errors.show_tracebacks = debug


def _load(recipe: Path, overrides, input_path=None, output_path=None):
    from curate.api import load_recipe  # as curate.run() loads it

    return load_recipe(recipe, overrides or [], input_path, output_path)


def _engines() -> str:
    """The registry's engines, for --engine's help (a bracket escaped from rich's markup)."""
    from curate.engine.work import engines

    return engines.described().replace("[", "\\[")


@app.command()
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
    from curate.manifest import Manifest
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
    # what curate.run() runs too: the manifest, and for a Hub output where it went (hub, run_dir)
    result = execute(r, opts, cli_errors.err, progress_seconds)
    manifest = Manifest.model_validate(result)

    out.print(funnel_table(manifest))
    if _to_hub(r):
        published = result["hub"]
        state = "held it already" if published["already"] else f"commit {published['commit']}"
        if published.get("retries"):
            state += f", {published['retries']} Hub requests retried"
        out.print(
            f"published {count(manifest.rows_out, 'row')} to {r.output.path} ({state}): {published['url']}; "
            f"the run: {result['run_dir']}",
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
    if not no_report and _to_hub(r):  # beside the run in its staging directory
        if not (Path(result["run_dir"]) / "report.html").is_file():
            _report_after_run(Path(result["run_dir"]))
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


@app.command()
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


@app.command()
@handle_errors
def ops(name: Optional[str] = typer.Argument(None, help="An operator to describe.")) -> None:
    """List operators, or show one operator's parameters with types, defaults and docs."""
    from curate.describe import describe_operator, operator_list

    out.print(describe_operator(name) if name else operator_list())


@app.command()
@handle_errors
def inspect(path: Path = typer.Argument(..., help="A Parquet file, directory of Parquet, or a run directory.")) -> None:
    """Schema, row count and per-column summary of a Parquet dataset or run directory."""
    from curate.describe import inspect_path

    for renderable in inspect_path(path):
        out.print(renderable)


@app.command()
@handle_errors
def report(
    run_dir: Path = typer.Argument(..., help="A finished run directory (with manifest.json)."),
    by: str = typer.Option(
        None,
        "--by",
        metavar="COLUMN",
        help="Also break rows kept and removed down by this column's values (default: the recipe's report.by).",
    ),
    by_domain: str = typer.Option(
        None,
        "--by-domain",
        metavar="COLUMN",
        help="Also break them down by the domain of the URL in this column (default: the recipe's report.by_domain).",
    ),
) -> None:
    """Write RUN_DIR/report.html: funnel, lengths, sources, removal reasons with samples, duplicates, QDC."""
    from curate.report.report import write_report

    out.print(f"wrote {write_report(run_dir, by, by_domain)}")


@app.command()
@handle_errors
def card(
    run_dir: Path = typer.Argument(..., help="A finished run directory (with manifest.json)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Where to write it (default: RUN_DIR/README.md)."
    ),
    license: Optional[str] = typer.Option(
        None, "--license", help="The licence id (default: the recipe's output.hub.license)."
    ),
    language: Optional[List[str]] = typer.Option(
        None,
        "--language",
        help="A language code (repeatable; "
        "default: the recipe's output.hub.language, else those a "
        "language_id step keeps).",
    ),
    task_category: Optional[List[str]] = typer.Option(
        None, "--task-category", help="A task category (repeatable; default: text-generation)."
    ),
    pretty_name: Optional[str] = typer.Option(None, "--pretty-name", help="The title (default: the recipe's name)."),
) -> None:
    """Write the run's dataset card: README.md with the Hugging Face Hub's YAML front matter (configs
    and data_files, license, language, size), the funnel with reasons, tokens, QDC metrics, the
    recipe as run, lineage and how to reproduce it; `datasets.load_dataset(RUN_DIR)` then reads data/."""
    from curate.card import write_card

    path = write_card(
        run_dir,
        output,
        license=license,
        language=language or None,
        task_categories=task_category or None,
        pretty_name=pretty_name,
    )
    out.print(f"wrote {path}")


@app.command()
@handle_errors
def demo(
    directory: Path = typer.Argument(Path("data/demo"), help="Where to write the demo corpus."),
    docs: int = typer.Option(20_000, help="Number of documents."),
    files: int = typer.Option(8, help="Number of JSONL.gz files."),
    seed: int = typer.Option(0, help="Random seed."),
    workers: int = typer.Option(1, "--workers", "-w", help="Processes writing files (same bytes whatever the number)."),
    for_recipe: Optional[str] = typer.Option(
        None,
        "--for",
        help="Write instead the demo input of a recipe that the corpus does not feed as it is: "
        "sft-qdc (DIR/sft.jsonl), decontaminate (DIR/gsm8k.jsonl, DIR/mmlu.jsonl, from the corpus in --corpus), "
        "wrap (DIR/web.jsonl) or ablate (DIR/crawl/, the corpus at a raw crawl's junk and duplicate rates, and "
        "DIR/heldout.jsonl, clean held-out text: --docs, --files, --seed apply).",
    ),
    corpus: Path = typer.Option(
        Path("data/demo"),
        help="With --for decontaminate: the demo corpus the benchmark "
        "items are taken from (generated there first if missing).",
    ),
) -> None:
    """Generate the demo corpus (English-like documents with planted duplicates and junk), or
    with --for, a recipe's demo input."""
    from curate.demo import generate
    from curate.words import count

    if for_recipe is not None:
        from curate.demo_inputs import write

        paths = write(for_recipe, directory, seed=seed, corpus=corpus, docs=docs, files=files, workers=workers)
        out.print(f"wrote the {for_recipe} demo input: {', '.join(str(p) for p in paths)}")
        return
    paths = generate(directory, docs=docs, files=files, seed=seed, workers=workers)
    out.print(f"wrote {count(docs, 'document')} to {count(len(paths), 'file')} in {directory}")


@app.command("serve-mock")
@handle_errors
def serve_mock(
    port: int = typer.Option(8000, help="Port on 127.0.0.1."),
    model: Optional[List[str]] = typer.Option(None, "--model", help="Model names it serves (default: mock)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Require this bearer key (default: none)."),
    fault_rate: float = typer.Option(0.0, min=0.0, max=1.0, help="Share of requests given a fault."),
    faults: str = typer.Option("timeout,429,500,malformed,truncated", help="Faults to draw from, comma-separated."),
    retry_after: float = typer.Option(1.0, help="Retry-After of its 429s (seconds)."),
    stall_s: float = typer.Option(30.0, help="How long a `timeout` fault keeps the client waiting."),
    seed: int = typer.Option(0, help="Seed of the fault draws."),
) -> None:
    """A loopback OpenAI-compatible chat server answering at once, with injected faults: for dry
    runs of LLM recipes (base_url http://127.0.0.1:PORT/v1) and tests. GET /stats counts requests."""
    from curate.errors import CurateError
    from curate.llm.mock_server import FAULTS, serve

    chosen = [f.strip() for f in faults.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FAULTS]
    if unknown:
        raise CurateError(f"--faults: unknown fault {unknown[0]!r}; known: {', '.join(FAULTS)}")
    out.print(
        f"mock LLM on http://127.0.0.1:{port}/v1 (models: {', '.join(model or ['mock'])}, fault rate {fault_rate})",
        highlight=False,
    )
    serve(
        port=port,
        models=model or ["mock"],
        api_key=api_key,
        fault_rate=fault_rate,
        faults=chosen,
        retry_after=retry_after,
        stall_s=stall_s,
        seed=seed,
    )


from curate.ablate.command import ablate as _ablate  # noqa: E402 - only typer is imported there

app.command("ablate")(_ablate)


def main() -> None:
    from curate import interrupts, omp_wait

    interrupts.install()  # before anything is imported or parsed: a signal at any point ends cleanly
    omp_wait.spin_briefly()  # before faiss or torch loads libgomp
    try:
        _log_level()
        app()
    except KeyboardInterrupt as e:  # outside a command (while parsing its options, say)
        _exit(interrupts.report(e.args[0] if e.args else None))
    except SystemExit as e:
        _exit(e.code)


LOG_LEVEL = "CURATE_LOG_LEVEL"


def _log_level() -> None:
    """CURATE_LOG_LEVEL (DEBUG, INFO, ...): curate's and its operators' log lines on stderr at that
    level, with their time (a Global step's fit says its phases: signed, candidate pairs,
    verified); unset, only warnings. Other libraries' loggers stay at warnings."""
    import logging
    import os

    level = os.environ.get(LOG_LEVEL, "").strip().upper()
    if not level:
        return
    if not isinstance(logging.getLevelName(level), int):
        print(
            f"{LOG_LEVEL}={os.environ[LOG_LEVEL]!r} is not a log level (DEBUG, INFO, WARNING, ERROR)", file=sys.stderr
        )
        raise SystemExit(2)
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    for name in ("curate", "curate_operators", "curate_lake"):
        logging.getLogger(name).setLevel(level)


def _exit(code) -> None:
    """End the process with `code` (a SystemExit's) once the command is done: the atexit hooks
    run (stores' sessions closed, multiprocessing's helpers stopped) and the output is flushed,
    but the interpreter's finalization after them is skipped. It changes nothing on disk and took
    0.5-0.6 s of every `curate run` that read S3 (freeing every module and object, the AWS SDK's
    shutdown) while the shell or batch job waited. A thread the command left running (not a
    daemon) is waited for as Python does, by exiting normally."""
    import atexit
    import os
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, exit 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (| head), a closed stream
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()
