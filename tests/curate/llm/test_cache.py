"""The request cache: answered and permanently bad requests are never sent twice; transient
failures are tried again by a later process; identical requests in flight at once share one
request sequence; the key covers backend, model, prompt, sampling and seed."""

from __future__ import annotations

import asyncio
import gc
import re
import sqlite3
import threading

from curate.llm.cache import FILE, CachedBackend, RequestCache
from curate.llm.mock_server import prompt_key
from curate.llm.openai import OpenAIBackend
from curate.llm.types import Request
from tests.curate.llm.mockkit import RunningMock


def _cached(mock, cache_dir, **kw):
    return CachedBackend(OpenAIBackend("mock", mock.url, **kw), RequestCache(cache_dir))


def _ask(backend, requests):
    return asyncio.run(backend.generate(requests))


def test_a_repeated_run_sends_nothing_already_answered_or_permanently_bad(mock_llm, tmp_path):
    requests = [Request(({"role": "user", "content": f"doc {i}"},)) for i in range(30)]
    requests.append(Request(({"role": "user", "content": "[[bad]] doc"},)))
    first = _cached(mock_llm, tmp_path)
    answers = _ask(first, requests)
    assert first.take_counts() == {"cache_hits": 0, "cache_misses": 31, "duplicates": 0, "tokens_in": 60,
                                   "tokens_out": 180, "errors_bad_request": 1}
    second = _cached(mock_llm, tmp_path)  # a new process, the same directory
    again = _ask(second, requests)
    assert [a.text for a in again] == [a.text for a in answers] and all(a.cached for a in again)
    assert again[-1].error == "bad_request" and again[-1].permanent
    assert second.take_counts() == {"cache_hits": 31, "cache_misses": 0, "duplicates": 0}
    assert set(mock_llm.llm.received.values()) == {1}


def test_a_request_asked_twice_in_one_call_is_sent_once(mock_llm, tmp_path):
    request = Request(({"role": "user", "content": "same"},))
    backend = _cached(mock_llm, tmp_path)
    a, b = _ask(backend, [request, request])
    assert a.text == b.text and a.ok and backend.take_counts()["duplicates"] == 1
    assert mock_llm.llm.received[prompt_key(list(request.messages))] == 1


def test_transient_failures_are_not_recorded(mock_llm, tmp_path):
    mock_llm.llm.fault_rate, mock_llm.llm.faults = 1.0, ["500"]
    request = Request(({"role": "user", "content": "x"},))
    (answer,) = _ask(_cached(mock_llm, tmp_path, max_retries=0), [request])
    assert answer.error == "http_500"
    mock_llm.llm.fault_rate = 0.0
    (answer,) = _ask(_cached(mock_llm, tmp_path, max_retries=0), [request])
    assert answer.ok and mock_llm.llm.received[prompt_key(list(request.messages))] == 2


def test_the_commit_thread_is_a_daemon_that_ends_with_its_backend(mock_llm, tmp_path):
    """A thread that is no daemon keeps `curate run` from its quick exit (curate/cli.py: _exit), and
    a pool's idle thread was one: the commits' thread is a daemon, and ends once its backend is dropped."""
    before = set(threading.enumerate())
    backend = _cached(mock_llm, tmp_path)
    _ask(backend, [Request(({"role": "user", "content": "x"},))])
    mine = [t for t in threading.enumerate() if t not in before and t.name.startswith("llm-cache")]
    assert len(mine) == 1 and mine[0].daemon
    del backend
    gc.collect()
    mine[0].join(10)
    assert not mine[0].is_alive()


def test_the_key_covers_backend_model_prompt_sampling_and_seed():
    base = Request(({"role": "user", "content": "x"},), max_tokens=10, temperature=0.5, seed=1)
    variants = [Request(({"role": "user", "content": "y"},), 10, 0.5, seed=1),
                Request(({"role": "system", "content": "s"}, {"role": "user", "content": "x"}), 10, 0.5, seed=1),
                Request(base.messages, 11, 0.5, seed=1), Request(base.messages, 10, 0.6, seed=1),
                Request(base.messages, 10, 0.5, top_p=0.9, seed=1), Request(base.messages, 10, 0.5, seed=2)]
    keys = {base.key("openai", "m"), base.key("openai", "n"), base.key("vllm", "m")}
    keys |= {v.key("openai", "m") for v in variants}
    assert len(keys) == 3 + len(variants)
    assert base.key("openai", "m") == Request(base.messages, 10, 0.5, seed=1).key("openai", "m")


