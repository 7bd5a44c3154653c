"""The commands beside the runs: `curate ops` (the operators and their parameters), `curate demo`
(the demo corpus and the recipes' demo inputs) and `curate serve-mock` (a loopback OpenAI-compatible
server with injected faults)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from curate.cli_console import out
from curate.cli_errors import handle_errors


@handle_errors
def ops(name: Optional[str] = typer.Argument(None, help="An operator to describe.")) -> None:
    """List operators, or show one operator's parameters with types, defaults and docs."""
    from curate.describe import describe_operator, operator_list

    out.print(describe_operator(name) if name else operator_list())


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
