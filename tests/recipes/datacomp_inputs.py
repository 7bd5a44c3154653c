"""What the recipes/datacomp-*.yaml need to run offline: img2dataset-style tar shards of coloured
images with English and German captions, a tiny random open_clip model, a tiny fastText
language-ID model trained on the spot (in lid.176's label form), reference embeddings (the
tiny model's embeddings of a few of the images) and a class list; and the `--set` arguments
that point each recipe at them."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import yaml

from tests.curate.io.wds_shards import image_bytes, sample, write_tar

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
EN = ["a photo of a red dog on the grass", "the cat sleeps near the window", "a small bird on a tree branch",
      "two people walking on the beach", "a bowl of fruit on the table", "a car parked in the street",
      "sunset over the mountain lake", "a dog playing with a ball"]
COLOURS = [(200, 30, 30), (30, 200, 30), (20, 30, 220), (240, 240, 240), (10, 10, 10), (200, 120, 0)]
DE = ["ein Hund spielt im Garten mit dem Ball", "die Katze schläft auf dem Sofa", "zwei Menschen gehen am Strand",
      "ein Auto steht auf der Straße"]


def train_lid(path: Path) -> Path:
    """A fastText supervised model with __label__en / __label__de, as lid.176 labels them."""
    import fasttext

    lines = [f"__label__en {t}" for t in EN * 8] + [f"__label__de {t}" for t in DE * 16]
    random.Random(0).shuffle(lines)
    data = path.with_suffix(".train.txt")
    data.write_text("\n".join(lines) + "\n")
    model = fasttext.train_supervised(str(data), epoch=30, lr=0.5, dim=16, minn=2, maxn=4, seed=0, thread=1,
                                      verbose=0)
    model.save_model(str(path))
    return path


def shards(folder: Path, rows: int = 40) -> Path:
    """Two shards; sizes and shapes vary (some too small or too elongated for the basic filter),
    captions English or German, a few too short; six colours, so clusters form."""
    rng = random.Random(1)
    members = [[], []]
    for i in range(rows):
        caption = rng.choice(EN + DE) if i % 9 else "dog"
        size = (rng.choice([120, 240, 320, 700]), rng.choice([200, 260, 300]))
        fmt, colour = ("JPEG", "jpg") if i % 3 else ("PNG", "png"), COLOURS[i % len(COLOURS)]
        members[i % 2] += [(f"{i:06d}.{fmt[1]}", image_bytes(size, colour, fmt[0]))] + sample(
            f"{i:06d}", caption, size=size, image=False, original_width=size[0], original_height=size[1])
    for k, part in enumerate(members):
        write_tar(folder / f"{k:05d}.tar", part)
    return folder


def reference_embeddings(model: Path, path: Path) -> Path:
    """The tiny model's unit image embeddings of a few images, as a reference set (.npy)."""
    import open_clip
    import torch
    from PIL import Image

    clip, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{model}")
    clip.eval()
    images = [image_bytes((64, 64), COLOURS[0]), image_bytes((64, 64), COLOURS[3])]
    with torch.no_grad():
        x = clip.encode_image(torch.stack([preprocess(Image.open(io.BytesIO(b)).convert("RGB")) for b in images]))
    x = (x / x.norm(dim=-1, keepdim=True)).numpy().astype(np.float32)
    np.save(path, x)
    return path


def prepare(tmp: Path, monkeypatch, rows: int = 40) -> None:
    """Build every input under `tmp` (`rows` pairs) and point the recipes' ${...} variables at them
    (`monkeypatch.setenv`)."""
    from tests.operators.embed.tiny_clip import build_tiny_clip

    model = build_tiny_clip(tmp / "clip")
    monkeypatch.setenv("LID_MODEL", str(train_lid(tmp / "lid.bin")))
    monkeypatch.setenv("TARGET_EMBEDDINGS", str(reference_embeddings(model, tmp / "targets.npy")))
    monkeypatch.setenv("CLASSES", str(tmp / "classes.txt"))
    (tmp / "classes.txt").write_text("dog\ncat, kitten\nbird\n")
    shards(tmp / "shards", rows)


def recipe_args(name: str, tmp: Path) -> list[str]:
    """`--input` and the `--set`s that make recipes/NAME.yaml small and offline (after prepare)."""
    args = ["--input", f"{tmp}/shards/*.tar"]
    steps = yaml.safe_load((RECIPES / f"{name}.yaml").read_text())["steps"]
    for i, step in enumerate(steps):
        (op, params), = step.items()
        if op in ("clip_score", "embed"):
            args += ["--set", f"steps[{i}].{op}.model={tmp / 'clip'}", "--set", f"steps[{i}].{op}.pretrained=null",
                     "--set", f"steps[{i}].{op}.device=cpu"]
        if op == "image_cluster_filter":
            args += ["--set", f"steps[{i}].{op}.k=4", "--set", f"steps[{i}].{op}.niter=5"]
    return args
