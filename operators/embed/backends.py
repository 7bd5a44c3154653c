"""The embedding backends behind one interface, and what the model-backed ones share.

A backend turns items (an Arrow string array for text; raw image values for images) into a
float32 matrix, one row per item, not yet normalised (the operator L2-normalises). Model
backends (text_models.py, clip.py) run their items through `batching.Batcher` in length-sorted
sub-batches on the chosen device and precision; the hash backend (hashing.py) needs no model.

torch and the model libraries are imported here only inside functions, when `setup()` loads a
backend, never when the operator module is imported.
"""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from curate.errors import CurateError
from curate_operators.embed.batching import Batcher

if TYPE_CHECKING:
    from curate_operators.embed.embed import EmbedParams


class Backend:
    """Items -> float32 matrix (n, dim). `errors` maps item positions that could not be embedded
    (unreadable images) to a message; the operator sends those rows to the trace."""

    dim: int = 0

    def embed(self, items) -> tuple[np.ndarray, dict[int, str]]:
        raise NotImplementedError

    def close(self) -> None:
        """Free the model (and GPU memory)."""


class ModelBackend(Backend):
    """A torch model: device and precision, sub-batches by length, OOM halving, teardown."""

    def __init__(self, params: "EmbedParams"):
        self.params = params
        self.device = pick_device(params.device)
        self.dtype = pick_precision(params.precision, self.device)
        self.batcher = Batcher(params.batch_size, params.max_batch_tokens, is_oom=is_oom, after_oom=free_gpu_memory)
        self.model = None

    def lengths(self, items: list) -> np.ndarray:
        """The cost of each item for bucketing (tokens for text); equal costs keep input order."""
        return np.zeros(len(items), dtype=np.int64)

    def encode(self, items: list) -> np.ndarray:
        """One sub-batch through the model: float32 (len(items), dim)."""
        raise NotImplementedError

    def prepare(self, items) -> list:
        return items.to_pylist() if isinstance(items, (pa.Array, pa.ChunkedArray)) else list(items)

    def embed(self, items) -> tuple[np.ndarray, dict[int, str]]:
        items = self.prepare(items)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32), {}
        import torch

        with torch.inference_mode():
            matrix = self.batcher.run(self.lengths(items), lambda positions: self.encode([items[i] for i in positions]))
        return matrix, {}

    def close(self) -> None:
        self.model = None
        gc.collect()
        free_gpu_memory()


def pick_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise CurateError("embed: device: cuda, but torch sees no CUDA GPU here (use device: auto or cpu)")
    return requested


def pick_precision(precision: str, device: str):
    """The torch dtype of the model: float16 on a GPU and float32 on CPU unless the recipe says."""
    import torch

    if precision == "auto":
        precision = "float16" if device.startswith("cuda") else "float32"
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[precision]


def is_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def free_gpu_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def load_backend(params: "EmbedParams") -> Backend:
    """The backend the params name, loaded (model files resolved offline, weights read)."""
    if params.backend == "hash":
        from curate_operators.embed.hashing import HashBackend

        return HashBackend(dim=params.dim, ngram=params.ngram)
    try:
        import torch  # noqa: F401
    except ImportError:
        raise CurateError(f"embed: backend {params.backend} needs torch, which is not installed: "
                          f"pip install 'curate[embed]' (or use backend: hash, which needs no model)") from None
    if params.backend == "sentence_transformers":
        from curate_operators.embed.text_models import SentenceTransformersBackend

        return SentenceTransformersBackend(params)
    if params.backend == "transformers":
        from curate_operators.embed.text_models import TransformersBackend

        return TransformersBackend(params)
    from curate_operators.embed.clip import OpenClipBackend

    return OpenClipBackend(params)


def require(module: str, backend: str):
    """Import `module` for `backend`, or say what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise CurateError(f"embed: backend {backend} needs the Python package {module.split('.')[0]}, which is not "
                          f"installed ({e}): pip install 'curate[embed]'") from None
