"""What every LLM-backed operator shares (rephrase, llm_judge): the step runs where its backend
does (io over HTTP, model workers for local models), checks the endpoint before any row is
read, passes its API key's variable to remote workers, and reports the backend's counts."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from curate.llm.config import open_backend
from curate.loaded import is_loaded, loaded


class LLMBacked:
    """Mixed into a Map whose Params have an `llm: LLMConfig` field."""

    if TYPE_CHECKING:
        params: Any  # the Map's

    @classmethod
    def resources_for(cls, params):
        return cls.resources.model_copy(update={"pool": params.llm.pool})

    @classmethod
    def env_vars(cls, params) -> tuple[str, ...]:
        return (params.llm.api_key_env,) if params.llm.backend == "openai" and params.llm.api_key_env else ()

    @loaded
    def backend(self):
        backend = open_backend(self.params.llm)
        if self.params.llm.backend != "openai":
            # A local model loads once per worker here (setup), not inside the first batch: the
            # step's seconds in the manifest are then generation alone, as embed's are.
            backend.backend.load()
        return backend

    def preflight(self) -> None:
        if self.params.llm.backend == "openai":  # local models are loaded (and checked) on the workers
            asyncio.run(open_backend(self.params.llm, cached=False).check())

    def take_counts(self) -> dict[str, int]:
        return self.backend.take_counts() if is_loaded(self, "backend") else {}
