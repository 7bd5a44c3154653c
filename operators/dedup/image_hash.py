"""Hashes of encoded images for image dedup: an exact 128-bit hash of the decoded pixels (or of
the bytes), and the 64-bit perceptual hash pHash.

pHash is the `imagehash` package's `phash` (hash_size 8, highfreq_factor 4): the image in
grey levels (Pillow's "L"), resized to 32 x 32 with Lanczos, a 2-D DCT-II (scipy.fftpack's, no
normalisation), and one bit per coefficient of the top-left 8 x 8 block: above its median.
Resizing and recompression move few bits, so near-copies are a small Hamming distance apart.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import xxhash

from curate.errors import InputError

PHASH_SIDE = 32
PHASH_BITS = 8


def encoded_images(batch: pa.RecordBatch, column: str, step: str) -> list[bytes | None]:
    """The column's encoded images; anything but binary is an InputError naming the step and column."""
    values = batch.column(column)
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        raise InputError(f"{step}: image column '{column}' must hold encoded image bytes (binary); it is {values.type}")
    return values.to_pylist()


def _open(data: bytes):
    from PIL import Image

    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def pixel_hash(data: bytes | None, on: str) -> tuple[int, int]:
    """Two 64-bit halves of a 128-bit hash: of the RGBA pixels and size (`on="pixels"`; an image
    that does not decode falls back to its bytes, so identical broken files still match), or of
    the bytes. A null image hashes as empty bytes."""
    data = data or b""
    payload = b"bytes:" + data
    if on == "pixels" and data:
        try:
            img = _open(data).convert("RGBA")
            payload = b"pixels:%dx%d:" % img.size + img.tobytes()
        except Exception:  # noqa: BLE001: any decoding failure means: compare the bytes
            pass
    digest = xxhash.xxh3_128_intdigest(payload)
    return digest >> 64, digest & 0xFFFF_FFFF_FFFF_FFFF


def phash(data: bytes | None) -> int | None:
    """The 64-bit pHash as an unsigned int, or None when the image does not decode."""
    if not data:
        return None
    from PIL import Image
    from scipy.fftpack import dct

    try:
        grey = _open(data).convert("L").resize((PHASH_SIDE, PHASH_SIDE), Image.LANCZOS)
    except Exception:  # noqa: BLE001: an image that does not decode has no hash
        return None
    coefficients = dct(dct(np.asarray(grey), axis=0), axis=1)[:PHASH_BITS, :PHASH_BITS]
    bits = coefficients > np.median(coefficients)
    return int.from_bytes(np.packbits(bits.ravel()).tobytes(), "big")


def popcount64(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    b = x.view(np.uint8).reshape(len(x), 8)
    return np.unpackbits(b, axis=1).sum(axis=1)
