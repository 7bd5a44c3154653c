"""`curate adp`: convert raw agent datasets to ADP, validate ADP files, export ADP to SFT formats.

Each command runs a one-step recipe (commands.py) with the runner of `curate run`: inputs are
JSON (lines or an array), JSONL or Parquet; `-o` is the run directory (data/ in --format jsonl or
parquet, trace/ with every rejected record and its reason, manifest.json). A conversion that
writes no trajectory, and a validation that finds invalid ones, exit 2 (a problem with the data).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from curate.cli_errors import handle_errors
from curate.errors import CurateError

if TYPE_CHECKING:
    from curate.manifest import Manifest

app = typer.Typer(help="Agent Data Protocol: convert agent datasets to ADP, validate, export to SFT formats.",
                  no_args_is_help=True)
_out = Console(soft_wrap=True)

_FORMAT = typer.Option("jsonl", "--format", help="Data files of the run: jsonl or parquet.")
_BATCH_ROWS = typer.Option(8192, "--batch-rows", min=1, help="Records per batch (the output does not depend on it).")
_WORKERS = typer.Option(None, "--workers", "-w", min=1, help="Worker processes (default: one per core).")
_OVERWRITE = typer.Option(False, "--overwrite", help="Replace an existing run directory.")
_SHOW = typer.Option(False, "--show-recipe", help="Print the recipe this command runs (for `curate run`) and stop.")


class InvalidTrajectories(CurateError):
    """`adp validate` found trajectories that break the ADP schema (exit 2: a problem with the data)."""


def _go(doc: dict, show: bool, workers: int | None, overwrite: bool) -> Manifest | None:
    from curate_operators.agent.commands import as_yaml, check_output, run

    if show:
        print(as_yaml(doc), end="")
        return None
    check_output(Path(doc["output"]["path"]))
    return run(doc, workers, overwrite)


def _report(manifest: Manifest, output: Path, what: str) -> int:
    """Print what the run read, wrote and rejected; returns the number rejected."""
    from curate_operators.agent.commands import removed

    _, reasons = removed(manifest)
    joined = reasons.pop("merged", 0)  # per-step records joined into their trajectory: not rejected
    rejected = sum(reasons.values())
    _out.print(f"read {manifest.rows_in:,} records, wrote {manifest.rows_out:,} {what} to {output / 'data'}"
               + (f" ({joined:,} step records joined into their trajectories)" if joined else ""), highlight=False)
    if rejected:
        listed = ", ".join(f"{r}: {n:,}" for r, n in sorted(reasons.items()))
        _out.print(f"rejected {rejected:,} ({listed}); each with its reason in {output / 'trace'}", highlight=False)
    return rejected


@app.command()
@handle_errors
def convert(
    input: Path = typer.Argument(..., help="Raw dataset file or directory (.json, .jsonl or .parquet)."),
    source: str = typer.Option(..., "--from", help="Source dataset converter (see `curate adp sources`)."),
    output: Path = typer.Option(..., "-o", "--output", help="Run directory (data/, trace/, manifest.json)."),
    fmt: str = _FORMAT, batch_rows: int = _BATCH_ROWS, workers: Optional[int] = _WORKERS,
    overwrite: bool = _OVERWRITE, show_recipe: bool = _SHOW,
):
    """Convert a raw agent dataset to ADP trajectories (validated)."""
    from curate_operators.agent.commands import convert_recipe

    manifest = _go(convert_recipe(source, input, output, fmt, batch_rows), show_recipe, workers, overwrite)
    if manifest is not None:
        _report(manifest, output, "trajectories")


@app.command()
@handle_errors
def export(
    input: Path = typer.Argument(..., help="ADP trajectories (.json, .jsonl or .parquet; a conversion's data/)."),
    style: str = typer.Option(..., "--to", help="SFT style: openhands, sweagent or agentlab."),
    output: Path = typer.Option(..., "-o", "--output", help="Run directory (data/, trace/, manifest.json)."),
    system_prompt: Optional[Path] = typer.Option(None, "--system-prompt", help="System prompt file (default: ours)."),
    environment: Optional[str] = typer.Option(None, "--env", help="API environment: a shipped name (usually the "
                                              "source dataset, see `curate adp sources`) or a JSON file."),
    web: Optional[bool] = typer.Option(None, "--web/--no-web", help="Treat the data as web browsing "
                                       "(default: from the environment)."),
    fmt: str = _FORMAT, batch_rows: int = _BATCH_ROWS, workers: Optional[int] = _WORKERS,
    overwrite: bool = _OVERWRITE, show_recipe: bool = _SHOW,
):
    """Render ADP trajectories as SFT conversations in a framework's style."""
    from curate_operators.agent.commands import export_recipe

    doc = export_recipe(input, output, fmt, batch_rows, style, str(system_prompt) if system_prompt else None,
                        environment, web)
    manifest = _go(doc, show_recipe, workers, overwrite)
    if manifest is not None:
        _report(manifest, output, "samples")


