"""A tiny open_clip model built from a config on the spot (random weights, no download), saved as a
local model folder in the Hugging Face open_clip layout, and PNG images to embed."""

from __future__ import annotations

import io
import json
from pathlib import Path

TINY_CFG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def build_tiny_clip(folder: Path, seed: int = 0) -> Path:
    """`folder` with open_clip_config.json and open_clip_pytorch_model.bin (random weights)."""
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CFG, "preprocess_cfg": {}}))
    torch.manual_seed(seed)
    model = open_clip.create_model(f"local-dir:{folder}", load_weights=False)
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    return folder


def png(color: tuple[int, int, int], size: int = 40, stripe: tuple[int, int, int] | None = None) -> bytes:
    """A PNG of one colour (with a horizontal stripe of another, if given)."""
    from PIL import Image

    img = Image.new("RGB", (size, size), color)
    if stripe is not None:
        for x in range(size):
            for y in range(size // 3, size // 2):
                img.putpixel((x, y), stripe)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
