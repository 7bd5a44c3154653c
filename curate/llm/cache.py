"""The request cache: every answered request (and every one found permanently bad) on disk, in
SQLite (WAL mode, so the workers of a run write to one file side by side), keyed by backend,
model, full prompt, sampling parameters and seed. It lives outside the run's `_work/`, so a
killed, resumed or repeated run never sends a request that was already answered.

Each answer is committed as it arrives: answers arriving in the same turn of the event loop are
committed together right after it (one transaction, not one each: a commit costs ~70 us), so
a SIGKILL loses at most the requests still in flight and the answers of that one turn.
Transient failures (timeouts, 5xx after the last retry) are not recorded: a later run tries again.

Identical requests asked at once (the io stage keeps several batches in flight, and web text
repeats) share one request: one request sequence, one attempt count, one answer for every row
that asked. The disk covers what is committed; `CachedBackend.shared` covers the rest: requests
in flight, answers not yet committed, and transient failures, which a process gives every later
asker too, so that whether a row meets a failure does not depend on timing or concurrency.
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import sqlite3
import threading
import weakref
from collections import deque
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Callable, cast

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
        # Two connections: lookups run on the event loop's thread, commits on the writer's. One
        # connection shared by both made a lookup's read transaction part of a commit's, which
        # then had to upgrade it to a write: when another connection (a second LLM step's cache,
        # another worker's) held the write lock, SQLite failed at once with "database is locked",
        # without waiting, since a waiting reader could deadlock.
        self.db = self._connect()  # commits (the writer thread)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text TEXT, finish_reason TEXT, "
            "tokens_in INTEGER, tokens_out INTEGER, error TEXT, detail TEXT)"
        )
        self.lookups = self._connect()  # get_many (the event loop's thread)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA synchronous=NORMAL")  # durable across a process kill; fsync at checkpoints
        # A checkpoint copies the pages the WAL changed into the database. Keys are hashes, so each
        # commit touches index pages all over the file; checkpointing every 10,000 pages instead of
        # 1,000 copies a page once for many commits: the writer's CPU per answer 16 -> 12 us (100,000
        # DiverseQA answers, 100 a commit). The WAL grows to ~40 MB before it is folded in.
        db.execute("PRAGMA wal_autocheckpoint=10000")
        return db

    def get_many(self, keys: list[str]) -> dict[str, Answer]:
        found: dict[str, Answer] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self.lookups.execute(
                f"SELECT key, text, finish_reason, tokens_in, tokens_out, error, detail "
                f"FROM answers WHERE key IN ({','.join('?' * len(part))})",
                part,
            )
            for key, text, finish, t_in, t_out, error, detail in rows:
                found[key] = Answer(text, finish, t_in, t_out, error, detail, permanent=error is not None, cached=True)
        return found

    def put_many(self, items: list[tuple[str, Answer]]) -> list[str]:
        """Record answers, and permanently bad requests, in one transaction; transient failures
        are not kept. Returns the keys recorded."""
        rows = [
            (key, a.text, a.finish_reason, a.tokens_in, a.tokens_out, a.error, a.detail)
            for key, a in items
            if a.error is None or a.permanent
        ]
        if rows:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")  # the write lock first, waiting for it if need be
                self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        return [row[0] for row in rows]

    def close(self) -> None:
        self.db.close()
        self.lookups.close()


class Writer(Executor):
    """One daemon thread running the calls submitted to it, in order, until the Writer is dropped.
    A pool's thread (not a daemon) left idle after the run kept `curate run` from its quick exit
    (curate/cli.py: _exit): the interpreter's whole finalization, 0.8-1.6 s a run. Exiting with a
    commit under way loses nothing: every call awaits its commits before it returns, and a commit
    cut short is rolled back (as by a SIGKILL), not half written."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=_run_calls, args=(self.calls,), name="llm-cache", daemon=True).start()
        weakref.finalize(self, self.calls.put, None)  # the thread ends with its Writer

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        self.calls.put((future, functools.partial(fn, *args, **kwargs)))
        return future


def _run_calls(calls: queue.SimpleQueue) -> None:
    while _run_one(calls.get()):
        pass


def _run_one(item: tuple[Future, Callable] | None) -> bool:
    """Run a submitted call; False once the Writer is dropped. Its own frame, so that nothing of the
    call (its backend) stays referenced while the thread waits for the next."""
    if item is None:
        return False
    future, call = item
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(call())
        except BaseException as e:  # handed to the awaiting call, which raises it
            future.set_exception(e)
    return True


