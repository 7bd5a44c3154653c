"""The request cache: answered and permanently bad requests are never sent twice; transient
failures are tried again; the key covers backend, model, prompt, sampling and seed."""

from __future__ import annotations

import asyncio
import sqlite3

from curate.llm.cache import FILE, CachedBackend, RequestCache
from curate.llm.mock_server import prompt_key
from curate.llm.openai import OpenAIBackend
from curate.llm.types import Request


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


def test_a_failed_commit_fails_the_call_instead_of_losing_answers(mock_llm, tmp_path, monkeypatch):
    backend = _cached(mock_llm, tmp_path)

    def full_disk(items):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(backend.cache, "put_many", full_disk)
    import pytest

    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        _ask(backend, [Request(({"role": "user", "content": f"d{i}"},)) for i in range(5)])
