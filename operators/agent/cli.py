"""`curate adp`: convert raw agent datasets to ADP, validate ADP files, export ADP to SFT formats.

Inputs are JSON, JSONL or Parquet; outputs JSONL or Parquet (by extension). Rejected records
go to `<output>.rejected.jsonl` with their reasons; the counts are printed. A conversion that
writes no trajectory, and a validation that finds invalid ones, exit 2 (a problem with the data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from curate.cli_errors import handle_errors
from curate.errors import CurateError

app = typer.Typer(help="Agent Data Protocol: convert agent datasets to ADP, validate, export to SFT formats.",
                  no_args_is_help=True)
_out = Console(soft_wrap=True)


class NothingConverted(CurateError):
    """`adp convert` wrote no trajectory, usually a wrong --from for the file: exit 2, not an empty success."""


class InvalidTrajectories(CurateError):
    """`adp validate` found trajectories that break the ADP schema (exit 2: a problem with the data)."""


def _report(counts, output: Path | None, what: str) -> None:
    from operators.agent.stream import rejected_path

    _out.print(f"read {counts.read:,} records, wrote {counts.written:,} {what}"
               + (f" to {output}" if output else ""), highlight=False)
    if counts.rejected:
        where = f" (see {rejected_path(output)})" if output else ""
        _out.print(f"rejected {counts.rejected:,} ({counts.reasons_text()}){where}", highlight=False)


@app.command()
@handle_errors
def convert(
    input: Path = typer.Argument(..., help="Raw dataset file (.json, .jsonl or .parquet)."),
    source: str = typer.Option(..., "--from", help="Source dataset converter (see `curate adp sources`)."),
    output: Path = typer.Option(..., "-o", "--output", help="ADP output (.jsonl or .parquet)."),
):
    """Convert a raw agent dataset to ADP trajectories."""
    from operators.agent.stream import convert_file, rejected_path

    counts = convert_file(source, input, output)
    _report(counts, output, "trajectories")
    if not counts.read:
        raise NothingConverted(f"{input}: no records to convert")
    if not counts.written:
        raise NothingConverted(f"{input}: no record converted with --from {source} (0 of {counts.read:,}); "
                               f"{counts.reasons_text()}; first, {counts.first} (all in {rejected_path(output)})")


@app.command()
@handle_errors
def export(
    input: Path = typer.Argument(..., help="ADP trajectories (.json, .jsonl or .parquet)."),
    style: str = typer.Option(..., "--to", help="SFT style: openhands, sweagent or agentlab."),
    output: Path = typer.Option(..., "-o", "--output", help="SFT output (.jsonl or .parquet)."),
    system_prompt: Optional[Path] = typer.Option(None, "--system-prompt", help="System prompt file (default: ours)."),
    environment: Optional[str] = typer.Option(None, "--env", help="API environment: a shipped name (usually the "
                                              "source dataset, see `curate adp sources`) or a JSON file."),
    web: Optional[bool] = typer.Option(None, "--web/--no-web", help="Treat the data as web browsing "
                                       "(default: from the environment)."),
):
    """Render ADP trajectories as SFT conversations in a framework's style."""
    from operators.agent.stream import export_file

    counts = export_file(style, input, output, str(system_prompt) if system_prompt else None, environment, web)
    _report(counts, output, "samples")


@app.command()
@handle_errors
def validate(
    input: Path = typer.Argument(..., help="ADP trajectories (.json, .jsonl or .parquet)."),
    rejected: Optional[Path] = typer.Option(None, "--rejected", help="Write invalid records with reasons here."),
):
    """Check ADP trajectories against the schema; exits 2 when any is invalid."""
    from operators.agent.stream import validate_file

    counts, first = validate_file(input, rejected)
    for line in first:
        _out.print(line, highlight=False, markup=False)
    _out.print(f"{counts.written:,} valid, {counts.rejected:,} invalid of {counts.read:,}", highlight=False)
    if counts.rejected:
        where = f"all in {rejected}" if rejected else "the first are listed above"
        raise InvalidTrajectories(f"{input}: {counts.rejected:,} of {counts.read:,} trajectories are not valid ADP "
                                  f"({where}); first, {counts.first}")


@app.command()
@handle_errors
def demo(
    directory: Path = typer.Argument(Path("data/agent"), help="Where to write the demo (recipes/agent-sft.yaml "
                                     "reads data/agent/*.jsonl)."),
    trajectories: int = typer.Option(200, help="Number of sessions, before the planted copies and empty records."),
    seed: int = typer.Option(0, help="Random seed."),
):
    """Write demo agent trajectories (raw AgentInstruct OS records, made up) for recipes/agent-sft.yaml."""
    from operators.agent.demo import generate

    path = generate(directory, trajectories=trajectories, seed=seed)
    _out.print(f"wrote {trajectories:,} agent sessions (and planted copies and empty records) to {path}",
               highlight=False)


@app.command()
def sources():
    """List the source converters, SFT styles and shipped API environments."""
    from operators.agent import converters, environments
    from operators.agent.exporters import STYLES

    _out.print("sources: " + ", ".join(converters.names()), highlight=False)
    _out.print("styles: " + ", ".join(sorted(STYLES)), highlight=False)
    _out.print("environments: " + ", ".join(environments.names()), highlight=False)
