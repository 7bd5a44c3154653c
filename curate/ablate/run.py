"""The whole ablation: arms resolved (recipes run), one tokenizer, equal-token samples, a proxy per
arm x seed (x learning rate), evaluated, compared; results in OUTPUT (see results.py)."""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from curate.ablate import arms as arms_module, data, evaluate
from curate.ablate.model import model_config
from curate.ablate.train import TrainSpec, save_json, setup_torch, steps_for
from curate.errors import CurateError

CONFIG = "config.json"


@dataclass
class Options:
    arms: list[str]
    output: Path
    recipe: str | None = None
    tokens: int = 524_288  # the tiny proxy past what a byte trigram count model knows: docs/guides/ablate.md
    allow_repeat: bool = False
    model: str = "tiny"
    seeds: int = 3
    lrs: list[float] = field(default_factory=list)  # empty: model.default_lr
    seq_len: int = 128
    batch: int = 16
    accum: int = 1
    warmup: float = 0.1
    weight_decay: float = 0.05
    eval_text: list[str] = field(default_factory=list)
    eval_mc: list[str] = field(default_factory=list)
    eval_tokens: int = 50_000
    holdout: float = 0.02
    tokenizer: str | None = None
    eos: str | None = None
    text_column: str | None = None
    sample_seed: int = 0
    threads: int = 1  # torch threads per run
    jobs: int = 0  # runs side by side (0: the available cores / threads; 1: in this process)
    device: str = "auto"
    alpha: float = 0.05
    metric: str | None = None
    resume: bool = False
    overwrite: bool = False
    checkpoint_every: int = 100
    workers: int | None = None
    dry_run: bool = False
    expect: str | None = None  # 'B>A', checked against the arms' names before any training


def _prepare_output(opts: Options) -> None:
    out = opts.output
    if out.exists() and any(out.iterdir()):
        ours = (out / CONFIG).is_file()
        if opts.resume and ours:
            return
        if opts.overwrite and ours:
            shutil.rmtree(out)
        elif opts.resume:
            raise CurateError(f"--resume: {out} holds no ablation to continue (no {CONFIG})")
        elif opts.overwrite:
            raise CurateError(f"--overwrite: {out} is not an ablation's output (no {CONFIG}); not removing it")
        else:
            raise CurateError(f"{out} exists; continue it with --resume or replace it with --overwrite")
    out.mkdir(parents=True, exist_ok=True)


def resolve_arms(opts: Options, log: Callable[[str], None]) -> list[arms_module.Arm]:
    arms: list[arms_module.Arm] = []
    if opts.recipe:
        arms += arms_module.recipe_arms(opts.recipe)
        if opts.text_column:
            for a in arms:
                a.text_column = opts.text_column
    taken = {a.name for a in arms}
    for name, spec in arms_module.parse(opts.arms):
        arm = arms_module.classify(name, spec, taken, opts.text_column)
        taken.add(arm.name)
        arms.append(arm)
    if len(arms) < 2:
        raise CurateError("ablate compares two or more arms: give ARM ARM [ARM...] or --recipe R.yaml")
    for arm in arms:
        if arm.kind == "recipe" and not arm.paths:
            log(f"arm {arm.name}: running recipe {arm.spec}")
            arms_module.run_recipe(arm, opts.output / "arms" / arm.name / "run", opts.workers, opts.resume)
    return arms


def parse_expect(expr: str, names: list[str]) -> tuple[str, str]:
    """'B>A' (or 'A<B') -> (B, A): B must be significantly better than A."""
    import re

    m = re.fullmatch(r"\s*([^<>\s]+)\s*([<>])\s*([^<>\s]+)\s*", expr)
    if not m:
        raise CurateError(f"--expect {expr!r}: write it as B>A (B significantly better than A)")
    left, op, right = m.groups()
    better, worse = (left, right) if op == ">" else (right, left)
    for n in (better, worse):
        if n not in names:
            raise CurateError(f"--expect {expr!r}: no arm named {n!r} (arms: {', '.join(names)})")
    return better, worse


def _device(opts: Options) -> str:
    if opts.device != "auto":
        return opts.device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _fingerprint(opts: Options, arms, tok) -> dict:
    same_numbers = ("output", "resume", "overwrite", "dry_run", "workers", "jobs", "checkpoint_every")
    keep = {k: v for k, v in asdict(opts).items() if k not in (*same_numbers, "expect", "metric", "alpha")}
    keep["arms"] = [{"name": a.name, "spec": a.spec, "paths": a.paths} for a in arms]
    keep["tokenizer"] = tok.where if opts.tokenizer else "byte-level"
    return json.loads(json.dumps(keep, default=str))