@app.command()
@handle_errors
def validate(
    input: Path = typer.Argument(..., help="ADP trajectories (.json, .jsonl or .parquet; a conversion's data/)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Keep the run directory here: its trace/ "
                                          "holds each invalid trajectory with the error (default: not kept)."),
    batch_rows: int = _BATCH_ROWS, workers: Optional[int] = _WORKERS, overwrite: bool = _OVERWRITE,
    show_recipe: bool = _SHOW,
):
    """Check ADP trajectories against the schema; exits 2 when any is invalid."""
    import shutil
    import tempfile

    from curate_operators.agent.commands import first_removed, removed, validate_recipe

    run_dir = output or Path(tempfile.mkdtemp(prefix="curate-adp-validate-")) / "run"
    try:
        manifest = _go(validate_recipe(input, run_dir, batch_rows), show_recipe, workers, overwrite)
        if manifest is None:
            return
        bad, _ = removed(manifest)
        for line in first_removed(run_dir, 20):
            _out.print(line, highlight=False, markup=False)
    finally:
        if output is None:
            shutil.rmtree(run_dir.parent, ignore_errors=True)
    _out.print(f"{manifest.rows_out:,} valid, {bad:,} invalid of {manifest.rows_in:,}", highlight=False)
    if bad:
        where = f"all in {output / 'trace'}" if output else "the first are listed above"
        raise InvalidTrajectories(f"{input}: {bad:,} of {manifest.rows_in:,} trajectories are not valid ADP "
                                  f"({where})")


@app.command()
@handle_errors
def demo(
    directory: Path = typer.Argument(Path("data/agent"), help="Where to write the demo (recipes/agent-sft.yaml "
                                     "reads data/agent/*.jsonl)."),
    trajectories: int = typer.Option(200, help="Number of sessions, before the planted copies and empty records."),
    seed: int = typer.Option(0, help="Random seed."),
):
    """Write demo agent trajectories (raw AgentInstruct OS records, made up) for recipes/agent-sft.yaml."""
    from curate_operators.agent.demo import generate

    path = generate(directory, trajectories=trajectories, seed=seed)
    _out.print(f"wrote {trajectories:,} agent sessions (and planted copies and empty records) to {path}",
               highlight=False)


@app.command()
def sources():
    """List the source converters with what each needs, the SFT styles and shipped API environments."""
    from curate_operators.agent import converters, environments
    from curate_operators.agent.exporters import STYLES

    _out.print("sources (--from), and what each needs:", highlight=False)
    for name in converters.names():
        _out.print(f"  {name}: {converters.get(name).requirements()}", highlight=False, markup=False)
    _out.print("styles: " + ", ".join(sorted(STYLES)), highlight=False)
    _out.print("environments: " + ", ".join(environments.names()), highlight=False)
