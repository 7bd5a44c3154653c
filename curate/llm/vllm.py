"""vLLM's offline engine on a model worker (GPU machines), when vllm is installed.

Untested here: this project's CI and dev machines have no GPU and no vllm; the code follows
vLLM's documented `LLM.chat` API (a list of conversations, one SamplingParams each)."""

from __future__ import annotations

from typing import Any

from curate.llm.types import Answer, BackendError, OnAnswer, Request


class VLLMBackend:
    kind = "vllm"

    def __init__(self, model: str, dtype: str = "auto"):
        self.model, self.dtype = model, dtype
        self.engine: Any = None  # vllm.LLM, loaded on first use

    def load(self) -> None:
        if self.engine is not None:
            return
        try:
            from vllm import LLM
        except ImportError:
            raise BackendError("the vllm backend needs vllm installed (GPU machines): pip install vllm") from None
        self.engine = LLM(model=self.model, dtype=self.dtype)

    async def check(self) -> None:
        self.load()

    async def generate(self, requests: list[Request], on_answer: OnAnswer) -> list[Answer]:
        from vllm import SamplingParams

        self.load()
        params = [
            SamplingParams(max_tokens=r.max_tokens, temperature=r.temperature, top_p=r.top_p, seed=r.seed)
            for r in requests
        ]
        outputs = self.engine.chat([list(r.messages) for r in requests], sampling_params=params, use_tqdm=False)
        answers = []
        for i, out in enumerate(outputs):
            done = out.outputs[0]
            answers.append(Answer(done.text, done.finish_reason, len(out.prompt_token_ids), len(done.token_ids)))
            on_answer(i, answers[-1])
        return answers
