"""The `llm:` block of a recipe step, and the backend it names (with the request cache in front)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from curate.llm.types import Backend
from curate.ops import OPERATIONAL, Params
from curate.paths import local_path

# Parameters that say where and how hard to send, not what comes back: not in the fingerprint,
# so fixing an endpoint or rotating a key does not stop --resume. Model and sampling are in it.
_OP: dict[str, Any] = {"json_schema_extra": OPERATIONAL}


class LLMConfig(Params):
    backend: Literal["openai", "transformers", "vllm"] = Field(
        "openai", description="openai: an OpenAI-compatible HTTP endpoint; transformers or vllm: a local model."
    )
    model: str = local_path(
        hub=True,
        unless={"backend": "openai"},
        description="Model name at the endpoint, or a local model name or directory.",
    )
    base_url: str | None = Field(None, description="Endpoint, e.g. http://localhost:8000/v1 (openai backend).", **_OP)
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        description="Environment variable holding the API key (read when sending, never written anywhere).",
        **_OP,
    )
    concurrency: int = Field(256, gt=0, description="Requests in flight per process (openai backend).", **_OP)
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout (openai backend).", **_OP)
    max_retries: int = Field(
        6, ge=0, description="Retries of a request that timed out or got 429/5xx/a bad body.", **_OP
    )
    backoff_s: float = Field(
        0.5, ge=0, description="First retry's backoff cap; doubles each retry, full jitter.", **_OP
    )
    max_backoff_s: float = Field(60.0, ge=0, description="Largest backoff between retries.", **_OP)
    max_tokens: int = Field(512, gt=0, description="Most tokens generated per answer.")
    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = Field(None, description="Sampling seed sent with each request; default: the recipe's seed.")
    cache_dir: str | None = Field(
        None,
        description="Request cache directory; default $CURATE_CACHE_DIR or "
        "~/.cache/curate. Outlives the run, so answers are never paid twice.",
        **_OP,
    )
    batch_size: int = Field(16, gt=0, description="Prompts per generate call (local backends).", **_OP)
    dtype: str = Field("auto", description="Local backends' weights dtype: auto, float32, bfloat16, float16.")

    @model_validator(mode="after")
    def _endpoint(self):
        if self.backend == "openai" and not self.base_url:
            raise ValueError("the openai backend needs base_url (e.g. ${OPENAI_BASE_URL})")
        return self

    @property
    def pool(self) -> str:
        """Where an operator using it runs (its Resources' pool): HTTP waits on the network ("io");
        local models on the model workers."""
        return "io" if self.backend == "openai" else "model"


def open_backend(config: LLMConfig, cached: bool = True):
    """The backend `config` names, behind the request cache unless `cached` is False."""
    backend: Backend
    if config.backend == "openai":
        from curate.llm.openai import OpenAIBackend

        assert config.base_url is not None  # _endpoint: the openai backend has one
        backend = OpenAIBackend(
            config.model,
            config.base_url,
            config.api_key_env,
            config.concurrency,
            config.timeout_s,
            config.max_retries,
            config.backoff_s,
            config.max_backoff_s,
        )
    elif config.backend == "transformers":
        from curate.llm.local import TransformersBackend

        backend = TransformersBackend(config.model, config.batch_size, config.dtype)
    else:
        from curate.llm.vllm import VLLMBackend

        backend = VLLMBackend(config.model, config.dtype)
    if not cached:
        return backend
    from curate.llm.cache import CachedBackend, RequestCache

    return CachedBackend(backend, RequestCache(config.cache_dir))
