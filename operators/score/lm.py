"""Causal and classifier language models for scoring: loading (local only) and batched passes.

Models load from a local folder or the Hugging Face cache (never downloaded; the embed
operator's resolver). Texts are scored in length-sorted sub-batches (the embed operator's
Batcher: little padding, out-of-memory halving). Nothing here is imported until a scoring
operator's `setup()`; torch and transformers load then.
"""

from __future__ import annotations

import numpy as np

from curate.errors import CurateError
from curate_operators.embed.backends import free_gpu_memory, is_oom, pick_device, pick_precision, require
from curate_operators.embed.batching import Batcher
from curate_operators.embed.resolve import local_model, set_offline


def _load(kind: str, name: str, step: str, device: str = "auto", precision: str = "auto"):
    set_offline()
    transformers = require("transformers", "transformers")
    from curate_operators.embed.text_models import quiet_hf

    quiet_hf()
    path = local_model(name, "transformers")
    device = pick_device(device)
    dtype = pick_precision(precision, device)
    auto = {"causal": transformers.AutoModelForCausalLM,
            "classifier": transformers.AutoModelForSequenceClassification}[kind]
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        try:
            model = auto.from_pretrained(str(path), local_files_only=True, dtype=dtype)
        except TypeError:  # transformers < 4.56 calls it torch_dtype
            model = auto.from_pretrained(str(path), local_files_only=True, torch_dtype=dtype)
    except Exception as e:  # noqa: BLE001: a folder that is not a (complete) model of this kind
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CurateError(f"{step}: could not load model '{name}' from {path} as a {kind} model: "
                          f"{type(e).__name__}: {first}") from None
    model.to(device).eval()
    if tokenizer.pad_token is None:  # decoder tokenizers: pad with EOS (masked out anyway)
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer, model, device


def load_tokenizer(name: str, step: str):
    set_offline()
    transformers = require("transformers", "transformers")
    path = local_model(name, "transformers")
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as e:  # noqa: BLE001
        raise CurateError(f"{step}: could not load tokenizer '{name}' from {path}: {type(e).__name__}: {e}") from None


def _limit(tokenizer, model, wanted: int | None) -> int:
    limits = [v for v in (getattr(tokenizer, "model_max_length", None),
                          getattr(model.config, "max_position_embeddings", None))
              if isinstance(v, int) and 0 < v < 1_000_000]
    limit = min(limits) if limits else 1024
    return min(wanted, limit) if wanted else limit


