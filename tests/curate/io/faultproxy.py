"""A loopback HTTP proxy in front of a store (moto's S3 server) that fails a share of the requests
as real stores do: 503 SlowDown, a connection reset before any answer, or a body cut off halfway.

Which attempt fails is drawn from (seed, request, attempt number), not from arrival order, so the
same run meets the same faults whatever its threads do; one request fails at most MAX_IN_A_ROW
times running (by default), so a client that retries more often always gets through.
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import xxhash

FAULTS = ("503", "reset", "cut")
MAX_IN_A_ROW = 2
SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


class FaultProxy:
    """Forwards to `upstream`, failing about `rate` of the requests with faults of `kinds`; `faults`
    counts what it did."""

    def __init__(self, upstream: str, rate: float = 0.1, seed: int = 0, max_in_a_row: int = MAX_IN_A_ROW,
                 kinds: tuple[str, ...] = FAULTS):
        self.upstream = urlparse(upstream)
        self.rate, self.seed, self.max_in_a_row, self.kinds = rate, seed, max_in_a_row, kinds
        self.lock = threading.Lock()
        self.attempts: dict[str, int] = {}  # per request: attempts so far
        self.in_a_row: dict[str, int] = {}  # per request: faults since its last answer
        self.faults = {f: 0 for f in FAULTS}
        self.requests = 0
        self.log: list[tuple[str, str, str | None]] = []  # every request: (method, path, Range header)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> "FaultProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fault(self, method: str, path: str, range_: str | None) -> str | None:
        """The fault this attempt of the request meets, if any (and the count of it)."""
        key = f"{method} {path} {range_}"
        with self.lock:
            self.requests += 1
            self.log.append((method, path, range_))
            attempt = self.attempts[key] = self.attempts.get(key, 0) + 1
            draw = xxhash.xxh64_intdigest(f"{self.seed} {key} {attempt}".encode()) / 2 ** 64
            fault = None
            if draw < self.rate and self.in_a_row.get(key, 0) < self.max_in_a_row:
                fault = self.kinds[int(draw / self.rate * len(self.kinds))]
                if fault == "cut" and method != "GET":  # an answer without a body to cut
                    fault = "503"
            if fault is None:
                self.in_a_row[key] = 0
            else:
                self.in_a_row[key] = self.in_a_row.get(key, 0) + 1
                self.faults[fault] += 1
            return fault


def _handler(proxy: FaultProxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as clients pool connections to a store

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            fault = proxy.fault(self.command, self.path, self.headers.get("Range"))
            if fault == "reset":
                return self._reset()
            if fault == "503":
                return self._answer(503, {"Content-Type": "application/xml", "Content-Length": str(len(SLOW_DOWN))},
                                    SLOW_DOWN)
            upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                # a HEAD answer keeps the length of the body it does not send; others get their body's
                dropped = ("connection", "transfer-encoding") + (() if self.command == "HEAD" else ("content-length",))
                headers = {k: v for k, v in answer.getheaders() if k.lower() not in dropped}
                status = answer.status
            finally:
                upstream.close()
            if self.command != "HEAD":
                headers["Content-Length"] = str(len(data))
            if fault == "cut" and len(data) > 1:  # the whole length promised, half of it sent
                self._answer(status, headers, data[: len(data) // 2])
                self.wfile.flush()
                return self._reset()
            self._answer(status, headers, data)

        def _answer(self, status: int, headers: dict, data: bytes) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _reset(self) -> None:
            """Close with a TCP reset (SO_LINGER 0), as a load balancer dropping the connection does."""
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        def log_message(self, *args) -> None:
            pass

    return Handler
