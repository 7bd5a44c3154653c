"""`curate ablate ARM ARM [ARM...]`: the Typer command (registered in curate/cli.py). Only typer
is imported here; torch and transformers load when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from curate.cli_errors import handle_errors


@handle_errors
def ablate(
    arms: Optional[List[str]] = typer.Argument(
        None, help="Arms: a run directory, a data path or glob, or a recipe (run first); NAME=PATH names one."
    ),
    recipe: Optional[str] = typer.Option(
        None, "--recipe", help="R.yaml: R's input vs R's output (arms 'input' and 'output'; R is run first)."
    ),
    output: Path = typer.Option(
        Path("ablation"), "--output", "-o", help="Where ablation.json, ablation.html, the samples and checkpoints go."
    ),
    tokens: int = typer.Option(
        524_288, "--tokens", min=1, help="Training tokens per arm (exactly; a multiple of --seq-len)."
    ),
    allow_repeat: bool = typer.Option(
        False, "--allow-repeat", help="Let an arm with fewer tokens repeat (epochs are counted in the result)."
    ),
    model: str = typer.Option(
        "tiny",
        "--model",
        help="tiny (~1M params), small (~20M), base (~150M, a GPU), or a transformers config JSON file.",
    ),
    seeds: int = typer.Option(3, "--seeds", min=1, help="Seeds per arm (the same seeds for every arm)."),
    lr: Optional[List[float]] = typer.Option(
        None,
        "--lr",
        help="Peak learning rate (default: the OLMo "
        "ladder's for the model's size / 4; tiny: 5.9e-3); repeat it to "
        "see whether the ranking holds at a smaller one (arXiv 2512.24503).",
    ),
    seq_len: int = typer.Option(128, "--seq-len", min=2, help="Sequence length (tokens)."),
    batch: int = typer.Option(16, "--batch", min=1, help="Sequences per optimizer step."),
    accum: int = typer.Option(1, "--accum", min=1, help="Gradient accumulation: micro-batches per step."),
    warmup: float = typer.Option(0.1, "--warmup", min=0.0, max=1.0, help="Share of steps for linear warmup."),
    weight_decay: float = typer.Option(0.05, "--weight-decay", min=0.0, help="AdamW weight decay."),
    eval_text: Optional[List[str]] = typer.Option(
        None,
        "--eval-text",
        help="Held-out text for bits per byte: a .txt file or data in any input format (repeatable).",
    ),
    eval_mc: Optional[List[str]] = typer.Option(
        None, "--eval-mc", help="Multiple-choice JSONL: HellaSwag, ARC, PIQA or {context, choices, gold} (repeatable)."
    ),
    eval_tokens: int = typer.Option(50_000, "--eval-tokens", min=1, help="Tokens of each held-out text scored."),
    holdout: float = typer.Option(
        0.02,
        "--holdout",
        min=0.0,
        max=1.0,
        help="Share of documents (by content hash) no arm trains on; each arm's are also scored (bpb:heldout-ARM).",
    ),
    tokenizer: Optional[str] = typer.Option(
        None,
        "--tokenizer",
        help="tokenizer.json, a directory with one, or a hub id in the local cache (default: byte-level, built in).",
    ),
    eos: Optional[str] = typer.Option(
        None, "--eos", help="The token between documents (default: the tokenizer's end-of-text token)."
    ),
    text_column: Optional[str] = typer.Option(
        None, "--text-column", help="Column of the text (default: the recipe's, else text)."
    ),
    sample_seed: int = typer.Option(0, "--sample-seed", help="Seed of the documents' sampling order."),
    threads: int = typer.Option(
        1,
        "--threads",
        min=0,
        help="torch threads per run (0: the available cores); the same number gives the same numbers.",
    ),
    jobs: int = typer.Option(
        0,
        "--jobs",
        "-j",
        min=0,
        help="Runs (arm x seed) side by side on a CPU (0: the available cores / --threads); the numbers are the same.",
    ),
    device: str = typer.Option("auto", "--device", help="cpu, cuda, cuda:N, or auto."),
    alpha: float = typer.Option(0.05, "--alpha", min=0.0, max=1.0, help="Significance level of the verdicts."),
    metric: Optional[str] = typer.Option(
        None,
        "--metric",
        help="The metric --expect and the summary use "
        "(default: the first: --eval-text's bpb, else the first arm's held-out).",
    ),
    expect: Optional[str] = typer.Option(
        None, "--expect", help="'B>A': exit 1 unless arm B is significantly better than arm A on --metric (a CI gate)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted ablation in --output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier ablation in --output."),
    checkpoint_every: int = typer.Option(100, "--checkpoint-every", min=1, help="Steps between checkpoints."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, help="Workers of recipe arms' runs."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print model size, tokens, steps, FLOPs and the time at the measured speed; train nothing.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print ablation.json (or the --dry-run plan) to stdout."),
) -> None:
    """Train equal-token proxy LMs on each arm (several seeds) and say which data trains the better
    model, beyond seed noise: held-out bits per byte, multiple-choice likelihoods, a paired test."""
    import json

    from curate.ablate import results as results_module
    from curate.ablate.run import Options, ablate as run_ablation, parse_expect
    from curate.cli_console import out
    from curate.cli_errors import err

    opts = Options(
        arms=list(arms or []),
        output=output,
        recipe=recipe,
        tokens=tokens,
        allow_repeat=allow_repeat,
        model=model,
        seeds=seeds,
        lrs=list(lr or []),
        seq_len=seq_len,
        batch=batch,
        accum=accum,
        warmup=warmup,
        weight_decay=weight_decay,
        eval_text=list(eval_text or []),
        eval_mc=list(eval_mc or []),
        eval_tokens=eval_tokens,
        holdout=holdout,
        tokenizer=tokenizer,
        eos=eos,
        text_column=text_column,
        sample_seed=sample_seed,
        threads=threads,
        jobs=jobs,
        device=device,
        alpha=alpha,
        metric=metric,
        resume=resume,
        overwrite=overwrite,
        checkpoint_every=checkpoint_every,
        workers=workers,
        dry_run=dry_run,
        expect=expect,
    )

    def log(msg: str) -> None:
        err.print(msg, highlight=False, markup=False)

    result = run_ablation(opts, log)
    if dry_run:
        if as_json:
            out.print_json(json.dumps(result))
        else:
            out.print(
                f"arms {', '.join(result['arms'])}: {result['runs']} runs of {result['parameters']:,} parameters "
                f"({result['non_embedding_parameters']:,} without embeddings), {result['tokens_per_run']:,} "
                f"tokens and {result['steps_per_run']:,} steps each, {result['flops']:.3g} FLOPs; "
                f"{result['measured_tokens_per_s']:,.0f} tokens/s measured ({result['threads']} thread(s) per run, "
                f"{result['jobs']} run(s) at a time): about {result['estimated_seconds']:.0f}s",
                highlight=False,
            )
        return
    results_module.write(result, output)
    if as_json:
        out.print_json(json.dumps(result))
    else:
        out.print(results_module.table(result))
        for line in results_module.verdicts(result):
            out.print(line, highlight=False)
        for w in result["warnings"]:
            err.print(f"[bold yellow]warning:[/] {w}", highlight=False)
        out.print(f"wrote {output / 'ablation.json'} and {output / 'ablation.html'}", highlight=False)
    if expect:
        better, worse = parse_expect(expect, [a["name"] for a in result["arms"]])
        found = [
            c
            for c in result["comparisons"]
            if c["metric"] == result["primary_metric"] and {c["a"], c["b"]} == {better, worse}
        ]
        if not found or found[0]["better"] != better:
            err.print(
                f"[bold red]expectation failed:[/] {expect} on {result['primary_metric']}: "
                f"{found[0]['verdict'] if found else 'no such comparison'}",
                highlight=False,
            )
            raise typer.Exit(1)
        out.print(f"expectation met: {expect} on {result['primary_metric']}", highlight=False)
