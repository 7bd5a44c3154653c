"""embed: a vector per row from a text or image column (sentence-transformers, transformers, open_clip or hash).

Model-backed (`Resources(pool="model")`): the engine runs it in a model worker pool, where its
`loaded` backend is loaded once per worker and freed (and the GPU's cached memory) when the stage is done.
The output column is `fixed_size_list<float32|float16>[dim]`, L2-normalised unless `normalize:
false`. Rows with no text (null or blank) go to the trace as `empty` (or are embedded as the empty
string: `on_empty: embed`); image rows that are null or cannot be read go to the trace as
`no_image` / `unreadable_image` with the reason in the detail.

Importing this module imports no torch, transformers or open_clip (`curate ops embed` describes
the parameters without them); they load in `setup()`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from curate.columns import put, text_array
from curate.ops import OPERATIONAL, Map, Params, Resources, Result, Verdict, loaded, reads_column, writes_column
from curate.paths import local_path
from curate_operators.embed.backends import Backend, load_backend

BACKENDS = ("sentence_transformers", "transformers", "open_clip", "hash")


class EmbedParams(Params):
    backend: Literal["sentence_transformers", "transformers", "open_clip", "hash"] = Field(
        "sentence_transformers",
        description="sentence_transformers: a sentence-transformers model; transformers: a plain Hugging Face "
                    "encoder, mean-pooled; open_clip: CLIP text or image towers; hash: no model (hashed character "
                    "n-grams, randomly projected: offline quick runs and tests).")
    model: str | None = local_path(
        None, hub=True, description="A local model folder, or a Hugging Face hub id used from the local cache (never "
                          "downloaded). Default for sentence_transformers and transformers: "
                          "sentence-transformers/all-MiniLM-L6-v2. open_clip: a folder with open_clip_config.json, "
                          "hf-hub:ORG/NAME, a config JSON file or an architecture name (e.g. ViT-B-32).")
    pretrained: str | None = local_path(
        None, hub=True, description="open_clip only: a local checkpoint file (replaces the folder's weights), or 'random' "
                          "(tests only). Needed when `model` is a config file or an architecture name.")
    column: str | None = reads_column(None, "The column to embed; default: the recipe's input.text_column.",
                                      instead_of_text=True)
    modality: Literal["text", "image"] = Field(
        "text", description="image (open_clip only): the column holds encoded image bytes, local file paths "
                            "or {bytes, path} structs.")
    output_column: str = writes_column(
        "_embedding", "Where the vectors go; `_` columns are dropped from the output unless listed in "
                      "output.keep_columns.", min_length=1)
    dtype: Literal["float32", "float16"] = Field("float32", description="Element type of the output vectors.")
    normalize: bool = Field(True, description="L2-normalise the vectors (cosine similarity = dot product).")
    batch_size: int = Field(64, ge=1, le=65536, description="Most rows per model call (halved on out-of-memory).")
    max_batch_tokens: int | None = Field(
        None, ge=1, description="Text: most padded tokens per model call (rows x longest row); null: no limit. "
                                "Rows are sorted by length inside each Arrow batch, so calls pad little.")
    max_length: int | None = Field(
        None, ge=1, description="Text: tokens per text; longer texts are truncated. Default: the model's "
                                "(sentence-transformers: its max_seq_length).")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: a GPU when torch sees one, else CPU.")
    precision: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="Model weights and compute: auto is float16 on a GPU, float32 on CPU.")
    decode_workers: int | None = Field(
        None, ge=0, le=256, json_schema_extra=OPERATIONAL,
        description="Images: processes that decode and preprocess images ahead of the model (0: the model's own "
                    "process does). Default: on a GPU, its share of the cores but one; on CPU, 1 from 2 "
                    "cores (the model keeps every core's thread), else 0.")
    on_empty: Literal["trace", "embed"] = Field(
        "trace", description="Rows whose text is null or blank: send to the trace (reason `empty`), or embed "
                             "them as the empty string.")
    dim: int = Field(256, ge=8, le=8192, description="hash only: dimensions of the vectors.")
    ngram: int = Field(5, ge=1, le=32, description="hash only: length of the hashed character n-grams (UTF-8 bytes).")

    @model_validator(mode="after")
    def _consistent(self) -> "EmbedParams":
        given = self.model_fields_set
        if self.modality == "image" and self.backend != "open_clip":
            raise ValueError("modality: image needs backend: open_clip")
        if self.backend == "open_clip" and not self.model:
            raise ValueError("backend open_clip needs `model` (a model folder, hf-hub:ID, config file or "
                             "architecture name)")
        if self.backend == "hash" and ({"model", "pretrained"} & given):
            raise ValueError("backend hash uses no model (drop `model`/`pretrained`)")
        if self.backend != "hash" and ({"dim", "ngram"} & given):
            raise ValueError("`dim` and `ngram` are for backend hash only")
        if self.backend != "open_clip" and "pretrained" in given:
            raise ValueError("`pretrained` is for backend open_clip only")
        if self.modality == "image" and ({"max_batch_tokens", "max_length", "on_empty"} & given):
            raise ValueError("max_batch_tokens, max_length and on_empty are for text")
        if self.modality == "text" and "decode_workers" in given:
            raise ValueError("decode_workers is for modality: image")
        return self


class Embed(Map):
    """Embed a text or image column with a model (or a model-free hash) into a fixed-size vector column."""

    name = "embed"
    Params = EmbedParams
    resources = Resources(cpus=1.0, pool="model")

    @property
    def column(self) -> str:
        return self.params.column or self.text_column

    @loaded
    def backend(self) -> Backend:
        return load_backend(self.params)

    def packages(self) -> tuple[str, ...]:
        return {"sentence_transformers": ("torch", "sentence_transformers"), "transformers": ("torch", "transformers"),
                "open_clip": ("torch", "open_clip")}.get(self.params.backend, ())

    def preflight(self) -> None:
        """A text model (a local folder, or a hub id in the local cache) is on this machine: the model
        pool would otherwise refuse it only when it loads it, after the stages before it ran."""
        from curate_operators.embed.resolve import local_model
        from curate_operators.embed.text_models import DEFAULT_TEXT_MODEL

        p = self.params
        if p.backend not in ("sentence_transformers", "transformers"):
            return
        name = p.model or DEFAULT_TEXT_MODEL
        extra = (f"sentence-transformers/{name}",) if p.backend == "sentence_transformers" and "/" not in name else ()
        local_model(name, p.backend, extra)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch | Result:
        if self.params.modality == "image":
            from curate_operators.embed.images import check_image_column, unreadable_detail

            values = batch.column(self.column)
            check_image_column(self.column, values.type)
            present = pc.is_valid(values)
            reason = "no_image"
        else:
            values = text_array(batch, self.column, self.name)
            if self.params.on_empty == "embed":
                values = values.fill_null("")
                present = pa.array(np.ones(len(values), dtype=bool))
            else:
                present = pc.fill_null(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(values)), 0), False)
            reason = "empty"
        keep = present.to_numpy(zero_copy_only=False).astype(bool)
        rows = np.flatnonzero(keep)
        items = values if len(rows) == len(values) else values.filter(pa.array(keep))
        matrix, errors = self.backend.embed(items) if len(rows) else (None, {})
        dim = self.backend.dim
        if matrix is not None and self.params.normalize:
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            np.divide(matrix, norms, out=matrix, where=norms > 0)
        if matrix is not None and len(rows) == batch.num_rows:
            full = matrix
        else:  # rows not embedded (they go to the trace) get zeros
            full = np.zeros((batch.num_rows, dim), dtype=np.float32)
            if matrix is not None:
                full[rows] = matrix
        flat = np.ascontiguousarray(full, dtype=self.params.dtype).ravel()
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
        batch = put(batch, self.params.output_column, vectors)
        if len(rows) == batch.num_rows and not errors:
            return batch
        reasons = np.full(batch.num_rows, reason, dtype=object)
        details = np.full(batch.num_rows, None, dtype=object)
        details[~keep] = f"{self.params.modality} column '{self.column}' is " + (
            "null" if self.params.modality == "image" else "null or blank")
        for position, message in errors.items():
            keep[rows[position]] = False
            reasons[rows[position]] = "unreadable_image"
            details[rows[position]] = unreadable_detail(batch, rows[position], message)
        return Result(batch, Verdict(keep, list(reasons), list(details)))
