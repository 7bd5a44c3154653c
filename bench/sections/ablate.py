"""curate ablate: training tokens/s vs a bare torch loop of the same model, and the planted signal.

1. Throughput (--throughput-tokens > 0). `curate ablate` on two demo arms (--seeds 1, the given
   --model, --seq-len, --batch, --throughput-tokens per arm) vs a bare torch loop (a subprocess:
   the same transformers model built from the same config and seed, AdamW, cross-entropy,
   backward, clip, step, on random ids of the same batch and sequence length, as many steps).
   Both sides' figure is training tokens over the training loop's own seconds (curate's from
   ablation.json's runs, which include every step; the bare loop's the same way); the table also
   gives each process's wall and CPU seconds (user + system of its tree). Both at the same torch threads (--threads).
2. Planted signal (--planted-tokens > 0). `curate demo --for ablate` (the demo corpus at a raw
   crawl's defect rates: half the rows junk of the planted kinds, a fifth copies of a small pool;
   and clean held-out text of the same language, another seed, no defect), recipes/quickstart.yaml
   run on it (`curate run -i`), then `curate ablate input=CRAWL output=RUN` at equal tokens,
   --model tiny, --seeds 3, scored on the clean held-out text, --expect output>input; then two
   arms of the same data (the crawl's first four files vs its last four: the demo's plan draws
   every row's kind independently of its file, so the halves are two samples of one
   distribution), which should be "no difference". The two ablations run one after the other,
   each with its runs side by side (--planted-jobs, one torch thread each): each one's wall time
   is its own on the cores. Wall and CPU seconds (the process tree's) and the load averages of
   each command; the per-seed differences, the paired t-test and the bootstrap interval over
   held-out documents.

    python bench/sections/ablate.py [--model tiny] [--threads 1] [--throughput-tokens 65536]
                           [--planted-tokens 524288] [--planted-threads 1] [--planted-jobs 2] [--docs 20000]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import json
import textwrap

from harness import CURATE, DATA, REPO, RUNS, add_section_args, bare_result, emit, load, machine, require_ok, \
    run_measured, table  # noqa: E402

BARE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, {repo!r})
    from curate.ablate.model import build, model_config
    torch.set_num_threads({threads})
    config = model_config({model!r}, 257, {seq_len})
    model = build(config, 0)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.05)
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, 257, ({steps}, {batch}, {seq_len})))
    start, cpu = time.perf_counter(), time.process_time()
    for x in ids:
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({{"tokens_per_s": {steps} * {batch} * {seq_len} / seconds, "seconds": seconds,
                      "tokens_per_cpu_s": {steps} * {batch} * {seq_len} / cpu}}))
""")


def throughput(a, work: Path) -> tuple[list[str], list[list[str]]]:
    """Section 1 (see the module doc): the body's lines and the headline rows."""
    demo = DATA / f"ablate-demo-{a.docs}"
    if not (demo / "done").is_file():
        require_ok(run_measured([*CURATE, "demo", str(demo), "--docs", str(a.docs), "--files", "8"]), "curate demo")
        (demo / "done").write_text("")
    # --jobs 1: one run at a time, as the bare loop's processes run (runs side by side share the cores).
    common = ["--model", a.model, "--threads", str(a.threads), "--jobs", "1", "--seq-len", str(a.seq_len),
              "--batch", str(a.batch), "--overwrite"]
    out = work / "throughput"
    m = run_measured([*CURATE, "ablate", f"a={demo}/*.jsonl.gz", f"b={demo}/*.jsonl.gz", "-o", str(out),
                      "--seeds", "1", "--tokens", str(a.throughput_tokens), *common], log=work / "throughput.log")
    require_ok(m, "curate ablate (throughput)")
    runs = [r for arm in json.loads((out / "ablation.json").read_text())["arms"] for r in arm["seeds"]]
    curate_rate = sum(r["tokens"] for r in runs) / sum(r["seconds"] for r in runs)
    curate_cpu_rate = sum(r["tokens"] for r in runs) / sum(r["cpu_seconds"] for r in runs)
    steps = runs[0]["steps"]
    script = BARE.format(repo=str(REPO), threads=a.threads, model=a.model, seq_len=a.seq_len, batch=a.batch,
                         steps=steps)
    bare = [run_measured([sys.executable, "-c", script], log=work / f"bare{i}.log") for i in range(2)]
    bare_results = [bare_result(b, "bare torch loop") for b in bare]
    bare_rate = sum(b["tokens_per_s"] for b in bare_results) / len(bare_results)
    bare_cpu_rate = sum(b["tokens_per_cpu_s"] for b in bare_results) / len(bare_results)
    params = runs[0]["parameters"]
    rows = [[f"curate ablate (2 arms x 1 seed, {a.throughput_tokens:,} tokens each)", f"{m.seconds:.1f}",
             f"{m.cpu_seconds:.1f}", f"{curate_rate:,.0f}", f"{curate_rate / bare_rate:.0%}",
             f"{curate_cpu_rate:,.0f}", f"{curate_cpu_rate / bare_cpu_rate:.0%}"],
            [f"bare torch loop ({steps} steps, 2 processes)", f"{sum(b.seconds for b in bare):.1f}",
             f"{sum(b.cpu_seconds for b in bare):.1f}", f"{bare_rate:,.0f}", "100%", f"{bare_cpu_rate:,.0f}", "100%"]]
    body = [f"Throughput: the `{a.model}` preset ({params:,} parameters), sequence length {a.seq_len}, batch "
            f"{a.batch}, {a.threads} torch thread(s), CPU, fp32. Training tokens/s is tokens over the training "
            f"loop's seconds, and over its CPU seconds (steadier on shared cores; curate's: every step of both "
            f"runs; the bare loop's: the mean of two processes). "
            f"curate adds deterministic algorithms, the seeded sequence order and checkpoints; wall and CPU "
            f"seconds are the whole process (imports, sampling, evaluation included).", "",
            table(["run", "wall s", "CPU s", "training tokens/s", "vs bare", "training tokens/CPU-s", "vs bare (CPU)"],
                  rows), ""]
    headlines = [["curate ablate training tokens/s vs a bare torch loop", f"{curate_rate / bare_rate:.0%}",
                  f"{curate_cpu_rate / bare_cpu_rate:.0%}",
                  f"{a.model}, {a.threads} thread(s)"]]
    return body, headlines


