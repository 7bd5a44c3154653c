"""The request cache: every answered request (and every one found permanently bad) on disk, in
SQLite (WAL mode, so the workers of a run write to one file side by side), keyed by backend,
model, full prompt, sampling parameters and seed. It lives outside the run's `_work/`, so a
killed, resumed or repeated run never sends a request that was already answered.

Each answer is committed as it arrives: answers arriving in the same turn of the event loop are
committed together right after it (one transaction, not one each: a commit costs ~70 us), so
a SIGKILL loses at most the requests still in flight and the answers of that one turn.
Transient failures (timeouts, 5xx after the last retry) are not recorded: a later run tries again.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from curate.engine.failpoints import failpoint
from curate.llm.types import Answer, Request

FILE = "llm-requests.sqlite"


def default_dir() -> Path:
    return Path(os.environ.get("CURATE_CACHE_DIR") or Path.home() / ".cache" / "curate")


class RequestCache:
    def __init__(self, directory: str | Path | None):
        directory = Path(directory) if directory else default_dir()
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / FILE
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # durable across a process kill; fsync at checkpoints
        self.db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text TEXT, finish_reason TEXT, "
                        "tokens_in INTEGER, tokens_out INTEGER, error TEXT, detail TEXT)")

    def get_many(self, keys: list[str]) -> dict[str, Answer]:
        found: dict[str, Answer] = {}
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows = self.db.execute(f"SELECT key, text, finish_reason, tokens_in, tokens_out, error, detail FROM answers "
                                   f"WHERE key IN ({','.join('?' * len(part))})", part)
            for key, text, finish, t_in, t_out, error, detail in rows:
                found[key] = Answer(text, finish, t_in, t_out, error, detail, permanent=error is not None, cached=True)
        return found

    def put_many(self, items: list[tuple[str, Answer]]) -> None:
        """Record answers, and permanently bad requests, in one transaction; transient failures
        are not kept."""
        rows = [(key, a.text, a.finish_reason, a.tokens_in, a.tokens_out, a.error, a.detail)
                for key, a in items if a.error is None or a.permanent]
        if rows:
            with self.db:
                self.db.execute("BEGIN")
                self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        self.db.close()


class CachedBackend:
    """Any backend with the cache in front: hits are answered from disk, misses sent (once, if
    asked twice) and each answer stored as it arrives. Counts hits, misses, duplicates, errors
    and tokens for the manifest."""

    def __init__(self, backend, cache: RequestCache):
        self.backend, self.cache = backend, cache
        self.kind, self.model = backend.kind, backend.model
        self.counts: dict[str, int] = {}
        # Commits run on a thread of their own (SQLite releases the GIL while it writes, and may
        # wait for another worker's commit), so the event loop goes on receiving answers; each
        # commit takes all that arrived meanwhile, so a slow one makes the next one larger.
        # `unsaved` is a deque: appends (loop) and pops (writer) need no lock.
        self.unsaved: deque[tuple[str, Answer]] = deque()
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="llm-cache")
        self.writing: asyncio.Future | None = None
        self.save_soon = False
        self.failed: BaseException | None = None  # a commit that failed: the call raises it

    def _write(self) -> None:
        while self.unsaved:
            batch = [self.unsaved.popleft() for _ in range(len(self.unsaved))]
            self.cache.put_many(batch)
            for _ in batch:
                failpoint("llm-answer")

    def _save(self) -> None:
        """Start committing what arrived, unless a commit is under way (it looks again when done)."""
        self.save_soon = False
        if (self.writing is None or self.writing.done()) and self.unsaved:
            self.writing = asyncio.get_running_loop().run_in_executor(self.writer, self._write)
            self.writing.add_done_callback(self._written)

    def _written(self, done: asyncio.Future) -> None:
        if not done.cancelled() and done.exception() is not None and self.failed is None:
            self.failed = done.exception()
        self._save()

    def _remember(self, key: str, answer: Answer) -> None:
        self.unsaved.append((key, answer))
        if not self.save_soon:  # once per turn of the loop
            self.save_soon = True
            asyncio.get_running_loop().call_soon(self._save)

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    async def check(self) -> None:
        await self.backend.check()

    async def generate(self, requests: list[Request], on_answer=None) -> list[Answer]:
        keys = [r.key(self.kind, self.model) for r in requests]
        hits = self.cache.get_many(keys)
        answers: list[Answer | None] = [hits.get(k) for k in keys]
        self._count("cache_hits", sum(a is not None for a in answers))
        todo: dict[str, list[int]] = {}  # a request asked twice in one call is sent once
        for i, a in enumerate(answers):
            if a is None:
                todo.setdefault(keys[i], []).append(i)
        sent = [same[0] for same in todo.values()]
        self._count("cache_misses", len(sent))
        self._count("duplicates", sum(len(same) - 1 for same in todo.values()))

        def arrived(j: int, answer: Answer) -> None:
            key = keys[sent[j]]
            self._remember(key, answer)
            if answer.ok:
                self._count("tokens_in", answer.tokens_in)
                self._count("tokens_out", answer.tokens_out)
            else:
                self._count(f"errors_{answer.error}")
            for i in todo[key]:
                answers[i] = answer
                if on_answer:
                    on_answer(i, answer)

        if sent:
            try:
                await self.backend.generate([requests[i] for i in sent], arrived)
            finally:  # everything stored before returning (also what came before a fatal error)
                while self.unsaved or (self.writing is not None and not self.writing.done()):
                    self._save()
                    if self.writing is not None and not self.writing.done():
                        await asyncio.wait([self.writing])
                if self.failed is not None:  # a failed commit is an error, not a silent loss
                    raise self.failed
        return answers

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = self.counts, {}
        return counts
