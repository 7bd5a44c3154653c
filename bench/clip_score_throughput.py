"""clip_score throughput: `curate run` of a recipe with just `clip_score` (open_clip image and caption
embeddings, their cosine) vs a bare open_clip loop doing the same over the same pairs, in one run.

The pairs are clip_throughput.py's synthetic JPEGs (256-320 px, seeded) with a caption each, in
Parquet files. Both sides are whole processes timed from outside (wall and CPU-seconds of the
process tree): each reads the files, builds the model, decodes and preprocesses every image
(open_clip's own transform), tokenizes every caption, encodes both and takes the cosine. "score s"
is the scoring alone (bare: the timer around it; curate: the clip_score step in manifest.json).
Medians over `--repeats` rounds, the order rotated each round. Random weights (`pretrained:
random`): nothing can be downloaded, and the weights' values do not change the work.

On a GPU (`--device cuda`) the section also records the GPU's name, the batch, images/s and the
GPU's mean utilisation (nvidia-smi sampled every 250 ms) of each side, and runs the bare loop
again with its decoding in `--decode-workers` DataLoader worker processes (pinned memory), to
show how many CPU decode workers keep the GPU busy.

    python bench/clip_score_throughput.py [--images 2000] [--arch ViT-B-32] [--batch-size 256] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clip_throughput import add_image_bench_args, gpu_note, images, median_rows  # noqa: E402
from harness import (CURATE, RUNS, bare_result, emit, load, machine, require_ok,  # noqa: E402
                     run_measured, step_entry, table)

WORDS = "a photo of the red blue green dog cat house tree car sky round square shape on noise".split()


def pairs(n: int) -> list[Path]:
    """The images of clip_throughput.py with a seeded caption each (columns id, image, caption)."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    sources = images(n)
    folder = sources[0].parent.with_name(sources[0].parent.name + "-captions")
    if (folder / "done.json").exists():
        return sorted(folder.glob("part-*.parquet"))
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for src in sources:
        t = pq.read_table(src)
        captions = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(t.num_rows)]
        pq.write_table(t.append_column("caption", pa.array(captions)), folder / src.name)
    (folder / "done.json").write_text(json.dumps({"images": n}))
    return sorted(folder.glob("part-*.parquet"))


def bare(arch: str, batch_size: int, device: str, workers: int, out: str, files: list[str]) -> None:
    """The reference loop a user would write: decode, preprocess, tokenize, encode, cosine; with
    `workers` > 0 the decoding runs in DataLoader worker processes feeding pinned batches."""
    import io

    import numpy as np
    import open_clip
    import pyarrow.parquet as pq
    import torch
    from PIL import Image

    tables = [pq.read_table(f, columns=["image", "caption"]) for f in files]
    blobs = [b for t in tables for b in t.column("image").to_pylist()]
    captions = [c for t in tables for c in t.column("caption").to_pylist()]
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None, device=device)
    tokenizer = open_clip.get_tokenizer(arch)
    model.eval()
    if device == "cuda":
        model.half()  # curate's `precision: auto` on a GPU
    dtype = next(model.parameters()).dtype

    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return len(blobs)

        def __getitem__(self, i):
            return preprocess(Image.open(io.BytesIO(blobs[i])).convert("RGB")), tokenizer([captions[i]])[0]

    loader = torch.utils.data.DataLoader(Pairs(), batch_size=batch_size, num_workers=workers,
                                         pin_memory=device == "cuda", prefetch_factor=4 if workers else None)
    start = time.perf_counter()
    scores = []
    with torch.inference_mode():
        for pixels, tokens in loader:
            img = model.encode_image(pixels.to(device, dtype, non_blocking=True))
            txt = model.encode_text(tokens.to(device, non_blocking=True))
            img = torch.nn.functional.normalize(img.float(), dim=-1)
            txt = torch.nn.functional.normalize(txt.float(), dim=-1)
            scores.append((img * txt).sum(-1).cpu().numpy())
    seconds = time.perf_counter() - start
    np.save(out, np.concatenate(scores))
    print(json.dumps({"embed_seconds": seconds, "images": len(blobs)}))


