"""What every LLM-backed operator shares (rephrase, llm_judge): the step runs where its backend
does (io over HTTP, model workers for local models), checks the endpoint before any row is
read, passes its API key's variable to remote workers, and reports the backend's counts."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from curate.llm.config import open_backend


class LLMBacked:
    """Mixed into a Map whose Params have an `llm: LLMConfig` field."""

    if TYPE_CHECKING:
        params: Any  # the Map's

    backend = None

    @classmethod
    def runs_on(cls, params=None) -> str:
        return params.llm.runs_on if params is not None else "io"

    @classmethod
    def env_vars(cls, params) -> tuple[str, ...]:
        return (params.llm.api_key_env,) if params.llm.backend == "openai" and params.llm.api_key_env else ()

    def setup(self) -> None:
        self.backend = open_backend(self.params.llm)
        if self.params.llm.backend != "openai":
            # A local model loads once per worker here, not inside the first batch: the step's
            # seconds in the manifest are then generation alone, as embed's are.
            self.backend.backend.load()

    def preflight(self) -> None:
        if self.params.llm.backend == "openai":  # local models are loaded (and checked) on the workers
            asyncio.run(open_backend(self.params.llm, cached=False).check())

    def take_counts(self) -> dict[str, int]:
        return self.backend.take_counts() if self.backend is not None else {}
