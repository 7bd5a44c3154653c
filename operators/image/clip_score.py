"""clip_score: the cosine of the open_clip image and text embeddings of each image-text pair.

`quality_clip_score` = <img / |img|, txt / |txt|>, as DataComp's `clip_b32_similarity_score` /
`clip_l14_similarity_score` are computed (without OpenAI CLIP's logit scale). The model is
loaded once per model worker (the open_clip backend of `embed`, operators/embed/clip.py: same
`model` / `pretrained` forms, never a download); images are decoded with Pillow and run through
the model's own preprocessing by `decode_workers` CPU processes that feed the model's batches
through shared memory (operators/embed/decoding.py), or in the model's process with 0. `keep_embedding` also writes the normalised image
embedding to `_embedding`, so a later semantic_dedup or density_prune does not embed again.

`min_score` drops rows below it (trace `clip_score_low`); a fraction of the whole dataset is
`clip_score_select` (a Global: the threshold needs every score). Rows with no image, an image
that cannot be decoded, or no caption go to the trace (`no_image`, `unreadable_image`,
`no_caption`); an undecodable image of a WebDataset sample is named by its key, tar and member.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curate.columns import put
from curate.ops import OPERATIONAL, Map, Params, Resources, Result, Verdict, loaded, reads_column, writes_column
from curate_operators.embed.backends import Backend, load_backend


class ClipScoreParams(Params):
    model: str = Field(description="open_clip model: a folder with open_clip_config.json, hf-hub:ORG/NAME (local "
                                   "cache), a config JSON file or an architecture name (e.g. ViT-B-32).")
    pretrained: str | None = Field(None, description="A local checkpoint file, or 'random' (tests only); needed "
                                                     "when `model` is a config file or an architecture name.")
    image_column: str = reads_column("image", "Encoded image bytes, local paths or {bytes, path} structs.")
    caption_column: str | None = reads_column(None, "The caption; default: the recipe's input.text_column.",
                                              instead_of_text=True)
    output_column: str = writes_column("quality_clip_score", "Where the cosine goes.", min_length=1)
    keep_embedding: bool = Field(False, description="Also write the L2-normalised image embedding (for "
                                                    "semantic_dedup, density_prune, ...).")
    embedding_column: str = Field("_embedding", description="Where keep_embedding writes it.")
    min_score: float | None = Field(None, ge=-1, le=1, description="Drop rows scoring below this (DataComp: "
                                                                   "keep score >= threshold).")
    batch_size: int = Field(64, ge=1, le=65536, description="Most pairs per model call (halved on out-of-memory).")
    decode_workers: int | None = Field(
        None, ge=0, le=256, json_schema_extra=OPERATIONAL,
        description="Processes that decode and preprocess the images ahead of the model (0: the model's own "
                    "process does). Default: on a GPU, its share of the cores but one; on CPU, 1 from 2 "
                    "cores (the model keeps every core's thread), else 0.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: a GPU when torch sees one.")
    precision: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="auto: float16 on a GPU, float32 on CPU.")


class ClipScore(Map):
    """CLIP score of image-text pairs (open_clip), optionally the image embedding, optionally a threshold."""

    name = "clip_score"
    Params = ClipScoreParams
    resources = Resources(cpus=1.0, pool="model")

    def computed_provides(self) -> tuple[str, ...]:
        return (self.params.embedding_column,) if self.params.keep_embedding else ()

    @property
    def caption(self) -> str:
        return self.params.caption_column or self.text_column

    @loaded
    def backend(self) -> Backend:
        """One open_clip model for both towers."""
        from curate_operators.embed.embed import EmbedParams

        p = self.params
        return load_backend(EmbedParams(backend="open_clip", model=p.model, pretrained=p.pretrained, modality="image",
                                        batch_size=p.batch_size, device=p.device, precision=p.precision,
                                        decode_workers=p.decode_workers))

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch | Result:
        from curate_operators.embed.backends import ModelBackend
        from curate_operators.embed.images import check_image_column, unreadable_detail

        images = batch.column(self.params.image_column)
        check_image_column(self.params.image_column, images.type)
        captions = batch.column(self.caption)
        n = batch.num_rows
        reasons = np.full(n, None, dtype=object)
        details = np.full(n, None, dtype=object)
        no_image = ~pc.is_valid(images).to_numpy(zero_copy_only=False)
        no_caption = ~pc.is_valid(captions).to_numpy(zero_copy_only=False)
        reasons[no_caption], details[no_caption] = "no_caption", f"caption column '{self.caption}' is null"
        reasons[no_image], details[no_image] = "no_image", f"image column '{self.params.image_column}' is null"
        keep = ~(no_image | no_caption)
        rows = np.flatnonzero(keep)
        dim = self.backend.dim
        img = np.zeros((n, dim), dtype=np.float32)
        scores = np.full(n, np.nan, dtype=np.float64)
        if len(rows):
            picked = pa.array(keep)
            matrix, errors = self.backend.embed(images.filter(picked))
            # the text tower through the same backend (its text path), one model for both
            text, _ = ModelBackend.embed(self.backend, captions.filter(picked))
            for position, message in errors.items():
                keep[rows[position]] = False
                reasons[rows[position]] = "unreadable_image"
                details[rows[position]] = unreadable_detail(batch, rows[position], message)
            matrix = _unit(matrix)
            img[rows] = matrix
            scores[rows] = np.einsum("ij,ij->i", matrix, _unit(text), dtype=np.float64)
        valid = keep.copy()
        if self.params.min_score is not None:
            low = keep & ~(scores >= self.params.min_score)
            keep &= ~low
            reasons[low] = "clip_score_low"
            details[low] = [f"clip score {s:.4f} < {self.params.min_score}" for s in scores[low]]
        batch = put(batch, self.params.output_column, pa.array(scores, mask=~valid))
        if self.params.keep_embedding:
            batch = put(batch, self.params.embedding_column,
                        pa.FixedSizeListArray.from_arrays(pa.array(img.ravel()), dim))
        if keep.all():
            return batch
        return Result(batch, Verdict(keep, list(reasons), list(details)))


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
