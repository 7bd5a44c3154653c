"""Images from a column: encoded bytes (binary), a local file path (string), or a Hugging Face
datasets Image struct ({bytes, path}); decoded with Pillow to RGB.

A value that cannot be read (missing file, not an image, truncated) is an ImageError with a short
reason; the operator sends that row to the trace as `unreadable_image` instead of failing the run.
Relative paths are relative to the working directory of the run.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa

from curate.errors import InputError
from curate.io.webdataset import MEMBER_COLUMN, SHARD_COLUMN


class ImageError(Exception):
    pass


def check_image_column(name: str, type_: pa.DataType) -> None:
    ok = (pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_string(type_)
          or pa.types.is_large_string(type_))
    if pa.types.is_struct(type_):
        fields = {type_.field(i).name for i in range(type_.num_fields)}
        ok = bool(fields & {"bytes", "path"})
    if not ok:
        raise InputError(f"embed: image column '{name}' must hold encoded image bytes (binary), local file paths "
                         f"(string) or {{bytes, path}} structs; it is {type_}")


def image_name(batch: pa.RecordBatch, row: int) -> str:
    """The image at `row` as a trace detail names it: `the image of sample ...` (sample_name) for a
    WebDataset sample, else `the image`."""
    return sample_name(batch, row) or "the image"


def unreadable_detail(batch: pa.RecordBatch, row: int, message: str) -> str:
    """Why the image at `row` cannot be read, naming the WebDataset sample it belongs to."""
    name = sample_name(batch, row)
    return message if name is None else f"{name}: {message}"


def sample_name(batch: pa.RecordBatch, row: int) -> str | None:
    """`the image of sample 000012 (shards/00000.tar, member 000012.jpg)`: the key, tar and member of
    the WebDataset sample at `row`, as the reader's errors name them; None for rows of other inputs.
    Called for the failing rows only."""
    names = batch.schema.names
    key = batch.column("_key")[row].as_py() if "_key" in names else None
    if key is None:
        return None
    if SHARD_COLUMN not in names or MEMBER_COLUMN not in names:  # a Parquet input that kept only `_key`
        return f"the image of sample {key}"
    return (f"the image of sample {key} ({batch.column(SHARD_COLUMN)[row].as_py()}, member "
            f"{batch.column(MEMBER_COLUMN)[row].as_py()})")


def open_image(value):
    """An RGB PIL image from bytes, a path or a {bytes, path} dict; ImageError if it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(value, dict):
        value = value.get("bytes") or value.get("path")
    if value is None:
        raise ImageError("no image")
    try:
        if isinstance(value, (bytes, bytearray, memoryview)):
            source, what = io.BytesIO(value), f"{len(value)} bytes"
        else:
            source, what = Path(value).expanduser(), str(value)
            if not source.is_file():
                raise ImageError(f"no such file: {value}")
        with Image.open(source) as img:
            img.load()
            return img.convert("RGB")
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(f"not an image ({what})") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise ImageError(f"{type(e).__name__}: {e} ({what})") from None
