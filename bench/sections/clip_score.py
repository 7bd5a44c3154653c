"""clip_score throughput: `curate run` of a recipe with just `clip_score` (open_clip image and caption
embeddings, their cosine) vs a bare open_clip loop doing the same over the same pairs, in one run.

The pairs are sections/clip_gpu.py's synthetic JPEGs (256-320 px, seeded) with a caption each, in
Parquet files. Both sides are whole processes timed from outside (wall and CPU-seconds of the
process tree): each reads the files, builds the model, decodes and preprocesses every image
(open_clip's own transform), tokenizes every caption, encodes both and takes the cosine. "score s"
is the scoring alone (bare: the timer around it; curate: the clip_score step in manifest.json).
Medians over `--repeats` rounds, the order rotated each round. Random weights (`pretrained:
random`): nothing can be downloaded, and the weights' values do not change the work.

Both sides' models use the same threads: torch's default (one per core) in the bare loop, and
curate's one model worker gets every core too. The bare loop decodes on the thread that drives the
model; curate on CPU in one decode process beside the model's threads (`decode_workers`' default
there, from two cores), and a run with `decode_workers: 0` (decoding in the model's process, as the
bare loop does) shows what that changes.

On a GPU (`--device cuda`) the section also records the GPU's name, the batch, images/s and the
GPU's mean utilisation (nvidia-smi, else torch.cuda.utilization, sampled every 250 ms) of each
run, and runs both sides again with `--decode-workers` decode processes (bare: DataLoader workers,
pinned memory; curate: `decode_workers`), to show how many keep the GPU busy. Without a GPU the
section says so and exits 0.

    python bench/sections/clip_score.py [--images 2000] [--arch ViT-B-32] [--batch-size 256] [--device cpu]
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
import shutil
import statistics
import subprocess
import time


from sections.clip_gpu import add_image_bench_args, gpu_note, images, median_rows  # noqa: E402
from harness import (CURATE, RUNS, bare_result, emit, load, machine, require_ok,  # noqa: E402
                     run_measured, step_entry, table)
from curate.engine.tasks.plan import available_cores  # noqa: E402
from curate_operators.embed.decoding import decode_workers  # noqa: E402

WORDS = "a photo of the red blue green dog cat house tree car sky round square shape on noise".split()


def pairs(n: int) -> list[Path]:
    """The images of sections/clip_gpu.py with a seeded caption each (columns id, image, caption)."""
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
    """Mean GPU utilisation (%) while it runs, sampled every 250 ms: nvidia-smi, else
    torch.cuda.utilization (NVML); None without a GPU."""

    def __init__(self, path: Path, device: str):
        self.path, self.device, self.proc, self.thread, self.samples = path, device, None, None, []

    def __enter__(self):
        if self.device != "cuda":
            return self
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-i", "0", "-lms", "250"], stdout=self.path.open("w"),
                                         stderr=subprocess.DEVNULL)
        else:
            import threading

            import torch

            self.stop = threading.Event()

            def sample():
                while not self.stop.wait(0.25):
                    self.samples.append(float(torch.cuda.utilization(0)))

            self.thread = threading.Thread(target=sample, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.samples = [float(x) for x in self.path.read_text().split()]
        if self.thread is not None:
            self.stop.set()
            self.thread.join()

    def mean(self) -> float | None:
        return statistics.mean(self.samples) if self.samples else None


BARE = "bare open_clip loop"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_image_bench_args(ap, "cpu")
    ap.add_argument("--decode-workers", default="2,4,8,15",
                    help="cuda: runs of both sides with this many decode processes each")
    args = ap.parse_args()
    if args.device == "cuda" and not cuda_available():
        emit(args, f"Skipped: no CUDA GPU on this machine ({machine()}); run it where one is.",
             [["clip_score on a GPU via curate run vs a bare open_clip loop", "", "", "skipped: no GPU"]])
        return
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
        m = run_measured([sys.executable, __file__, "--bare-run", args.arch, str(args.batch_size), args.device,
                          str(workers), str(runs / "bare.npy"), *map(str, files)], log=runs / "bare.log")
        return m, bare_result(m, "bare loop")["embed_seconds"]

    def curate_side(workers: int | None):
        chosen = [] if workers is None else ["--set", f"steps[0].clip_score.decode_workers={workers}"]
        m = run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", "1", "--no-report", *chosen],
                         log=runs / "curate.log")
        require_ok(m, "curate run")
        return m, step_entry(runs / "out", "clip_score").seconds

    default = decode_workers(None, args.device, available_cores())  # what `-w 1`'s one model worker gets
    sides = {BARE: lambda: bare_side(0), f"curate run -w 1 ({default} decode workers, the default)": lambda: curate_side(None)}
    if args.device == "cpu":  # and the other choice: decoding in the model's process, or a process beside it
        other = 1 if default == 0 else 0
        sides[f"curate run -w 1 (decode_workers: {other})"] = lambda: curate_side(other)
    results: dict[str, list[tuple[float, float, float, float | None]]] = {}

    def measure(label: str, side) -> None:
        with GpuUtilisation(runs / "gpu.txt", args.device) as gpu:
            m, inner = side()
        results.setdefault(label, []).append((m.seconds, m.cpu_seconds, inner, gpu.mean()))
        print(f"{label}: wall {m.seconds:.1f}s, CPU {m.cpu_seconds:.1f}s, score {inner:.1f}s (load {load()})",
              flush=True)

    labels = list(sides)
    for repeat in range(args.repeats):
        turn = repeat % len(labels)
        for label in labels[turn:] + labels[:turn]:
            measure(label, sides[label])
    if args.device == "cuda":
        for workers in (int(w) for w in args.decode_workers.split(",") if w):
            measure(f"bare loop, {workers} DataLoader workers", lambda: bare_side(workers))
            measure(f"curate run -w 1, decode_workers: {workers}", lambda: curate_side(workers))
    n = args.images
    rows = median_rows(results, n, BARE)
    for row, rs in zip(rows, results.values()):  # and the GPU's mean utilisation
        util = [r[3] for r in rs if r[3] is not None]
        row.append(f"{statistics.mean(util):.0f}%" if util else "-")
    body = (f"Machine: {machine()}; load at the end {load()}. {gpu_note(args.device)}\n\n{n:,} synthetic JPEGs "
            f"(256-320 px) with captions in 4 Parquet files; open_clip {args.arch} with random weights; batch "
            f"{args.batch_size}; device {args.device}; median of {args.repeats} rounds, the order rotated. The bare "
            f"loop decodes on the thread that drives the model (with DataLoader workers where named); curate in "
            f"`decode_workers` processes feeding the model through shared memory (0: in the model's process). Both "
            f"sides' models use every core for torch's threads. CPU s: user + system seconds of every process of the run.\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "score s", "pairs / wall s", "pairs / score s",
                   "vs bare (wall)", "vs bare (score)", "GPU util"], rows)
    ours = rows[1]
    base_cpu, our_cpu = float(rows[0][2]), float(ours[2])
    emit(args, body, [[f"clip_score via curate run vs a bare open_clip loop ({n:,} pairs, {args.arch}, {args.device}, "
                       f"{default} decode workers)", ours[6], f"{base_cpu / our_cpu:.0%}",
                       f"score step {ours[7]} of the bare loop's; {ours[5]} pairs/s"]])


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        arch, batch, device, workers, out, *inputs = sys.argv[2:]
        bare(arch, int(batch), device, int(workers), out, inputs)
    else:
        main()
