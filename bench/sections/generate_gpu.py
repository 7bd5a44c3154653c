"""Batched generation throughput of a local model: `curate run` of a `rephrase` step with the
transformers backend (on the model workers) vs a bare batched `model.generate` loop over the same
prompts, same model, batch size, greedy decoding and device, side by side in one run.

The model is a Llama built from a config with random weights and a byte-level BPE tokenizer trained
on the demo corpus (no checkpoint can be downloaded here; the weights' values do not change the work
per token). With random weights an answer rarely stops early, so nearly every answer runs to
`--max-new-tokens`: rephrase then sends its rows to the trace as `truncated`, which is what it does
with a real model too; the tokens were generated all the same, and both sides count them (curate:
`tokens_out` in the manifest's step counts; bare: the tokens before the first end-of-sequence).
Prompts are rephrase's own (the medium style's prompt around each text), sorted by length and batched
on both sides. Whole processes timed from outside; "generate s" is the generation alone (bare: its
timer; curate: the rephrase step's seconds in the manifest).

    python bench/sections/generate_gpu.py [--prompts 512] [--batch-size 64] [--max-new-tokens 128] [--device cuda]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import gzip
import json
import shutil
import statistics
import time


from harness import (CURATE, DATA, RUNS, add_section_args, bare_result, emit, load, machine, require_ok,  # noqa: E402
                     run_measured, step_entry, table)


def corpus(prompts: int) -> Path:
    """`prompts` distinct demo documents cut to ~120 words (one JSONL.gz file). Distinct, because curate
    sends a request asked twice only once (the demo corpus plants duplicates)."""
    import orjson

    from curate.demo import generate

    folder = DATA / f"generate-{prompts}"
    if not (folder / "done").exists():
        generate(folder / "raw", docs=2 * prompts, files=1, seed=0)
        rows = [orjson.loads(line) for f in sorted((folder / "raw").glob("*.jsonl.gz")) for line in gzip.open(f)]
        distinct = {" ".join(r["text"].split()[:120]): r["id"] for r in rows}
        if len(distinct) < prompts:
            raise SystemExit(f"only {len(distinct)} distinct demo documents; ask for fewer prompts")
        with gzip.open(folder / "prompts.jsonl.gz", "wb") as out:
            for text, row_id in list(distinct.items())[:prompts]:
                out.write(orjson.dumps({"id": row_id, "text": text}) + b"\n")
        (folder / "done").write_text("")
    return folder / "prompts.jsonl.gz"


def build_model(path: Path, texts: list[str], hidden: int, layers: int) -> Path:
    if (path / "config.json").exists():
        return path
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=8000, min_frequency=2, special_tokens=["<s>", "</s>", "<pad>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", model_max_length=2048)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 8 // 3 // 64 * 64,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64,
                         max_position_embeddings=2048, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def prompts_of(texts: list[str]) -> list[str]:
    """rephrase's prompts (medium style, no system message), as its transformers backend writes them for a
    model without a chat template."""
    from curate_operators.synth.prompts import PROMPTS, TEMPLATE

    return [TEMPLATE.format(prompt=PROMPTS["medium"], text=t) + "\n\n" for t in texts]


def bare(model: str, batch_size: int, max_new: int, device: str, dtype: str, data: str) -> None:
    """The reference: sort by length, left-pad, one greedy `generate` per batch."""
    import orjson
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    prompts = prompts_of([orjson.loads(line)["text"] for line in gzip.open(data)])
    tok = AutoTokenizer.from_pretrained(model)
    tok.padding_side = "left"
    lm = AutoModelForCausalLM.from_pretrained(model, torch_dtype=getattr(torch, dtype)).to(device).eval()
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    tokens = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            enc = tok([prompts[i] for i in order[b:b + batch_size]], return_tensors="pt", padding=True,
                      add_special_tokens=False).to(device)
            out = lm.generate(**enc, max_new_tokens=max_new, do_sample=False, pad_token_id=tok.pad_token_id)
            for row in out[:, enc["input_ids"].shape[1]:].tolist():
                tokens += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
    seconds = time.perf_counter() - start
    print(json.dumps({"generate_seconds": seconds, "tokens_out": tokens, "prompts": len(prompts)}))


BARE = "bare batched generate loop"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--repeats", type=int, default=2)
    add_section_args(ap)
    args = ap.parse_args()
    import orjson

    data = corpus(args.prompts)
    texts = [orjson.loads(line)["text"] for line in gzip.open(data)]
    model = build_model(DATA / f"llama-{args.hidden}x{args.layers}", texts, args.hidden, args.layers)
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    runs = RUNS / "generate"
    runs.mkdir(parents=True, exist_ok=True)
    recipe = runs / "generate.yaml"
    recipe.write_text(
        # allow_empty: random weights rarely stop early, so rephrase may send every answer to the trace as
        # `truncated` (the tokens were generated all the same, and counted).
        f"name: generate-bench\nallow_empty: true\ninput: {{path: '{data}', id_column: id}}\n"
        f"output: {{path: '{runs / 'out'}'}}\n"
        f"steps:\n  - rephrase: {{styles: [medium], ratio: '0:1', llm: {{backend: transformers, model: '{model}', "
        f"batch_size: {args.batch_size}, max_tokens: {args.max_new_tokens}, temperature: 0, dtype: {dtype}}}}}\n")
    results: dict[str, list[tuple[float, float, float, int]]] = {}
    sides = ["bare", "curate"]
    for repeat in range(args.repeats):
        for side in sides[repeat % 2:] + sides[:repeat % 2]:
            if side == "bare":
                label = BARE
                m = run_measured([sys.executable, __file__, "--bare-run", str(model), str(args.batch_size),
                                  str(args.max_new_tokens), args.device, dtype, str(data)], log=runs / "bare.log")
                got = bare_result(m, "bare loop")
                inner, tokens = got["generate_seconds"], got["tokens_out"]
            else:
                label = "curate run (rephrase, transformers backend)"
                cache = runs / f"cache-{repeat}"  # a fresh request cache: every prompt is generated
                shutil.rmtree(cache, ignore_errors=True)  # (one a stopped earlier run left would answer them all)
                m = run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", "1", "--no-report"],
                                 env={"CURATE_CACHE_DIR": str(cache)}, log=runs / "curate.log")
                require_ok(m, "curate run")
                step = step_entry(runs / "out", "rephrase")
                inner, tokens = step.seconds, step.counts["tokens_out"]
            results.setdefault(label, []).append((m.seconds, m.cpu_seconds, inner, tokens))
            print(f"round {repeat + 1}: {label}: wall {m.seconds:.1f}s, generate {inner:.1f}s, {tokens} tokens "
                  f"(load {load()})", flush=True)
    rows = []
    base = statistics.median(r[3] / r[2] for r in results[BARE])
    for label, rs in results.items():
        wall, cpu, inner = (statistics.median(r[i] for r in rs) for i in range(3))
        rate = statistics.median(r[3] / r[2] for r in rs)
        rows.append([label, f"{wall:.1f}", f"{cpu:.1f}", f"{inner:.1f}", f"{rs[-1][3]:,}", f"{rate:,.0f}",
                     f"{rate / base:.0%}"])
    gpu = ""
    if args.device == "cuda":
        import torch

        gpu = f" GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}."
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(model)
    params = (cfg.vocab_size * cfg.hidden_size * 2 + cfg.num_hidden_layers *
              (4 * cfg.hidden_size ** 2 + 3 * cfg.hidden_size * cfg.intermediate_size))
    body = (f"Machine: {machine()}; load at the end {load()}.{gpu}\n\n{args.prompts:,} prompts (rephrase's medium "
            f"style around a demo document cut to 120 words), a Llama from a config ({cfg.num_hidden_layers} layers x "
            f"{cfg.hidden_size}, {params / 1e6:.0f}M parameters, random weights, {dtype}), batch {args.batch_size}, "
            f"greedy, at most {args.max_new_tokens} new tokens, device {args.device}; median of {args.repeats} rounds."
            f"\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "generate s", "tokens out", "tokens / generate s",
                   "vs bare"], rows)
    ours = rows[1] if rows[0][0] == BARE else rows[0]
    emit(args, body, [["batched generation (transformers backend) via curate run vs bare generate loop", ours[6], "",
                       f"{ours[5]} tokens/s; {params / 1e6:.0f}M Llama, batch {args.batch_size}, {args.device}"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        model, batch, max_new, device, dtype, data = sys.argv[2:]
        bare(model, int(batch), int(max_new), device, dtype, data)
    else:
        main()
