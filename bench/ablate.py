"""curate ablate: training tokens/s vs a bare torch loop of the same model, and the planted signal.

1. Throughput. `curate ablate` on two demo arms (--seeds 1, the given --model, --seq-len, --batch,
   --throughput-tokens per arm) vs a bare torch loop (a subprocess: the same transformers model
   built from the same config and seed, AdamW, cross-entropy, backward, clip, step, on random ids
   of the same batch and sequence length, as many steps). Both sides' figure is training tokens
   over the training loop's own seconds (curate's from ablation.json's runs, which include every
   step; the bare loop's the same way); the table also gives each process's wall and CPU seconds
   (user + system of its tree). Both at the same torch threads (--threads).
2. Planted signal (--planted-tokens > 0). The demo corpus (`curate demo`, planted duplicates and
   junk) through recipes/quickstart.yaml; `curate ablate --recipe` (its input vs its output, equal
   tokens, --model tiny, --seeds 3) scored on clean held-out text (demo documents of another seed
   without planted defects); then two arms of the same distribution (the input's first four files
   vs its last four), which should be "no difference". Wall and CPU seconds of each.

    python bench/ablate.py [--model tiny] [--threads 1] [--throughput-tokens 65536]
                           [--planted-tokens 262144] [--docs 20000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

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


def clean_eval(path: Path, docs: int = 400) -> Path:
    """Clean held-out text: demo documents of another seed without a planted defect."""
    if path.is_file():
        return path
    from curate.demo import generate

    src = DATA / "ablate-eval-src"
    generate(src, docs=docs, files=1, seed=123, workers=1)
    rows = [json.loads(line) for p in sorted(src.glob("*.jsonl.gz")) for line in gzip.open(p, "rt")]
    path.write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in rows if r["planted"] is None))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--throughput-tokens", type=int, default=65_536)
    ap.add_argument("--planted-tokens", type=int, default=262_144)
    ap.add_argument("--docs", type=int, default=20_000)
    add_section_args(ap)
    a = ap.parse_args()
    load_before = load()
    work = RUNS / "ablate"
    work.mkdir(parents=True, exist_ok=True)
    demo = DATA / f"ablate-demo-{a.docs}"
    if not (demo / "done").is_file():
        require_ok(run_measured([*CURATE, "demo", str(demo), "--docs", str(a.docs), "--files", "8"]), "curate demo")
        (demo / "done").write_text("")
    common = ["--model", a.model, "--threads", str(a.threads), "--seq-len", str(a.seq_len), "--batch", str(a.batch),
              "--overwrite"]
    # 1. Throughput: curate ablate vs the bare loop.
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
    body = [f"Machine: {machine()}; load before {load_before}.", "",
            f"Throughput: the `{a.model}` preset ({params:,} parameters), sequence length {a.seq_len}, batch "
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
    # 2. Planted signal.
    if a.planted_tokens:
        evalfile = clean_eval(work / "clean_eval.jsonl")
        recipe = work / "quickstart.yaml"
        recipe.write_text((REPO / "recipes" / "quickstart.yaml").read_text()
                          .replace("data/demo/*.jsonl.gz", f"{demo}/*.jsonl.gz")
                          .replace("out/quickstart", str(work / "quickstart")))
        planted = [("quickstart output vs input (--recipe)", ["--recipe", str(recipe)], work / "planted"),
                   ("the input's two halves (files 0-3 vs 4-7)", [f"a={demo}/part-000[0-3].jsonl.gz",
                                                                   f"b={demo}/part-000[4-7].jsonl.gz"], work / "same")]
        prow = []
        for what, arms, pout in planted:
            pm = run_measured([*CURATE, "ablate", *arms, "-o", str(pout), "--seeds", "3", "--tokens",
                               str(a.planted_tokens), "--eval-text", str(evalfile), "-w", "2", *common],
                              log=work / f"{pout.name}.log")
            require_ok(pm, f"curate ablate ({what})")
            r = json.loads((pout / "ablation.json").read_text())
            c = next(c for c in r["comparisons"] if c["metric"] == r["primary_metric"])
            means = ", ".join(f"{x['name']} {x['mean'][r['primary_metric']]:.4f} ± {x['std'][r['primary_metric']]:.4f}"
                              for x in r["arms"])
            prow.append([what, f"{pm.seconds:.0f}", f"{pm.cpu_seconds:.0f}", means, f"{c['p_value']:.3g}",
                         c["verdict"]])
            lr = r["settings"]["lrs"][0]
        body += [f"Planted signal: the demo corpus ({a.docs:,} documents) and recipes/quickstart.yaml; "
                 f"`curate ablate` at {a.planted_tokens:,} training tokens per arm, 3 seeds, peak LR {lr:g} "
                 f"(the default), scored on clean held-out text (bpb:{Path(evalfile).stem}, lower is better). "
                 f"Times include running the recipe (first row).", "",
                 table(["arms", "wall s", "CPU s", "bpb (mean ± sd over seeds)", "p", "verdict"], prow), ""]
        headlines.append(["curate ablate: quickstart output vs input, tiny, 3 seeds", f"{prow[0][1]} s", "",
                          prow[0][5]])
    body.append(f"Load at the end: {load()}.")
    emit(a, "\n".join(body), headlines)


if __name__ == "__main__":
    main()
