"""`curate prompts`: the LLM operators' shipped prompts (operators/synth/prompts/), listed with the
parameter that replaces each, or one written out exactly, to start your own from:

    curate prompts show diverse_qa > my_qa.txt      # edit it, then in the recipe:
    - generate_qa: {template: '@my_qa.txt', llm: ...}
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from curate.cli_errors import handle_errors
from curate.errors import CurateError

app = typer.Typer(help="The LLM operators' shipped prompts: list them, or write one out to start your own.",
                  no_args_is_help=True)


@app.command("list")
@handle_errors
def list_prompts() -> None:
    """Each shipped prompt: its name, the operator parameter that replaces it, where it comes from."""
    from curate_operators.synth.prompts import CATALOG

    width = max(len(name) for name in CATALOG) + 2
    replaced = max(len(parameter) for parameter, _ in CATALOG.values()) + 2
    console = Console(soft_wrap=True, highlight=False)  # one line a prompt, however narrow the terminal
    for name, (parameter, source) in CATALOG.items():
        console.print(f"{name:<{width}}{parameter:<{replaced}}{source}", markup=False)


@app.command("show")
@handle_errors
def show(name: str = typer.Argument(..., help="A prompt's name (`curate prompts list`).")) -> None:
    """Write a shipped prompt to stdout exactly as its file holds it (no newline added), so that
    `> file` gives the prompt itself."""
    from curate_operators.synth.prompts import CATALOG, read

    if name not in CATALOG:
        raise CurateError(f"no shipped prompt {name!r}; known: {', '.join(CATALOG)}")
    sys.stdout.write(read(name))