def test_the_cache_is_sqlite_in_wal_mode(tmp_path):
    RequestCache(tmp_path)
    assert sqlite3.connect(tmp_path / FILE).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_two_caches_on_one_file_commit_while_lookups_run_without_database_is_locked(tmp_path):
    """Two LLM steps of a stage (or two workers) keep one cache file, each committing on its
    writer thread while lookups run on the event loop's thread. Lookups on the committing
    connection made SQLite fail a commit at once with "database is locked" (CI, 2 cores)."""
    import time

    from curate.llm.types import Answer

    first, second = RequestCache(tmp_path), RequestCache(tmp_path)
    errors: list[BaseException] = []
    until = time.monotonic() + 1.5

    def keep_going(work):
        try:
            while time.monotonic() < until:
                work()
        except BaseException as e:
            errors.append(e)

    count = iter(range(10**9))
    threads = [
        threading.Thread(target=keep_going, args=(lambda c=c: c.put_many([(f"{id(c)}-{next(count)}", Answer("x"))]),))
        for c in (first, second)
    ] + [threading.Thread(target=keep_going, args=(lambda: first.get_many([f"k{i}" for i in range(50)]),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sqlite3.connect(tmp_path / FILE).execute("SELECT COUNT(*) FROM answers").fetchone()[0] > 0


def test_a_failed_commit_fails_the_call_instead_of_losing_answers(mock_llm, tmp_path, monkeypatch):
    backend = _cached(mock_llm, tmp_path)

    def full_disk(items):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(backend.cache, "put_many", full_disk)
    import pytest

    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        _ask(backend, [Request(({"role": "user", "content": f"d{i}"},)) for i in range(5)])


def _attempts(answer) -> int:
    return int(re.search(r"after (\d+) attempts?", answer.detail).group(1))


def test_identical_requests_in_flight_in_several_calls_share_one_request_sequence(tmp_path):
    """The io stage keeps several batches in flight on one backend: a prompt two of them ask is
    sent once, and every row that asked gets that one answer, with its true attempt count."""
    server = RunningMock(fault_rate=1.0, faults=["malformed"])
    try:
        backend = _cached(server, tmp_path, max_retries=2, backoff_s=0.001)
        shared = Request(({"role": "user", "content": "asked by every batch"},))
        batches = [[shared, Request(({"role": "user", "content": f"only in batch {b}"},)), shared] for b in range(4)]

        async def in_flight_at_once():
            return await asyncio.gather(*[backend.generate(batch) for batch in batches])

        answers = [a for batch in asyncio.run(in_flight_at_once()) for a in batch]
        received = server.llm.received
        assert received[prompt_key(list(shared.messages))] == 3 and set(received.values()) == {3}
        assert all(a.error == "malformed" and _attempts(a) == 3 for a in answers)
        assert backend.take_counts() == {"cache_hits": 0, "cache_misses": 5, "duplicates": 7, "errors_malformed": 5}
        # a later call on the backend gets the same failure: this process asked that prompt already
        (again,) = asyncio.run(backend.generate([shared]))
        assert again.detail == answers[0].detail and received[prompt_key(list(shared.messages))] == 3
    finally:
        server.stop()


def test_an_answer_is_shared_until_the_cache_has_it(mock_llm, tmp_path, monkeypatch):
    backend = _cached(mock_llm, tmp_path)
    request = Request(({"role": "user", "content": "once"},))
    committed, put_many = threading.Event(), backend.cache.put_many

    def held_back(items):
        committed.wait(5)
        return put_many(items)

    monkeypatch.setattr(backend.cache, "put_many", held_back)

    async def ask_again_before_the_commit():
        arrived = asyncio.Event()
        sending = asyncio.ensure_future(backend.generate([request], lambda i, a: arrived.set()))
        await arrived.wait()
        (again,) = await backend.generate([request])  # not on disk yet: the answer in memory
        committed.set()
        (first,) = await sending
        return first, again

    first, again = asyncio.run(ask_again_before_the_commit())
    assert first.ok and again is first and mock_llm.llm.received[prompt_key(list(request.messages))] == 1
    assert not backend.shared  # once committed, the cache holds it, not memory
    (third,) = _ask(backend, [request])
    assert third.cached and third.text == first.text


def test_a_call_sharing_a_request_sends_it_itself_if_the_sender_is_cancelled(tmp_path):
    server = RunningMock(fault_rate=1.0, faults=["timeout"], stall_s=0.3)
    try:
        backend = _cached(server, tmp_path, max_retries=0)
        request = Request(({"role": "user", "content": "slow"},))

        async def cancel_the_sender():
            sender = asyncio.ensure_future(backend.generate([request]))
            await asyncio.sleep(0.05)
            sharer = asyncio.ensure_future(backend.generate([request]))
            await asyncio.sleep(0.05)
            sender.cancel()
            return await sharer

        (answer,) = asyncio.run(cancel_the_sender())
        assert answer.error == "http_504" and _attempts(answer) == 1
        assert server.llm.received[prompt_key(list(request.messages))] == 2
    finally:
        server.stop()