class CachedBackend:
    """Any backend with the cache in front: hits are answered from disk, misses sent (once, if
    asked twice, in one call or in calls at once) and each answer stored as it arrives. Counts
    hits, misses (requests sent), duplicates (rows given another row's request), errors and
    tokens for the manifest."""

    def __init__(self, backend, cache: RequestCache):
        self.backend, self.cache = backend, cache
        self.kind, self.model = backend.kind, backend.model
        self.counts: dict[str, int] = {}
        # Commits run on a thread of their own (SQLite releases the GIL while it writes, and may
        # wait for another worker's commit), so the event loop goes on receiving answers; each
        # commit takes all that arrived meanwhile, so a slow one makes the next one larger.
        # `unsaved` is a deque: appends (loop) and pops (writer) need no lock.
        self.unsaved: deque[tuple[str, Answer]] = deque()
        self.writer = Writer()
        self.writing: asyncio.Future | None = None
        self.save_soon = False
        self.failed: BaseException | None = None  # a commit that failed: the call raises it
        # Requests of this process that the disk does not answer, by key: in flight (a future of
        # the answer, resolved on this loop by the call sending it), answered and not committed
        # yet (dropped once committed), or failed transiently (kept: every later asker gets it).
        self.shared: dict[str, asyncio.Future | Answer] = {}

    def _write(self) -> list[str]:
        recorded = []
        while self.unsaved:
            batch = [self.unsaved.popleft() for _ in range(len(self.unsaved))]
            recorded += self.cache.put_many(batch)
            for _ in batch:
                failpoint("llm-answer")
        return recorded

    def _save(self) -> None:
        """Start committing what arrived, unless a commit is under way (it looks again when done)."""
        self.save_soon = False
        if (self.writing is None or self.writing.done()) and self.unsaved:
            self.writing = asyncio.get_running_loop().run_in_executor(self.writer, self._write)
            self.writing.add_done_callback(self._written)

    def _written(self, done: asyncio.Future) -> None:
        if not done.cancelled() and done.exception() is not None:
            self.failed = self.failed or done.exception()
        elif not done.cancelled():
            for key in done.result():  # on disk now: later askers read it there
                self.shared.pop(key, None)
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
        answers: list[Answer | None] = [None] * len(requests)

        def give(i: int, answer: Answer) -> None:
            answers[i] = answer
            if on_answer:
                on_answer(i, answer)

        left = list(range(len(requests)))
        while left:  # rows that shared a request whose sender was cancelled: asked again
            left = await self._answer(requests, keys, left, give)
        return cast(list[Answer], answers)  # every row given an answer

    async def _answer(self, requests: list[Request], keys: list[str], asked: list[int], give) -> list[int]:
        """Answer rows `asked`: from another call's request or this process's, from disk, or by
        sending; returns the rows whose shared request was abandoned (its sender cancelled)."""
        unknown = list(dict.fromkeys(keys[i] for i in asked if keys[i] not in self.shared))
        hits = self.cache.get_many(unknown)
        joined: dict[str, list[int]] = {}  # keys some other call is sending: their rows
        mine: dict[str, list[int]] = {}  # keys this call sends: their rows
        from_disk = settled = 0
        for i in asked:
            key = keys[i]
            known = self.shared.get(key)
            if isinstance(known, Answer):
                give(i, known)
                settled += 1
            elif known is not None:
                joined.setdefault(key, []).append(i)
            elif key in hits:
                give(i, hits[key])
                from_disk += 1
            else:
                mine.setdefault(key, []).append(i)
        self._count("cache_hits", from_disk)
        self._count("cache_misses", len(mine))
        self._count(
            "duplicates",
            settled + sum(len(rows) for rows in joined.values()) + sum(len(rows) - 1 for rows in mine.values()),
        )
        loop = asyncio.get_running_loop()
        sent = list(mine)
        for key in sent:
            self.shared[key] = loop.create_future()

        def share(rows: list[int], done: asyncio.Future) -> None:
            if not done.cancelled():
                for i in rows:
                    give(i, done.result())

        # Added before asyncio.wait adds its own, so these run before the wait below returns.
        waiting = {key: cast(asyncio.Future, self.shared[key]) for key in joined}  # in flight: futures
        for key, future in waiting.items():
            future.add_done_callback(functools.partial(share, joined[key]))

        def arrived(j: int, answer: Answer) -> None:
            key = sent[j]
            future, self.shared[key] = cast(asyncio.Future, self.shared[key]), answer  # ours, in flight
            future.set_result(answer)
            self._remember(key, answer)
            if answer.ok:
                self._count("tokens_in", answer.tokens_in)
                self._count("tokens_out", answer.tokens_out)
            else:
                self._count(f"errors_{answer.error}")
            for i in mine[key]:
                give(i, answer)

        try:
            if sent:
                await self.backend.generate([requests[mine[key][0]] for key in sent], arrived)
            if waiting:
                await asyncio.wait(waiting.values())
        finally:
            for key in sent:  # not answered (a fatal error, or cancelled): those sharing it ask again
                pending = self.shared.get(key)
                if isinstance(pending, asyncio.Future):
                    del self.shared[key]
                    pending.cancel()
            if sent:  # everything stored before returning (also what came before a fatal error)
                while self.unsaved or (self.writing is not None and not self.writing.done()):
                    self._save()
                    if self.writing is not None and not self.writing.done():
                        await asyncio.wait([self.writing])
                done = self.writing
                if done is not None and not done.cancelled() and done.exception() is not None:
                    self.failed = self.failed or done.exception()  # its callback may not have run yet
                if self.failed is not None:  # a failed commit is an error, not a silent loss
                    raise self.failed
        abandoned = [i for key, future in waiting.items() if future.cancelled() for i in joined[key]]
        self._count("duplicates", -len(abandoned))
        return abandoned

    def close(self) -> None:
        """What the backend holds open (an HTTP session), when the step's stage is done."""
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = self.counts, {}
        return counts
