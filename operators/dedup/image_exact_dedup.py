"""image_exact_dedup: keep one row per identical image, by a 128-bit hash of its decoded pixels
(so the same picture saved twice, with other metadata or PNG compression, is one image), or of
its encoded bytes.

prepare hashes each image in the stage's workers (image_hash.pixel_hash); the fit and apply are
exact_dedup's: duckdb keeps the first row of every group (or the best by `prefer`), the others
go to the trace as `exact_duplicate`, detail `duplicate of <_id>`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.ops import Params, reads_column
from curate_operators.dedup.exact import ExactDedup
from curate_operators.dedup.image_hash import encoded_images, pixel_hash


class ImageExactDedupParams(Params):
    image_column: str = reads_column("image", "Encoded image bytes.")
    on: Literal["pixels", "bytes"] = Field("pixels", description="Hash the decoded RGBA pixels and size (an image "
                                           "that does not decode: its bytes), or the encoded bytes (no decode).")
    prefer: str | None = reads_column(None, "Keep the row with the highest value of this column (then the first).")
    prefer_order: Literal["desc", "asc"] = Field("desc", description="Whether the highest or lowest `prefer` wins.")
    memory_mb: int = Field(1024, gt=0, description="Memory for grouping hashes before spilling to disk.")


class ImageExactDedup(ExactDedup):
    """Keep one row per identical image (decoded pixels, or bytes): the first, or the best by `prefer`."""

    name = "image_exact_dedup"
    Params = ImageExactDedupParams

    def prepare(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        images = encoded_images(batch, self.params.image_column, self.name)
        halves = np.array([pixel_hash(b, self.params.on) for b in images], dtype=np.uint64).reshape(-1, 2)
        return {"h1": pa.array(halves[:, 0]), "h2": pa.array(halves[:, 1])}  # uint64, as exact_dedup's