PLANTED_HEADLINES: list[list[str]] = []


def planted_signal(a, work: Path) -> list[str]:
    """Section 2 (see the module doc): the body's lines; the headline rows go to PLANTED_HEADLINES."""
    crawl = DATA / f"ablate-crawl-{a.docs}"
    if not (crawl / "done").is_file():
        require_ok(run_measured([*CURATE, "demo", "--for", "ablate", str(crawl), "--docs", str(a.docs)]),
                   "curate demo --for ablate")
        (crawl / "done").write_text("")
    heldout = crawl / "heldout.jsonl"
    clean = work / "quickstart-crawl"
    run_cmd = [*CURATE, "run", "recipes/quickstart.yaml", "-i", f"{crawl}/crawl/*.jsonl.gz", "-o", str(clean), "-w",
               "1", "--overwrite"]
    rm = run_measured(run_cmd, log=work / "quickstart-crawl.log")
    require_ok(rm, "curate run recipes/quickstart.yaml on the crawl")
    common = ["--model", "tiny", "--seeds", "3", "--tokens", str(a.planted_tokens), "--eval-text", str(heldout),
              "--eval-tokens", str(a.eval_tokens), "--holdout", "0", "--threads", str(a.planted_threads),
              "--jobs", str(a.planted_jobs), "--overwrite"]
    cases = [("quickstart output vs its input", [f"input={crawl}/crawl/*.jsonl.gz", f"output={clean}"],
              work / "planted", ["--expect", "output>input"]),
             ("the crawl's two halves (files 0-3 vs 4-7)", [f"a={crawl}/crawl/part-000[0-3].jsonl.gz",
                                                             f"b={crawl}/crawl/part-000[4-7].jsonl.gz"],
              work / "same", [])]
    rows, commands = [], [f"`{_shown(run_cmd)}`: {rm.seconds:.0f} s wall, {rm.cpu_seconds:.0f} CPU s"]
    metric = "bpb:heldout"
    for what, arms, out, more in cases:
        cmd = [*CURATE, "ablate", *arms, "-o", str(out), *common, *more]
        load_before = load()
        m = run_measured(cmd, log=work / f"{out.name}.log")
        if m.returncode not in (0, 1):  # 1: --expect not met, recorded below
            require_ok(m, f"curate ablate ({what})")
        r = json.loads((out / "ablation.json").read_text())
        c = next(c for c in r["comparisons"] if c["metric"] == metric)
        by = {x["name"]: x for x in r["arms"]}
        diffs = [sb["metrics"][metric] - sa["metrics"][metric] for sa, sb in zip(by[c["a"]]["seeds"],
                                                                               by[c["b"]]["seeds"])]
        means = ", ".join(f"{x['name']} {x['mean'][metric]:.4f} ± {x['std'][metric]:.4f}" for x in r["arms"])
        boot = c["bootstrap"]
        train_cpu = sum(run["cpu_seconds"] for x in r["arms"] for run in x["seeds"])
        rate = sum(run["tokens"] for x in r["arms"] for run in x["seeds"]) / train_cpu
        rows.append([what, f"{m.seconds:.0f}", f"{m.cpu_seconds:.0f}", means,
                     ", ".join(f"{d:+.4f}" for d in diffs), f"{c['t']:.2f}", f"{c['p_value']:.3g}",
                     f"[{boot['low']:+.4f}, {boot['high']:+.4f}] ({boot['items']} docs)", c["verdict"]])
        commands.append(f"`{_shown(cmd)}`: exit {m.returncode}, {m.seconds:.0f} s wall ({m.seconds / 60:.1f} min), "
                        f"{m.cpu_seconds:.0f} CPU s (process tree), of which {train_cpu:.0f} in the 6 training "
                        f"loops ({rate:,.0f} training tokens per CPU second); load {load_before} before, "
                        f"{load()} after")
        settings = r["settings"]
    PLANTED_HEADLINES.append(["curate ablate: quickstart output vs its input (demo crawl), tiny, 3 seeds",
                              f"{rows[0][1]} s", f"{rows[0][2]} CPU s", rows[0][8]])
    PLANTED_HEADLINES.append(["curate ablate: the crawl's two halves, tiny, 3 seeds", f"{rows[1][1]} s",
                              f"{rows[1][2]} CPU s", rows[1][8]])
    return [f"Planted signal: `curate demo --for ablate` ({a.docs:,} rows: half junk of the planted kinds, a fifth "
            f"copies of a pool of 1%; clean held-out text of another seed), recipes/quickstart.yaml run on it, "
            f"then `curate ablate` at {a.planted_tokens:,} training tokens per arm, the tiny preset "
            f"({settings['parameters']:,} parameters), 3 seeds, peak LR {settings['lrs'][0]:g} (the default), "
            f"{settings['threads']} torch thread(s) per run, {settings['jobs']} runs side by side, scored on "
            f"{a.eval_tokens:,} tokens of the clean held-out text "
            f"({metric}, bits per byte, lower is better; --holdout 0: no arm's own held-out share is scored). "
            f"Per seed, b - a (the same initial weights and sequence order for both arms; each seed its own draw, "
            f"in which a document both arms hold has the same place); the paired t-test over seeds (df 2) gives "
            f"p; the bootstrap interval is over held-out documents (2,000 paired resamples of the seed-mean "
            f"scores). The two ablations ran one after the other, after the recipe run; the cores are shared "
            f"with other sessions' tests and benches (load averages below), so wall times are those of a busy "
            f"machine and the CPU seconds are the steadier figure.", "",
            *[f"- {c}" for c in commands], "",
            table(["arms", "wall s", "CPU s", "bpb (mean ± sd over seeds)", "b - a per seed", "t", "p",
                   "bootstrap 95%", "verdict"], rows), ""]


