"""An OpenAI-compatible chat-completions endpoint (vLLM serve, TGI, SGLang, Ollama, hosted APIs)
over aiohttp: up to `concurrency` requests in flight, a timeout per request, retries with
exponential backoff and full jitter on timeouts, 429 (at least its Retry-After), 5xx and
malformed or truncated bodies; tokens counted from `usage`.

What cannot be retried away stops the run (BackendError, exit 2) instead of tracing rows: a
wrong key (401/403), an unknown model or path (404), an endpoint that stays unreachable. A
request the server rejects as such (400/413/422: too long, say) is permanently bad: recorded,
never re-sent, its row traced.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from typing import Any, AsyncGenerator, cast

import orjson

from curate.llm.types import Answer, BackendError, OnAnswer, Request

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
PERMANENT_STATUS = {400, 413, 422}


class OpenAIBackend:
    kind = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 256,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        backoff_s: float = 0.5,
        max_backoff_s: float = 60.0,
    ):
        self.model, self.base_url = model, base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.concurrency, self.timeout_s = concurrency, timeout_s
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.sleep = asyncio.sleep  # between retries (tests watch it)
        self._limit: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        # The session (its connections kept alive) of the calls on one event loop: a session per
        # call opened a connection per request slot for every batch, ~28% of the client's CPU at 256
        # in flight on loopback (bench/sections/synth.py). Held by an async generator, which the
        # loop's shutdown (asyncio.run) closes; `close` closes it on a loop that lives on (a worker's).
        self._held: tuple[asyncio.AbstractEventLoop, AsyncGenerator, Any] | None = None  # Any: aiohttp's session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:  # read at the last moment, held nowhere else, never written
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _session(self, headers: dict[str, str] | None = None):
        import aiohttp

        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.concurrency, ttl_dns_cache=300),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
        )

    async def _holder(self) -> AsyncGenerator:
        session = self._session()
        try:
            while True:
                yield session
        finally:
            await session.close()

    async def _held_session(self, loop: asyncio.AbstractEventLoop):
        if self._held is None or self._held[0] is not loop or self._held[2].closed:
            holder = self._holder()
            self._held = (loop, holder, await holder.__anext__())
        return self._held[2]

    def close(self) -> None:
        """Close the held session (the engine's teardown, outside its loop)."""
        held, self._held = self._held, None
        if held is None or held[0].is_closed():
            return
        if held[0].is_running():
            held[0].create_task(held[1].aclose())
        else:
            held[0].run_until_complete(held[1].aclose())

    async def check(self) -> None:
        """GET /models: the endpoint answers, the key is accepted and the model is served."""
        import aiohttp

        where = f"{self.base_url}/models"
        try:
            async with self._session(self._headers()) as session, session.get(where) as response:
                body = await response.read()
                status = response.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
            raise BackendError(
                f"cannot reach the LLM endpoint {self.base_url} ({type(e).__name__}: {e}); check llm.base_url"
            ) from None
        self._raise_fatal(status, body)
        if status != 200:
            raise BackendError(f"the LLM endpoint {where} answered {status}: {body[:200]!r}")
        try:
            served = [m["id"] for m in orjson.loads(body)["data"]]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return  # an endpoint without a model list: the first request will tell
        if served and self.model not in served:
            raise BackendError(
                f"the LLM endpoint {self.base_url} does not serve model {self.model!r}; it serves: "
                f"{', '.join(served[:20])}"
            )

    def _raise_fatal(self, status: int, body: bytes) -> None:
        said = body[:300].decode("utf-8", "replace")
        if status in (401, 403):
            raise BackendError(
                f"the LLM endpoint {self.base_url} refused the API key ({status}: {said}); check the "
                f"key in ${self.api_key_env}"
                if self.api_key_env
                else f"the LLM endpoint {self.base_url} needs an API key ({status}); set llm.api_key_env"
            )
        if status == 404:
            raise BackendError(
                f"the LLM endpoint {self.base_url} answered 404 for model {self.model!r} ({said}); "
                f"check llm.base_url and llm.model"
            )

    async def generate(self, requests: list[Request], on_answer: OnAnswer) -> list[Answer]:
        """Up to `concurrency` senders pull the requests in turn (not one task per request: a
        batch holds thousands), under a limit shared by the calls in flight on this loop. A sender
        holds its place in the limit until its call has no request left: the calls get the places
        in the order they came (the io stage's batches in input order: the first one is done, and
        its rows built, while the later ones keep the requests in flight; handed over request by
        request, the places went round the batches, which all ended together at the task's end),
        and a request costs no hand-over (a waiting sender's wake-up)."""
        loop = asyncio.get_running_loop()
        if self._limit is None or self._limit[0] is not loop:
            self._limit = (loop, asyncio.Semaphore(self.concurrency))
        limit = self._limit[1]
        answers: list[Answer | None] = [None] * len(requests)
        todo = iter(enumerate(requests))
        session = await self._held_session(loop)
        # Built once a call, not per request (the key's variable read per request was ~1% of the
        # client's CPU at 256 in flight on loopback); the key is still read as the call starts.
        url, headers = f"{self.base_url}/chat/completions", self._headers()

        async def sender() -> None:
            async with limit:
                for i, request in todo:
                    answer = answers[i] = await self._send(session, request, url, headers)
                    on_answer(i, answer)

        await _gather_or_cancel([sender() for _ in range(min(self.concurrency, len(requests)))])
        return cast(list[Answer], answers)  # every request answered (or an exception raised)

    async def _send(self, session, request: Request, url: str, headers: dict[str, str]) -> Answer:
        import aiohttp

        body = orjson.dumps({"model": self.model, "messages": list(request.messages), **request.sampling()})
        unreachable = 0
        # `attempts` is the one count of requests tried for this prompt: the cache in front
        # sends each prompt once (one _send) for all the rows, in all the calls, that ask it.
        for attempts in range(1, self.max_retries + 2):
            wait = None
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    payload = await response.read()
                    status = response.status
                    retry_after = response.headers.get("Retry-After") if status == 429 else None
                if status == 200:
                    answer = _parse(payload)
                    if answer.error is None:
                        return answer
                elif status in RETRY_STATUS:
                    answer = Answer(error=f"http_{status}", detail=payload[:300].decode("utf-8", "replace"))
                    wait = _retry_after_seconds(retry_after)
                elif status in PERMANENT_STATUS:
                    return Answer(
                        error="bad_request",
                        detail=f"{status}: {payload[:300].decode('utf-8', 'replace')}",
                        permanent=True,
                    )
                else:
                    self._raise_fatal(status, payload)
                    answer = Answer(error=f"http_{status}", detail=payload[:300].decode("utf-8", "replace"))
            except asyncio.TimeoutError:
                answer = Answer(error="timeout", detail=f"no answer in {self.timeout_s}s")
            except aiohttp.ClientPayloadError as e:
                answer = Answer(error="truncated_body", detail=str(e))
            except (aiohttp.ClientConnectionError, OSError) as e:
                answer = Answer(error="connection", detail=f"{type(e).__name__}: {e}")
                unreachable += isinstance(e, (aiohttp.ClientConnectorError, ConnectionRefusedError))
            if attempts > self.max_retries:
                break
            await self.sleep(max(wait or 0.0, self._backoff(attempts - 1)))
        if unreachable == attempts:  # every attempt failed to connect: the server is gone
            raise BackendError(
                f"the LLM endpoint {self.base_url} stopped accepting connections ({answer.detail}); "
                f"the run can continue with --resume once it is back"
            )
        # An attempt that could not connect sent nothing: said apart, so that the count can be
        # checked against the server's.
        unsent = f", {unreachable} of them not sent (no connection)" if unreachable else ""
        answer.detail = f"after {attempts} attempt{'s' * (attempts != 1)}{unsent}: {answer.detail}"
        return answer

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^attempt)]."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))


def _parse(payload: bytes) -> Answer:
    try:
        doc = orjson.loads(payload)
        choice = doc["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("content is not a string")
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as e:
        return Answer(error="malformed", detail=f"{type(e).__name__}: {e}; body {payload[:200]!r}")
    usage = doc.get("usage") or {}
    return Answer(
        text,
        choice.get("finish_reason"),
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


async def _gather_or_cancel(coroutines) -> None:
    """Run them all; on the first exception (a fatal backend error) cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
