"""Tiny WebDataset tar shards made on the spot, laid out as img2dataset writes them: KEY.jpg (or
png, webp), KEY.txt and KEY.json (`json.dumps(meta, indent=4)`, the caption among its fields)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path


def image_bytes(size: tuple[int, int], color=(200, 30, 30), fmt: str = "JPEG") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format=fmt)
    return buf.getvalue()


def sample(key: str, caption: str | None = "a red square", size=(64, 48), fmt: str = "JPEG",
           image: bool = True, **meta) -> list[tuple[str, bytes]]:
    """The members of one sample (an image of `size` in `fmt`, a caption, img2dataset's json)."""
    suffix = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}[fmt]
    members = []
    if image:
        members.append((f"{key}.{suffix}", image_bytes(size, fmt=fmt)))
    if caption is not None:
        members.append((f"{key}.txt", caption.encode()))
    fields = {"url": f"http://example.com/{key}", "caption": caption, "key": key, "status": "success",
              "width": size[0], "height": size[1], **meta}
    members.append((f"{key}.json", json.dumps(fields, indent=4).encode()))
    return members


def write_tar(path: Path, members: list[tuple[str, bytes]], mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def tar_members(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar if m.isfile()]


def run_on_shards(cli, tmp_path: Path, steps: str, output: str = "") -> Path:
    """`curate run -w 1` of the shards in tmp_path/in (caption as the text) through `steps` (a YAML
    list); its output folder. `output`: more settings of the output (`, keep_columns: [_key]`)."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"input: {{path: '{tmp_path / 'in'}', text_column: caption}}\n"
                      f"output: {{path: '{tmp_path / 'out'}'{output}}}\nsteps: {steps}\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 0, res.output
    return tmp_path / "out"
