"""The `curate` command. Errors in recipes or data print a message and exit 2; bugs exit 1.

Heavy packages are imported inside the commands, so `curate --help` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from curate import cli_errors
from curate.cli_errors import handle_errors

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Curate training data: YAML recipes of operators over streamed Arrow batches.")
out = Console(width=None if sys.stdout.isatty() else 120)  # logs of batch jobs get full tables


@app.callback()
def _main(debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors.")) -> None:
    cli_errors.show_tracebacks = debug


def _load(recipe: Path, overrides, input_path=None, output_path=None):
    from curate import recipe as recipe_module

    return recipe_module.load(recipe, overrides=overrides or [], input_path=input_path, output_path=output_path)


@app.command()
@handle_errors
def run(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    input: Optional[str] = typer.Option(None, "--input", "-i", help="Replace the recipe's input.path."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Replace the recipe's output.path."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a recipe value: key.path=value (repeatable)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run in the same output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output."),
    workers: int = typer.Option(0, "--workers", "-w", help="Worker processes (default: one per core)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Process only the first N input rows."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and show the plan; read no data."),
    keep_work: bool = typer.Option(False, "--keep-work", help="Keep the _work directory after success."),
) -> None:
    """Run a recipe and print the per-step funnel."""
    r = _load(recipe, set_, input, output)
    if dry_run:
        _show_plan(r)
        return
    from curate.engine.runner import RunOptions
    from curate.progress import funnel_table, run_with_progress

    manifest = run_with_progress(r, RunOptions(workers=workers, resume=resume, overwrite=overwrite,
                                               limit=limit, keep_work=keep_work), cli_errors.err)

    out.print(funnel_table(manifest))
    out.print(f"wrote {manifest['rows_out']:,} rows to {Path(r.output.path) / 'data'} "
              f"({manifest['data_files']} files) in {manifest['seconds']:.1f}s")


def _show_plan(r) -> None:
    from curate.engine import plan
    from curate.io.sources import discover

    sources = discover(r.input.path, r.input.format, r.input.split)
    out.print(f"[bold]{r.name}[/]: {len(sources)} input files ({sources[0].format}, first: {sources[0].path})")
    for stage in plan.stages(r.steps):
        names = [f"{s.label} ({s.op_class.kind})" for s in stage.all_steps] or ["(read and write)"]
        out.print(f"  stage {stage.index}: " + " -> ".join(names))
    out.print(f"  output: {r.output.path}")


@app.command()
@handle_errors
def validate(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a recipe value: key.path=value."),
) -> None:
    """Check a recipe (operators, parameters, types) without reading data."""
    r = _load(recipe, set_)
    out.print(f"ok: {recipe} ({len(r.steps)} steps: {', '.join(s.name for s in r.steps) or 'none'})")


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
def demo(
    directory: Path = typer.Argument(Path("data/demo"), help="Where to write the demo corpus."),
    docs: int = typer.Option(20_000, help="Number of documents."),
    files: int = typer.Option(8, help="Number of JSONL.gz files."),
    seed: int = typer.Option(0, help="Random seed."),
    workers: int = typer.Option(1, "--workers", "-w", help="Processes writing files (same bytes whatever the number)."),
) -> None:
    """Generate the demo corpus (English-like documents with planted duplicates and junk)."""
    from curate.demo import generate

    paths = generate(directory, docs=docs, files=files, seed=seed, workers=workers)
    out.print(f"wrote {docs:,} documents to {len(paths)} files in {directory}")


def _subcommand_groups() -> None:
    """Command groups that live with their operators (they import only typer and rich at load)."""
    from operators.agent.cli import app as adp_app
    from operators.lake.cli import app as lake_app

    app.add_typer(adp_app, name="adp")
    app.add_typer(lake_app, name="lake")


_subcommand_groups()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