def ablate(opts: Options, log: Callable[[str], None] = print) -> dict:
    """Run the ablation; returns ablation.json's content (with `dry_run` a plan instead)."""
    if opts.tokens % opts.seq_len:
        raise CurateError(
            f"--tokens {opts.tokens:,} is not a multiple of --seq-len {opts.seq_len} "
            f"(every training token is in a whole sequence)"
        )
    if opts.batch % opts.accum:
        raise CurateError(f"--batch {opts.batch} does not split into --accum {opts.accum} micro-batches")
    if opts.seeds < 1:
        raise CurateError("--seeds must be at least 1")
    if opts.dry_run:  # recipes run and the tokenizer written in a directory removed afterwards
        import tempfile

        with tempfile.TemporaryDirectory(prefix="curate-ablate-dry-run-") as scratch:
            return _ablate(replace(opts, output=Path(scratch)), log)
    _prepare_output(opts)
    return _ablate(opts, log)


def _ablate(opts: Options, log: Callable[[str], None]) -> dict:
    arms = resolve_arms(opts, log)
    if opts.expect:
        parse_expect(opts.expect, [a.name for a in arms])
    tok = data.load_tokens(opts.tokenizer, opts.eos, opts.output)
    mc_sets = {Path(p).stem: evaluate.read_items(p) for p in opts.eval_mc}
    # Eval texts first: their documents are never trained on.
    eval_texts: dict[str, list[str]] = {}
    for p in opts.eval_text:
        if not Path(p).exists() and not any(c in p for c in "*?["):
            raise CurateError(f"--eval-text {p}: not found")
        eval_texts[Path(p).stem.split(".")[0]] = list(
            data.read_texts([p], None, opts.text_column or "text", f"--eval-text {p}")
        )
    excluded = {data.content_key(t) for texts in eval_texts.values() for t in texts}
    samples = {}
    for arm in arms:
        texts = list(data.read_texts(arm.paths, arm.format, arm.text_column, f"arm {arm.name}"))
        keys = data.content_keys(texts)
        sample = data.sample_arm(
            arm.name, texts, tok, opts.tokens, opts.sample_seed, opts.allow_repeat, opts.holdout, excluded, 0, keys
        )
        samples[arm.name] = sample
        if not opts.dry_run:  # seed 0 trains on tokens.npy, seed s on tokens-seed-s.npy (draw s)
            (opts.output / "arms" / arm.name).mkdir(parents=True, exist_ok=True)
            for draw in range(1, opts.seeds):
                other = data.sample_arm(
                    arm.name,
                    texts,
                    tok,
                    opts.tokens,
                    opts.sample_seed,
                    opts.allow_repeat,
                    opts.holdout,
                    excluded,
                    draw,
                    keys,
                )
                np.save(opts.output / "arms" / arm.name / _sample_file(draw), other.train.astype(np.int32))
            data.write_sample(
                sample,
                opts.output / "arms" / arm.name,
                {
                    "arm": arm.name,
                    "spec": arm.spec,
                    "paths": arm.paths,
                    "tokens": opts.tokens,
                    "available": sample.available,
                    "documents": sample.documents,
                    "epochs": sample.epochs,
                    "held_out_documents": len(sample.held_out),
                    "samples": [_sample_file(s) for s in range(opts.seeds)],
                },
            )
        del texts
        avail = f"of {sample.available:,}, epochs {sample.epochs:.3g}" if sample.available else "under one epoch"
        log(f"arm {arm.name}: {opts.tokens:,} tokens sampled ({avail}), {len(sample.held_out):,} documents held out")
    sets = [evaluate.text_set(name, texts, tok, opts.eval_tokens) for name, texts in eval_texts.items() if texts]
    sets += [
        evaluate.text_set(f"heldout-{a.name}", samples[a.name].held_out, tok, opts.eval_tokens)
        for a in arms
        if samples[a.name].held_out
    ]
    if not sets and not mc_sets:
        raise CurateError(
            "nothing to evaluate on: no --eval-text, no --eval-mc, and no arm has held-out documents (raise --holdout)"
        )
    if opts.metric:
        names = [f"bpb:{ts.name}" for ts in sets] + [
            f"{k}:{n}" for n in mc_sets for k in ("acc", "acc_norm", "gold_prob")
        ]
        if len(opts.lrs) > 1:
            names = [f"{m}@lr={lr:g}" for lr in opts.lrs for m in names]
        if opts.metric not in names:
            raise CurateError(f"--metric {opts.metric}: not a metric of this ablation ({', '.join(names)})")
    threads = opts.threads or _cores()
    device = _device(opts)
    jobs = _jobs(opts, device)
    setup_torch(threads, device)
    config = model_config(opts.model, tok.vocab, opts.seq_len)
    if not opts.lrs:
        from curate.ablate.model import build, default_lr, parameters

        opts.lrs = [float(f"{default_lr(parameters(build(config, 0))):.3g}")]
    spec0 = TrainSpec(
        opts.seq_len,
        opts.batch,
        opts.accum,
        opts.lrs[0],
        opts.warmup,
        opts.weight_decay,
        0,
        device,
        opts.checkpoint_every,
    )
    if opts.dry_run:
        return _plan(opts, arms, config, spec0, tok, threads, jobs)
    fingerprint = _fingerprint(opts, arms, tok)
    config_path = opts.output / CONFIG
    if opts.resume and config_path.is_file():
        before = json.loads(config_path.read_text())
        if before != fingerprint:
            changed = sorted(k for k in set(before) | set(fingerprint) if before.get(k) != fingerprint.get(k))
            raise CurateError(
                f"--resume: the ablation in {opts.output} was started with other settings "
                f"({', '.join(changed)}); use --overwrite to start again"
            )
    save_json(config_path, fingerprint)
    runs = list(itertools.product(opts.lrs, range(opts.seeds), arms))
    began = time.perf_counter()
    work = []
    for n, (lr, seed, arm) in enumerate(runs):
        run_dir = opts.output / "runs" / arm.name / (f"seed-{seed}" + (f"-lr-{lr:g}" if len(opts.lrs) > 1 else ""))
        spec = TrainSpec(
            opts.seq_len,
            opts.batch,
            opts.accum,
            lr,
            opts.warmup,
            opts.weight_decay,
            seed,
            device,
            opts.checkpoint_every,
        )
        sample_path = opts.output / "arms" / arm.name / _sample_file(seed)
        tag = f"[{n + 1}/{len(runs)}]"
        work.append(
            (arm.name, sample_path, config, spec, sets, mc_sets, tok, run_dir, opts.resume, tag, n, len(runs), jobs)
        )
    done = _side_by_side(work, jobs, threads, device, log)
    results = {(lr, seed, arm.name): done[n][0] for n, (lr, seed, arm) in enumerate(runs)}
    items = {(lr, seed, arm.name): done[n][1] for n, (lr, seed, arm) in enumerate(runs)}
    from curate.ablate.results import assemble

    return assemble(
        opts, arms, samples, results, items, sets, config, threads, jobs, device, time.perf_counter() - began
    )


