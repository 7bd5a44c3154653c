"""LLM backends behind one interface, for every LLM-backed operator (rephrase; an LLM judge).

A backend turns a list of `Request`s into `Answer`s (text, finish reason, tokens, or an error
per request); `CachedBackend` puts the on-disk request cache in front of any of them, and
`open_backend(config)` builds the one a recipe's `llm:` block names. Backends import their
libraries (aiohttp, transformers, vllm) only when built.
"""

from curate.llm.config import LLMConfig, open_backend
from curate.llm.types import Answer, BackendError, Request

__all__ = ["Answer", "BackendError", "LLMConfig", "Request", "open_backend"]
