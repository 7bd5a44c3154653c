"""The mock LLM server (curate/llm/mock_server.py) on a free loopback port (or the one given), in
a thread of the test process, with its request counts at hand."""

from __future__ import annotations

import asyncio
import threading

from curate.llm.mock_server import MockLLM


class RunningMock:
    def __init__(self, port: int = 0, **options):
        self.llm, self.port = MockLLM(**options), port
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self.thread.start()
        started.wait(30)

    def _serve(self, started: threading.Event) -> None:
        from aiohttp import web

        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(self.llm.app(), access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", self.port)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
