"""Image embedding throughput: `curate run` of a recipe with just `embed` (open_clip, image modality)
vs a bare open_clip loop over the same images, same architecture, batch size and device, in one run.

The images are synthetic JPEGs (coloured shapes on noise, 256-320 px, seeded) in Parquet files, one
binary column, as a user's image shards would be. Both sides are whole processes timed from outside
(wall and CPU-seconds of the process tree): each reads the Parquet files, builds the model, decodes and
preprocesses every image (open_clip's own transform) and encodes it, then writes the vectors (curate:
Parquet with `_embedding` kept; bare: a .npy). "embed s" is the embedding alone (bare: the timer around
decode + preprocess + encode; curate: the embed step in manifest.json). Medians over `--repeats` rounds,
the order rotated each round. The weights are open_clip's random initialisation (`pretrained: random`):
no checkpoint can be downloaded here, and the weights' values do not change the work done.

    python bench/sections/clip_gpu.py [--images 2000] [--arch ViT-B-32] [--batch-size 256] [--device cuda]
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
import statistics
import time


from harness import (CURATE, DATA, RUNS, add_section_args, bare_result, emit, load, machine, require_ok,  # noqa: E402
                     run_measured, step_entry, table)


def images(n: int, files: int = 4) -> list[Path]:
    """`n` seeded JPEGs in `files` Parquet files (columns id, image), generated once."""
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image, ImageDraw

    folder = DATA / f"images-{n}-{files}"
    marker = folder / "done.json"
    if marker.exists():
        return sorted(folder.glob("part-*.parquet"))
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    per = -(-n // files)
    for f in range(files):
        ids, blobs = [], []
        for i in range(f * per, min(n, (f + 1) * per)):
            w, h = (int(x) for x in rng.integers(256, 321, 2))
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            draw = ImageDraw.Draw(img)
            for _ in range(4):
                x0, y0 = int(rng.integers(0, w - 40)), int(rng.integers(0, h - 40))
                draw.ellipse([x0, y0, x0 + 40 + int(rng.integers(0, 120)), y0 + 40 + int(rng.integers(0, 120))],
                             fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=90)
            ids.append(f"img-{i}")
            blobs.append(buf.getvalue())
        pq.write_table(pa.table({"id": ids, "image": pa.array(blobs, pa.binary())}), folder / f"part-{f:03d}.parquet")
    marker.write_text(json.dumps({"images": n, "files": files}))
    return sorted(folder.glob("part-*.parquet"))


def bare(arch: str, batch_size: int, device: str, out: str, files: list[str]) -> None:
    """The reference: a plain loop a user would write with open_clip: decode, preprocess, encode by batch."""
    import io

    import numpy as np
    import open_clip
    import pyarrow.parquet as pq
    import torch
    from PIL import Image

    blobs = [b for f in files for b in pq.read_table(f, columns=["image"]).column(0).to_pylist()]
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None, device=device)
    model.eval()
    if device == "cuda":
        model.half()  # curate's `precision: auto` on a GPU
    dtype = next(model.parameters()).dtype
    start = time.perf_counter()
    chunks = []
    with torch.inference_mode():
        for i in range(0, len(blobs), batch_size):
            pixels = torch.stack([preprocess(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs[i:i + batch_size]])
            v = model.encode_image(pixels.to(device, dtype))
            chunks.append(torch.nn.functional.normalize(v.float(), dim=-1).cpu().numpy())
    seconds = time.perf_counter() - start
    np.save(out, np.concatenate(chunks))
    print(json.dumps({"embed_seconds": seconds, "images": len(blobs)}))


BARE = "bare open_clip loop"


def add_image_bench_args(ap: argparse.ArgumentParser, device: str) -> None:
    """The options of the open_clip image sections (this one and sections/clip_score.py)."""
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--arch", default="ViT-B-32")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--device", choices=["cpu", "cuda"], default=device)
    ap.add_argument("--repeats", type=int, default=2)
    add_section_args(ap)


def median_rows(results: dict[str, list[tuple]], n: int, base: str) -> list[list[str]]:
    """Per run: median wall, CPU and model-step seconds of its rounds (wall, CPU s, inner s first
    in each round's tuple), items per second of both, and both against the `base` run's."""
    base_wall, base_inner = (statistics.median(r[i] for r in results[base]) for i in (0, 2))
    rows = []
    for label, rs in results.items():
        wall, cpu, inner = (statistics.median(r[i] for r in rs) for i in range(3))
        rows.append([label, f"{wall:.1f}", f"{cpu:.1f}", f"{inner:.1f}", rate(n / wall), rate(n / inner),
                     f"{base_wall / wall:.0%}", f"{base_inner / inner:.0%}"])
    return rows


def rate(per_second: float) -> str:
    """Items per second: a decimal where they are few (a CPU's images/s), none where they are many."""
    return f"{per_second:,.1f}" if per_second < 100 else f"{per_second:,.0f}"


def gpu_note(device: str) -> str:
    if device != "cuda":
        return ""
    import torch

    return f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, float16 on both sides. "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_image_bench_args(ap, "cuda")
    args = ap.parse_args()
    files = images(args.images)
    runs = RUNS / "clip"
    runs.mkdir(parents=True, exist_ok=True)
    recipe = runs / "clip.yaml"
    recipe.write_text(
        f"name: clip-bench\ninput: {{path: '{files[0].parent}/part-*.parquet', id_column: id, text_column: image}}\n"
        f"output: {{path: '{runs / 'out'}', keep_columns: [_embedding]}}\n"
        f"steps:\n  - embed: {{backend: open_clip, model: {args.arch}, pretrained: random, modality: image, "
        f"column: image, batch_size: {args.batch_size}, device: {args.device}}}\n")
    results: dict[str, list[tuple[float, float, float]]] = {}
    sides = ["bare", "curate"]
    for repeat in range(args.repeats):
        for side in sides[repeat % 2:] + sides[:repeat % 2]:
            if side == "bare":
                m = run_measured([sys.executable, __file__, "--bare-run", args.arch, str(args.batch_size), args.device,
                                  str(runs / "bare.npy"), *map(str, files)], log=runs / "bare.log")
                label = BARE
                inner = bare_result(m, "bare loop")["embed_seconds"]
            else:
                label = "curate run -w 1"
                m = run_measured([*CURATE, "run", str(recipe), "--overwrite", "-w", "1", "--no-report"],
                                 log=runs / "curate.log")
                require_ok(m, "curate run")
                inner = step_entry(runs / "out", "embed").seconds
            results.setdefault(label, []).append((m.seconds, m.cpu_seconds, inner))
            print(f"round {repeat + 1}: {label}: wall {m.seconds:.1f}s, CPU {m.cpu_seconds:.1f}s, embed {inner:.1f}s "
                  f"(load {load()})", flush=True)
    n = args.images
    rows = median_rows(results, n, BARE)
    gpu = gpu_note(args.device)
    body = (f"Machine: {machine()}; load at the end {load()}. {gpu}\n\n{n:,} synthetic JPEGs (256-320 px) in 4 Parquet "
            f"files; open_clip {args.arch} with random weights; batch {args.batch_size}; device {args.device}; "
            f"median of {args.repeats} rounds. The bare loop decodes and preprocesses on the thread that drives the "
            f"model; curate in its decode worker processes (`decode_workers`' default: on a GPU, the cores but "
            f"one), feeding the model through shared memory.\n\n")
    body += table(["run", "wall s", "CPU s (tree)", "embed s", "images / wall s", "images / embed s",
                   "vs bare (wall)", "vs bare (embed)"], rows)
    ours = rows[1] if rows[0][0] == BARE else rows[0]
    emit(args, body, [[f"open_clip {args.arch} image embed via curate run vs a bare loop ({n:,} images)", ours[6], "",
                       f"embed step {ours[7]} of the bare loop's; {ours[5]} images/s; device {args.device}"]])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-run":
        arch, batch, device, out, *inputs = sys.argv[2:]
        bare(arch, int(batch), device, out, inputs)
    else:
        main()
