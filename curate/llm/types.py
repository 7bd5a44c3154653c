"""What goes into a backend and what comes out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Protocol

import orjson

from curate.errors import CurateError


@dataclass(frozen=True)
class Request:
    """One chat request: the messages ({"role", "content"}) and the sampling parameters."""

    messages: tuple[dict, ...]
    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0

    def sampling(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}

    def key(self, backend: str, model: str) -> str:
        """The cache key: backend, model, full prompt, sampling parameters and seed."""
        doc = [backend, model, list(self.messages), self.sampling()]
        return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class Answer:
    """A request's outcome: `text` (None when it failed), or `error`, a short reason such as
    `timeout`, `http_500`, `malformed`, `bad_request`, with the server's words in `detail`.
    `permanent`: sending it again would fail again (recorded in the cache, never re-sent)."""

    text: str | None = None
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    error: str | None = None
    detail: str | None = None
    permanent: bool = False
    cached: bool = field(default=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None


class BackendError(CurateError):
    """The backend cannot serve this run at all (unreachable endpoint, wrong key, unknown model):
    the run stops before any row is traced for it."""


OnAnswer = Callable[[int, Answer], None]


class Backend(Protocol):
    kind: str  # part of the cache key: "openai", "transformers", "vllm"
    model: str

    async def generate(self, requests: list[Request], on_answer: OnAnswer) -> list[Answer]:
        """An answer per request, in order; `on_answer(i, answer)` is called as each arrives."""

    async def check(self) -> None:
        """Raise BackendError if the backend cannot serve the run (called once before the data)."""