class GpuUtilisation:
    """Mean GPU utilisation (%) while it runs, from nvidia-smi sampled every 250 ms (None without one)."""

    def __init__(self, path: Path):
        self.path, self.proc = path, None

    def __enter__(self):
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "250"], stdout=self.path.open("w"), stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()

    def mean(self) -> float | None:
        values = [float(x) for x in self.path.read_text().split()] if self.proc is not None else []
        return statistics.mean(values) if values else None


BARE = "bare open_clip loop"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_image_bench_args(ap, "cpu")
    ap.add_argument("--decode-workers", default="2,4,8,16", help="cuda: bare-loop runs with this many decode workers")
    args = ap.parse_args()
    files = pairs(args.images)
    runs = RUNS / "clip-score"
    runs.mkdir(parents=True, exist_ok=True)
    recipe = runs / "clip-score.yaml"
    recipe.write_text(
        f"name: clip-score-bench\ninput: {{path: '{files[0].parent}/part-*.parquet', id_column: id, "
        f"text_column: caption}}\noutput: {{path: '{runs / 'out'}'}}\n"
        f"steps:\n  - clip_score: {{model: {args.arch}, pretrained: random, batch_size: {args.batch_size}, "
        f"device: {args.device}}}\n")

    def bare_side(workers: int):
        return run_measured([sys.executable, __file__, "--bare-run", args.arch, str(args.batch_size), args.device,
                             str(workers), str(runs / "bare.npy"), *map(str, files)], log=runs / "bare.log")

    results: dict[str, list[tuple[float, float, float, float | None]]] = {}
    sides = ["bare", "curate"]
    for repeat in range(args.repeats):
        for side in sides[repeat % 2:] + sides[:repeat % 2]:
            with GpuUtilisation(runs / "gpu.txt") as gpu:
                if side == "bare":
                    label, m = BARE, bare_side(0)
                    inner = bare_result(m, "bare loop")["embed_seconds"]
                else:
                    label = "curate run -w 1"
                    m = run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", "1", "--no-report"],
                                     log=runs / "curate.log")
                    require_ok(m, "curate run")
                    inner = step_entry(runs / "out", "clip_score")["seconds"]
            results.setdefault(label, []).append((m.seconds, m.cpu_seconds, inner, gpu.mean()))
            print(f"round {repeat + 1}: {label}: wall {m.seconds:.1f}s, CPU {m.cpu_seconds:.1f}s, score {inner:.1f}s "
                  f"(load {load()})", flush=True)
    if args.device == "cuda":
        for workers in (int(w) for w in args.decode_workers.split(",") if w):
            with GpuUtilisation(runs / "gpu.txt") as gpu:
                m = bare_side(workers)
            inner = bare_result(m, "bare loop")["embed_seconds"]
            results[f"bare loop, {workers} decode workers"] = [(m.seconds, m.cpu_seconds, inner, gpu.mean())]
    n = args.images
    rows = median_rows(results, n, BARE)
    for row, rs in zip(rows, results.values()):  # and the GPU's mean utilisation
        util = [r[3] for r in rs if r[3] is not None]
        row.append(f"{statistics.mean(util):.0f}%" if util else "-")
    gpu_line = gpu_note(args.device)
    body = (f"Machine: {machine()}; load at the end {load()}. {gpu_line}\n\n{n:,} synthetic JPEGs (256-320 px) with "
            f"captions in 4 Parquet files; open_clip {args.arch} with random weights; batch {args.batch_size}; device "
            f"{args.device}; median of {args.repeats} rounds. `curate run` and the first bare loop decode on the "
            f"thread that drives the model; the other bare loops decode in DataLoader worker processes.\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "score s", "pairs / wall s", "pairs / score s",
                   "vs bare (wall)", "vs bare (score)", "GPU util"], rows)
    ours = next(r for r in rows if r[0].startswith("curate"))
    emit(args, body, [[f"clip_score via curate run vs a bare open_clip loop ({n:,} pairs, {args.arch}, {args.device})",
                       ours[6], "", f"score step {ours[7]} of the bare loop's; {ours[5]} pairs/s"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        arch, batch, device, workers, out, *inputs = sys.argv[2:]
        bare(arch, int(batch), device, int(workers), out, inputs)
    else:
        main()