class CausalLM:
    """A causal LM that gives the mean negative log-likelihood of texts, or of their last part."""

    def __init__(self, name: str, step: str, *, batch_size: int, max_tokens: int | None, max_length: int | None,
                 device: str = "auto", precision: str = "auto"):
        self.tokenizer, self.model, self.device = _load("causal", name, step, device, precision)
        self.max_length = _limit(self.tokenizer, self.model, max_length)
        self.batcher = Batcher(batch_size, max_tokens, is_oom=is_oom, after_oom=free_gpu_memory, what=step)
        bos = self.tokenizer.bos_token_id
        # Every token after the first is predicted; a BOS in front lets the first be scored too.
        added = self.tokenizer("a", add_special_tokens=True)["input_ids"]
        self.prefix = [] if (bos is None or (added and added[0] == bos)) else [bos]

    def ids(self, texts: list[str]) -> list[list[int]]:
        enc = self.tokenizer(texts, add_special_tokens=True, truncation=True,
                             max_length=self.max_length - len(self.prefix), return_attention_mask=False)["input_ids"]
        return [self.prefix + list(e) for e in enc]

    def mean_nll(self, texts: list[str], contexts: list[str] | None = None) -> np.ndarray:
        """Mean NLL (nats per token) of each text; with `contexts`, of each text's tokens given its
        context in front (the context's tokens are not scored). NaN where no token is scored."""
        targets = self.ids(texts)
        if contexts is None:
            rows = [(t, 1) for t in targets]  # (ids, first scored position)
        else:
            ctx = self.tokenizer(contexts, add_special_tokens=True, truncation=True, max_length=self.max_length,
                                 return_attention_mask=False)["input_ids"]
            rows = []
            for c, t in zip(ctx, targets):
                body = t[len(self.prefix):]
                ids = (self.prefix + list(c) + body)[-self.max_length:]  # keep the response when too long
                rows.append((ids, max(1, len(ids) - len(body))))
        lengths = np.array([len(ids) for ids, _ in rows], np.int64)

        def score(positions: np.ndarray) -> np.ndarray:
            return self._nll([rows[i] for i in positions])[:, None]

        if not len(rows):
            return np.zeros(0)
        return self.batcher.run(lengths, score)[:, 0].astype(np.float64)

    def _nll(self, rows: list[tuple[list[int], int]]) -> np.ndarray:
        import torch

        width = max(len(ids) for ids, _ in rows)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        scored = torch.zeros((len(rows), width), dtype=torch.bool)
        for i, (row, first) in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
            scored[i, first:len(row)] = True
        ids, mask, scored = ids.to(self.device), mask.to(self.device), scored.to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
            take = scored[:, 1:]
            total = (nll * take).sum(dim=1)
            count = take.sum(dim=1)
        out = (total / count.clamp(min=1)).cpu().numpy()
        out[count.cpu().numpy() == 0] = np.nan
        return out.astype(np.float32)

    def next_token_logits(self, prompts: list[str]) -> np.ndarray:
        """Logits of the token after each prompt, (n, vocab) float32."""
        import torch

        ids = self.ids(prompts)
        lengths = np.array([len(i) for i in ids], np.int64)

        def step(positions: np.ndarray) -> np.ndarray:
            rows = [ids[i] for i in positions]
            width = max(len(r) for r in rows)
            pad = self.tokenizer.pad_token_id or 0
            x = torch.full((len(rows), width), pad, dtype=torch.long)
            m = torch.zeros((len(rows), width), dtype=torch.long)
            for i, r in enumerate(rows):
                x[i, :len(r)] = torch.tensor(r)
                m[i, :len(r)] = 1
            with torch.inference_mode():
                logits = self.model(input_ids=x.to(self.device), attention_mask=m.to(self.device)).logits
                last = torch.tensor([len(r) - 1 for r in rows], device=logits.device)
                return logits[torch.arange(len(rows), device=logits.device), last].float().cpu().numpy()

        return self.batcher.run(lengths, step)

    def close(self) -> None:
        self.model = None
        free_gpu_memory()


class Classifier:
    """A sequence-classification model: its logits per text, (n, labels)."""

    def __init__(self, name: str, step: str, *, batch_size: int, max_tokens: int | None, max_length: int | None,
                 device: str = "auto", precision: str = "auto"):
        self.tokenizer, self.model, self.device = _load("classifier", name, step, device, precision)
        self.max_length = _limit(self.tokenizer, self.model, max_length)
        self.batcher = Batcher(batch_size, max_tokens, is_oom=is_oom, after_oom=free_gpu_memory, what=step)
        self.labels = int(self.model.config.num_labels)

    def logits(self, texts: list[str]) -> np.ndarray:
        """NaN for a text of no tokens (a tokenizer that adds none to an empty text): it has nothing
        to classify, and a model call would read only the padding its batch gave it (or, alone,
        have no shape at all)."""
        import torch

        lengths = np.asarray(self.tokenizer(texts, truncation=True, max_length=self.max_length,
                                            return_length=True)["length"], np.int64)
        tokens = np.flatnonzero(lengths > 0)

        def step(positions: np.ndarray) -> np.ndarray:
            enc = self.tokenizer([texts[i] for i in tokens[positions]], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt").to(self.device)
            with torch.inference_mode():
                return self.model(**enc).logits.float().cpu().numpy()

        out = np.full((len(texts), self.labels), np.nan, np.float32)
        if len(tokens):
            out[tokens] = self.batcher.run(lengths[tokens], step)
        return out

    def close(self) -> None:
        self.model = None
        free_gpu_memory()
