"""A loopback chat-completions server for tests, benchmarks and dry runs (`curate serve-mock`).

It answers at once and deterministically from the prompt: "Here is a paraphrase:" and then the
user message's last paragraph with its words in reverse order, so outputs are checkable and
the cleaning of preambles is exercised; the synthetic-instruction prompts (DiverseQA, Self-Instruct,
Evol-Instruct) get answers of their shape (mock_synth.py), and a one-paragraph prompt sampled at
temperature > 0 (an instruction, as `respond` sends it) an answer drawn from the prompt and the
request's seed, so n samples differ. Markers in the prompt ask for an outcome: `[[refuse]]`
(a refusal), `[[empty]]` (no text), `[[long]]` (cut at max_tokens: finish_reason "length"),
`[[bad]]` (400, a request the server rejects).

Faults, drawn per request at `fault_rate` among `faults`: `timeout` (no answer for `stall_s`),
`429` (with Retry-After), `500`, `malformed` (200 with a body that is not JSON) and
`truncated` (a body cut short). The draw is a hash of the seed, the prompt and how many times
that prompt was asked before, not of the order requests arrive in: a prompt meets the same
faults in the same order at any concurrency, so a run can be replayed. GET /stats gives the
requests received per prompt (`prompt_key`), how many got a real answer, and the faults injected.
"""

from __future__ import annotations

import asyncio
import hashlib

import orjson

FAULTS = ("timeout", "429", "500", "malformed", "truncated")


def prompt_key(messages: list[dict]) -> str:
    """How /stats names a prompt: a hash of its messages."""
    return hashlib.sha256(orjson.dumps(list(messages))).hexdigest()[:16]


def reply_to(messages: list[dict], sampling: dict | None = None) -> str:
    from curate.llm.mock_synth import answer_instruction, synth_reply  # the synthetic-instruction prompts' answers

    scripted = synth_reply(messages)
    if scripted is not None:
        return scripted
    sampling = sampling or {}
    if (sampling.get("temperature") or 0) > 0 and "\n\n" not in messages[-1]["content"].strip():
        return answer_instruction(messages[-1]["content"], sampling.get("seed"))  # a sampled answer
    text = messages[-1]["content"].split("\n\n")[-1]
    return "Here is a paraphrase:\n\n" + " ".join(reversed(text.split()))


class MockLLM:
    def __init__(
        self,
        models=("mock",),
        api_key: str | None = None,
        fault_rate: float = 0.0,
        faults=FAULTS,
        retry_after: float = 1.0,
        stall_s: float = 30.0,
        seed: int = 0,
    ):
        self.models, self.api_key = list(models), api_key
        self.fault_rate, self.faults = fault_rate, list(faults)
        self.retry_after, self.stall_s = retry_after, stall_s
        self.seed = seed
        self.received: dict[str, int] = {}
        self.answered: dict[str, int] = {}
        self.injected: dict[str, int] = {}

    def app(self):
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.list_models)
        app.router.add_get("/stats", self.stats)
        return app

    def _authorized(self, request) -> bool:
        return self.api_key is None or request.headers.get("Authorization") == f"Bearer {self.api_key}"

    async def list_models(self, request):
        from aiohttp import web

        if not self._authorized(request):
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})

    async def stats(self, request):
        from aiohttp import web

        return web.Response(
            body=orjson.dumps({"received": self.received, "answered": self.answered, "faults": self.injected}),
            content_type="application/json",
        )

    async def chat(self, request):
        from aiohttp import web

        if not self._authorized(request):
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        doc = orjson.loads(await request.read())
        if doc.get("model") not in self.models:
            return web.json_response({"error": {"message": f"model {doc.get('model')!r} does not exist"}}, status=404)
        key = prompt_key(doc["messages"])
        asked_before = self.received.get(key, 0)
        self.received[key] = asked_before + 1
        fault = self._fault_for(key, asked_before)
        if fault is not None:
            self.injected[fault] = self.injected.get(fault, 0) + 1
            return await self._fault(fault, request)
        prompt = doc["messages"][-1]["content"]
        if "[[bad]]" in prompt:
            return web.json_response({"error": {"message": "prompt rejected"}}, status=400)
        text, finish = reply_to(doc["messages"], doc), "stop"
        if "[[refuse]]" in prompt:
            text = "I'm sorry, but I can't help with that request."
        elif "[[empty]]" in prompt:
            text = ""
        elif "[[long]]" in prompt:
            finish = "length"
        self.answered[key] = self.answered.get(key, 0) + 1
        body = {
            "id": "mock",
            "object": "chat.completion",
            "model": doc["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(text.split()),
                "total_tokens": len(prompt.split()) + len(text.split()),
            },
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    def _fault_for(self, key: str, asked_before: int) -> str | None:
        """The fault (or None) of the prompt's request number `asked_before` (from 0)."""
        if not self.fault_rate:
            return None
        draw = hashlib.sha256(f"{self.seed}:{key}:{asked_before}".encode()).digest()
        if int.from_bytes(draw[:8], "big") >= self.fault_rate * 2**64:
            return None
        return self.faults[int.from_bytes(draw[8:16], "big") % len(self.faults)]

    async def _fault(self, fault: str, request):
        from aiohttp import web

        if fault == "timeout":
            await asyncio.sleep(self.stall_s)
            return web.json_response({"error": {"message": "too late"}}, status=504)
        if fault == "429":
            return web.json_response(
                {"error": {"message": "slow down"}}, status=429, headers={"Retry-After": str(self.retry_after)}
            )
        if fault == "500":
            return web.json_response({"error": {"message": "internal error"}}, status=500)
        if fault == "malformed":
            return web.Response(body=b'{"choices": [{"message": ', content_type="application/json")
        # truncated: promise more bytes than are sent, then drop the connection
        response = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": "1000"})
        await response.prepare(request)
        await response.write(b'{"choices": [')
        request.transport.close()
        return response


def serve(host: str = "127.0.0.1", port: int = 8000, **options) -> None:
    from aiohttp import web

    web.run_app(MockLLM(**options).app(), host=host, port=port, print=None, access_log=None)