def _shown(cmd: list[str]) -> str:
    """The command as typed: `curate ...` for the module run, paths relative to the repository."""
    words = ["curate" if w == "curate.cli" else w for w in cmd if w not in (sys.executable, "-m")]
    return " ".join(f"'{w}'" if any(c in w for c in "*?[>") else w for w in
                    (x.replace(str(REPO) + "/", "") for x in words))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--throughput-tokens", type=int, default=65_536)
    ap.add_argument("--planted-tokens", type=int, default=524_288)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--planted-threads", type=int, default=1, help="torch threads per run (planted signal)")
    ap.add_argument("--planted-jobs", type=int, default=2, help="runs side by side (planted signal)")
    ap.add_argument("--eval-tokens", type=int, default=100_000, help="held-out tokens scored (planted signal)")
    add_section_args(ap)
    a = ap.parse_args()
    load_before = load()
    work = RUNS / "ablate"
    work.mkdir(parents=True, exist_ok=True)
    body = [f"Machine: {machine()}; load before {load_before}.", ""]
    headlines: list[list[str]] = []
    if a.throughput_tokens:
        b, h = throughput(a, work)
        body += b
        headlines += h
    # 2. Planted signal.
    if a.planted_tokens:
        body += planted_signal(a, work)
        headlines += PLANTED_HEADLINES
    body.append(f"Load at the end: {load()}.")
    emit(a, "\n".join(body), headlines)


if __name__ == "__main__":
    main()