def _side_by_side(work: list[tuple], jobs: int, threads: int, device: str, log: Callable[[str], None]) -> list:
    """_one_run of each item of `work`: in this process with jobs 1, else in `jobs` spawned
    processes (each run's numbers depend on its threads only, not on what runs beside it). Spawned,
    not forked: a fork copies whatever locks the parent's threads (torch's, the tokenizer's) held,
    and a forked run could wait on one forever."""
    if jobs <= 1 or len(work) <= 1:
        return [_one_run(log, *w) for w in work]
    with multiprocessing.get_context("spawn").Pool(
        min(jobs, len(work)), initializer=setup_torch, initargs=(threads, device)
    ) as pool:
        return pool.starmap(_one_run, [(_log_to_stderr, *w) for w in work], chunksize=1)


def _log_to_stderr(msg: str) -> None:
    """A spawned run's progress lines: to the stderr it shares with the command."""
    print(msg, file=sys.stderr, flush=True)


def _jobs(opts: Options, device: str) -> int:
    """Runs side by side: --jobs, else as many as the available cores hold at --threads each; on a
    GPU one at a time. A tiny model's run keeps one core busy better than two threads split it
    (their synchronisation costs more than its small matrices gain, most of all on shared cores)."""
    if not device.startswith("cpu"):
        if opts.jobs > 1:
            raise CurateError(f"--jobs {opts.jobs}: runs go side by side on a CPU only; on {device} one at a time")
        return 1
    return opts.jobs or max(1, _cores() // (opts.threads or _cores()))


def _sample_file(seed: int) -> str:
    """The arm's training sample of `seed` (its draw) under OUTPUT/arms/ARM/."""
    return "tokens.npy" if seed == 0 else f"tokens-seed-{seed}.npy"


def _cores() -> int:
    from curate.engine.tasks.plan import available_cores

    return max(1, available_cores())


def _one_run(
    log: Callable[[str], None],
    arm: str,
    sample: Path,
    config: dict,
    spec: TrainSpec,
    sets,
    mc_sets,
    tok,
    run_dir: Path,
    resume: bool,
    tag: str,
    index: int,
    all_runs: int,
    jobs: int,
) -> tuple[dict, dict]:
    from curate.ablate.model import build, parameters
    from curate.ablate.train import train

    run_dir.mkdir(parents=True, exist_ok=True)
    result_path, items_path = run_dir / "result.json", run_dir / "items.npz"
    if resume and result_path.is_file() and items_path.is_file():
        with np.load(items_path) as z:
            return json.loads(result_path.read_text()), {k: z[k] for k in z.files}
    tokens = np.load(sample, mmap_mode="r")
    model = build(config, spec.seed)
    last = [0.0]

    def progress(step: int, steps: int, seconds: float) -> None:
        if seconds - last[0] >= 10 or step == steps:
            last[0] = seconds
            rate = step * spec.batch * spec.seq_len / max(seconds, 1e-9)
            left = (steps - step) * spec.batch * spec.seq_len / rate
            # The runs not yet started after this one, `jobs` at a time, each as long as this one.
            total_left = left + max(0, all_runs - index - jobs) * (seconds + left) / jobs
            log(
                f"{tag} {arm} seed {spec.seed}: step {step}/{steps}, {rate:,.0f} tokens/s, ETA {left:.0f}s "
                f"(ablation {total_left:.0f}s)"
            )

    trained = train(model, tokens, spec, run_dir / "checkpoint.pt", progress)
    metrics, per_item = {}, {}
    for ts in sets:
        nll = evaluate.doc_nll(model, ts, spec.seq_len, spec.device)
        metrics[f"bpb:{ts.name}"] = evaluate.bpb(nll, ts.bytes)
        per_item[f"bpb:{ts.name}"] = nll
    for name, its in mc_sets.items():
        per = evaluate.mc_metrics(its, evaluate.choice_logprobs(model, its, tok, spec.seq_len, spec.device))
        for key, values in per.items():
            metrics[f"{key}:{name}"] = float(values.mean())
            per_item[f"{key}:{name}"] = values
    res = {
        "seed": spec.seed,
        "lr": spec.lr,
        "metrics": metrics,
        "losses": trained.losses,
        "steps": trained.steps,
        "tokens": trained.tokens,
        "seconds": trained.seconds,
        "cpu_seconds": trained.cpu_seconds,
        "parameters": parameters(model),
        "tokens_per_s": trained.tokens / max(trained.seconds, 1e-9),
    }
    np.savez(items_path, **per_item)  # type: ignore[arg-type]  # numpy's stub takes the names for allow_pickle
    save_json(result_path, res)
    (run_dir / "checkpoint.pt").unlink(missing_ok=True)
    log(f"{tag} {arm} seed {spec.seed}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    return res, per_item


def _plan(opts: Options, arms, config: dict, spec: TrainSpec, tok, threads: int, jobs: int) -> dict:
    """--dry-run: model size, tokens, steps, FLOPs, and the time at a speed measured on 3 steps (after a
    first one that warms up), the runs `jobs` at a time (on otherwise idle cores)."""
    from curate.ablate.model import build, parameters
    from curate.ablate.train import train

    model = build(config, 0)
    params = parameters(model)
    steps = steps_for(opts.tokens, spec)
    probe = np.random.default_rng(0).integers(0, tok.vocab, spec.seq_len * spec.batch * 4)
    marks: dict[int, float] = {}  # step -> seconds
    train(model, probe, spec, None, lambda step, steps, seconds: marks.__setitem__(step, seconds))
    rate = 3 * spec.seq_len * spec.batch / max(marks[4] - marks[1], 1e-9)  # the first step warms up
    runs = len(arms) * opts.seeds * len(opts.lrs)
    flops = 6 * params * opts.tokens * runs
    return {
        "dry_run": True,
        "arms": [a.name for a in arms],
        "parameters": params,
        "non_embedding_parameters": parameters(model, embeddings=False),
        "tokens_per_run": opts.tokens,
        "steps_per_run": steps,
        "runs": runs,
        "flops": flops,
        "measured_tokens_per_s": rate,
        "threads": threads,
        "jobs": min(jobs, runs),
        "estimated_seconds": opts.tokens * math.ceil(runs / min(jobs, runs)) / rate,
        "model": config,
    }
