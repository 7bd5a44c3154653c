"""A local `transformers` causal LM on the model workers (GPU when there is one, else CPU):
batched generation over prompts built with the tokenizer's chat template, left-padded so every
prompt ends where generation starts. Prompts are sorted by length so a batch pads little."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from curate.llm.types import Answer, BackendError, OnAnswer, Request


class TransformersBackend:
    kind = "transformers"

    def __init__(self, model: str, batch_size: int = 16, dtype: str = "auto"):
        self.model, self.batch_size, self.dtype = model, batch_size, dtype
        self.lm: Any = None  # transformers' model and tokenizer, loaded on first use
        self.tokenizer: Any = None

    def load(self) -> None:
        if self.lm is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise BackendError(
                "the transformers backend needs torch and transformers: pip install 'curate[embed]'"
            ) from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model)
            dtype = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
            self.lm = AutoModelForCausalLM.from_pretrained(self.model, torch_dtype=dtype)
        except OSError as e:
            raise BackendError(f"cannot load the local model {self.model!r}: {e}") from None
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.lm.to(self.device).eval()
        self.tokenizer.padding_side = "left"  # generation continues from the last prompt token
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    async def check(self) -> None:
        self.load()

    def prompt(self, request: Request) -> str:
        messages = list(request.messages)
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"  # a base model: the plain text

    async def generate(self, requests: list[Request], on_answer: OnAnswer) -> list[Answer]:
        self.load()
        prompts = [self.prompt(r) for r in requests]
        answers: list[Answer | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}  # a batch shares its sampling parameters
        for i in sorted(range(len(requests)), key=lambda i: len(prompts[i])):  # and pads little
            groups.setdefault(str(requests[i].sampling()), []).append(i)
        for members in groups.values():
            for start in range(0, len(members), self.batch_size):
                batch = members[start : start + self.batch_size]
                for i, answer in zip(batch, self._batch([prompts[i] for i in batch], requests[batch[0]])):
                    answers[i] = answer
                    on_answer(i, answer)
                await asyncio.sleep(0)  # let the cache commit this batch's answers
        return cast(list[Answer], answers)  # every request is in one batch

    def _batch(self, prompts: list[str], request: Request) -> list[Answer]:
        import torch

        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        if request.seed is not None:
            torch.manual_seed(request.seed)
        sampling = (
            {"do_sample": True, "temperature": request.temperature, "top_p": request.top_p}
            if request.temperature > 0
            else {"do_sample": False}
        )
        with torch.inference_mode():
            out = self.lm.generate(
                **encoded, max_new_tokens=request.max_tokens, pad_token_id=self.tokenizer.pad_token_id, **sampling
            )
        width = encoded["input_ids"].shape[1]
        return [
            self._answer(out[row, width:].tolist(), int(encoded["attention_mask"][row].sum()))
            for row in range(len(prompts))
        ]

    def _answer(self, tokens: list[int], prompt_tokens: int) -> Answer:
        eos = self.tokenizer.eos_token_id
        stopped = eos in tokens
        if stopped:
            tokens = tokens[: tokens.index(eos)]
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        return Answer(text, "stop" if stopped else "length", prompt_tokens, len(tokens) + stopped)
