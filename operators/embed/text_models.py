"""Text backends: a sentence-transformers model, or a plain Hugging Face AutoModel with mean pooling.

Both load from a local folder or the hub cache (resolve.py; never a download, never remote code)
and report tokens per text (truncated at max_length) as the bucketing cost.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curate.errors import CurateError
from curate_operators.embed.backends import ModelBackend, require
from curate_operators.embed.resolve import local_model, set_offline

DEFAULT_TEXT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def load_error(name: str, path: Path, backend: str, exc: BaseException) -> CurateError:
    return CurateError(f"embed: could not load model '{name}' from {path} with backend {backend}: "
                       f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")


def quiet_hf() -> None:
    """No download/loading progress bars from the Hugging Face libraries in curate's output."""
    try:
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
    except Exception:  # noqa: BLE001: cosmetic
        pass


def model_limit(tokenizer, config) -> int | None:
    """The longest input the model takes, in tokens (None if neither tokenizer nor config says)."""
    limits = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    pos = getattr(config, "max_position_embeddings", None)
    if isinstance(pos, int) and pos > 0:
        limits.append(pos)
    return min(limits) if limits else None


def check_max_length(name: str, wanted: int | None, limit: int | None, default: int | None) -> int:
    if wanted is not None and limit is not None and wanted > limit:
        raise CurateError(f"embed: max_length {wanted} is more than model '{name}' takes ({limit} tokens)")
    return wanted or default or limit or 512


def token_lengths(tokenizer, texts: list[str], max_length: int, exact: bool) -> np.ndarray:
    """The bucketing cost of each text. `exact`: tokens, at most max_length (a token budget needs
    them), from a prefix of each text (a token and its space average 4-5 characters in English; 6
    leaves a margin). Otherwise characters, which sort texts about as tokens do, as
    sentence-transformers' own encode sorts them: that saves a tokenizer pass over every text, a
    third of the step's time on a GPU, where tokenizing is most of the CPU's work."""
    prefix = 6 * max_length
    texts = [t if len(t) <= prefix else t[:prefix] for t in texts]
    if tokenizer is None or not exact:  # characters stand in for tokens
        return np.minimum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), prefix)
    enc = tokenizer(texts, truncation=True, max_length=max_length, return_length=True,
                    return_attention_mask=False, return_token_type_ids=False)
    return np.asarray(enc["length"], dtype=np.int64)


class SentenceTransformersBackend(ModelBackend):
    """A sentence-transformers model folder (modules.json: transformer, pooling, ...) run by its `encode`."""

    def __init__(self, params):
        super().__init__(params)
        import torch

        set_offline()
        st = require("sentence_transformers", "sentence_transformers")
        quiet_hf()
        name = params.model or DEFAULT_TEXT_MODEL
        extra = (f"sentence-transformers/{name}",) if "/" not in name else ()
        path = local_model(name, "sentence_transformers", extra)
        try:
            model = st.SentenceTransformer(str(path), device=self.device, local_files_only=True,
                                           trust_remote_code=False)
        except Exception as e:  # noqa: BLE001: a folder that is not a (complete) model
            raise load_error(name, path, "sentence_transformers", e) from None
        if self.dtype != torch.float32:
            model.to(self.dtype)
        model.eval()
        auto = getattr(model[0], "auto_model", None) if len(model) else None
        limit = model_limit(model.tokenizer, getattr(auto, "config", None))
        model.max_seq_length = check_max_length(name, params.max_length, limit, model.max_seq_length)
        self.model, self.name = model, name
        self.max_length = model.max_seq_length
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def lengths(self, items: list[str]) -> np.ndarray:
        return token_lengths(getattr(self.model, "tokenizer", None), items, self.max_length,
                             exact=self.params.max_batch_tokens is not None)

    def encode(self, items: list[str]) -> np.ndarray:
        out = self.model.encode(items, batch_size=len(items), show_progress_bar=False, convert_to_numpy=True,
                                normalize_embeddings=False)
        return np.asarray(out, dtype=np.float32)


class TransformersBackend(ModelBackend):
    """A plain Hugging Face encoder (AutoModel): mean of the last hidden states over real tokens."""

    def __init__(self, params):
        super().__init__(params)
        set_offline()
        transformers = require("transformers", "transformers")
        quiet_hf()
        name = params.model or DEFAULT_TEXT_MODEL
        path = local_model(name, "transformers")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            try:
                model = transformers.AutoModel.from_pretrained(str(path), local_files_only=True, dtype=self.dtype)
            except TypeError:  # transformers < 4.56 calls it torch_dtype
                model = transformers.AutoModel.from_pretrained(str(path), local_files_only=True,
                                                               torch_dtype=self.dtype)
        except Exception as e:  # noqa: BLE001
            raise load_error(name, path, "transformers", e) from None
        model.to(self.device).eval()
        if tokenizer.pad_token is None:  # decoder-style tokenizers: pad with EOS (masked out anyway)
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        self.tokenizer, self.model, self.name = tokenizer, model, name
        self.max_length = check_max_length(name, params.max_length, model_limit(tokenizer, model.config), None)
        self.dim = int(model.config.hidden_size)

    def lengths(self, items: list[str]) -> np.ndarray:
        return token_lengths(self.tokenizer, items, self.max_length, exact=self.params.max_batch_tokens is not None)

    def encode(self, items: list[str]) -> np.ndarray:
        import torch

        batch = self.tokenizer(items, padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt").to(self.device)
        hidden = self.model(**batch)[0].float()
        mask = batch["attention_mask"].unsqueeze(-1).to(torch.float32)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return pooled.cpu().numpy()
