"""The commands that read a finished run, or any Parquet dataset: `curate inspect` (its schema and
columns), `curate report` (report.html) and `curate card` (the dataset card, README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from curate.cli_console import out
from curate.cli_errors import handle_errors


@handle_errors
def inspect(path: Path = typer.Argument(..., help="A Parquet file, directory of Parquet, or a run directory.")) -> None:
    """Schema, row count and per-column summary of a Parquet dataset or run directory."""
    from curate.describe import inspect_path

    for renderable in inspect_path(path):
        out.print(renderable)


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
