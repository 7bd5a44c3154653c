"""Parameters shared by the scoring operators that run a model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from curate.ops import Params, loaded
from curate.paths import local_path


class ModelScoreParams(Params):
    model: str = local_path(..., hub=True, description="A local model folder, or a Hugging Face hub id used from "
                                                       "the local cache (never downloaded).")
    batch_size: int = Field(16, ge=1, le=65536, description="Most rows per model call (halved on out-of-memory).")
    max_batch_tokens: int | None = Field(None, ge=1, description="Most padded tokens per model call; null: no limit.")
    max_length: int | None = Field(None, ge=2, description="Tokens per text; longer texts are truncated. "
                                                           "Default: the model's limit.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: a GPU when torch sees one, else CPU.")
    precision: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="auto is float16 on a GPU, float32 on CPU.")


def load_scorer(kind: type, p: ModelScoreParams, step: str):
    """The model `p` names as a `kind` (operators/score/lm.py: CausalLM or Classifier), loaded."""
    return kind(p.model, step, batch_size=p.batch_size, max_tokens=p.max_batch_tokens, max_length=p.max_length,
                device=p.device, precision=p.precision)


def scorer(kind: str, doc: str | None = None) -> loaded:
    """A `loaded` attribute: the model the op's params name, as the `kind` class of operators/score/lm.py
    ("CausalLM" or "Classifier"), loaded by load_scorer (lm.py, and torch with it, imported on first use)."""

    def load(op):
        from curate_operators.score import lm

        return load_scorer(getattr(lm, kind), op.params, op.name)

    load.__doc__ = doc
    return loaded(load)
