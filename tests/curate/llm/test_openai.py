"""The OpenAI-compatible backend against the loopback mock: answers and tokens, retries of each
fault, Retry-After, permanent errors, and the checks that stop a run before any row is lost."""

from __future__ import annotations

import asyncio

import pytest

from curate.llm.openai import OpenAIBackend
from curate.llm.types import BackendError, Request
from curate.llm.mock_server import prompt_key, reply_to


def _request(text: str) -> Request:
    return Request(({"role": "user", "content": text},), max_tokens=64)


def _generate(backend, requests):
    seen = []
    answers = asyncio.run(backend.generate(requests, lambda i, a: seen.append(i)))
    assert sorted(seen) == list(range(len(requests)))  # each answer reported as it came
    return answers


def test_answers_in_order_with_tokens_from_usage(mock_llm):
    backend = OpenAIBackend("mock", mock_llm.url, concurrency=4)
    requests = [_request(f"say {i} things") for i in range(20)]
    answers = _generate(backend, requests)
    assert [a.text for a in answers] == [reply_to(r.messages) for r in requests]
    assert all(a.finish_reason == "stop" and a.tokens_in == 3 and a.tokens_out == 7 for a in answers)


@pytest.mark.parametrize("fault,error", [("timeout", "timeout"), ("429", "http_429"), ("500", "http_500"),
                                         ("malformed", "malformed"), ("truncated", "truncated_body")])
def test_each_fault_is_retried_then_reported_with_its_reason(fault, error):
    from tests.curate.llm.mockkit import RunningMock

    server = RunningMock(fault_rate=1.0, faults=[fault], retry_after=0, stall_s=5)
    try:
        backend = OpenAIBackend("mock", server.url, timeout_s=0.3, max_retries=2, backoff_s=0.01)
        request = _request("hello there")
        (answer,) = _generate(backend, [request])
        assert answer.error == error and not answer.permanent
        assert answer.detail.startswith("after 3 attempts")
        assert server.llm.received[prompt_key(list(request.messages))] == 3
    finally:
        server.stop()


def test_attempts_that_could_not_connect_are_said_apart_from_requests_sent():
    from tests.conftest import free_port
    from tests.curate.llm.mockkit import RunningMock

    port, started = free_port(), []
    backend = OpenAIBackend("mock", f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.0)

    async def sleep(seconds):  # the server comes up after the first attempt found nobody
        if not started:
            started.append(RunningMock(port=port, fault_rate=1.0, faults=["500"]))

    backend.sleep = sleep
    request = _request("anyone there?")
    try:
        (answer,) = _generate(backend, [request])
        assert answer.error == "http_500"
        assert answer.detail.startswith("after 3 attempts, 1 of them not sent (no connection): ")
        assert started[0].llm.received[prompt_key(list(request.messages))] == 2
    finally:
        for server in started:
            server.stop()


def test_a_fault_then_success_gives_the_answer(mock_llm):
    mock_llm.llm.fault_rate, mock_llm.llm.retry_after = 0.5, 0
    backend = OpenAIBackend("mock", mock_llm.url, max_retries=20, backoff_s=0.001, timeout_s=60)
    mock_llm.llm.faults = ["500", "malformed", "429", "truncated"]
    requests = [_request(f"text {i}") for i in range(50)]
    answers = _generate(backend, requests)
    assert all(a.ok for a in answers) and sum(mock_llm.llm.injected.values()) > 0


def test_429_waits_at_least_its_retry_after():
    from tests.curate.llm.mockkit import RunningMock

    server = RunningMock(fault_rate=1.0, faults=["429"], retry_after=7)
    try:
        backend = OpenAIBackend("mock", server.url, max_retries=2, backoff_s=0.0)
        waits = []

        async def sleep(seconds):
            waits.append(seconds)

        backend.sleep = sleep
        _generate(backend, [_request("x")])
        assert waits == [7.0, 7.0]
    finally:
        server.stop()


def test_backoff_is_exponential_with_full_jitter():
    backend = OpenAIBackend("m", "http://x", backoff_s=0.5, max_backoff_s=3.0)
    for attempt, cap in [(0, 0.5), (1, 1.0), (2, 2.0), (5, 3.0)]:
        draws = [backend._backoff(attempt) for _ in range(200)]
        assert 0 <= min(draws) and max(draws) <= cap and max(draws) > cap / 2


def test_a_request_the_server_rejects_is_permanent_and_not_retried(mock_llm):
    request = _request("[[bad]] this one")
    (answer,) = _generate(OpenAIBackend("mock", mock_llm.url), [request])
    assert answer.error == "bad_request" and answer.permanent and "400" in answer.detail
    assert mock_llm.llm.received[prompt_key(list(request.messages))] == 1


@pytest.mark.parametrize("mock_llm", [{"api_key": "right"}], indirect=True)
def test_wrong_key_unknown_model_and_unreachable_endpoint_are_backend_errors(mock_llm, monkeypatch):
    monkeypatch.setenv("TEST_KEY", "wrong")
    with pytest.raises(BackendError, match=r"refused the API key \(401.*check the key in \$TEST_KEY"):
        asyncio.run(OpenAIBackend("mock", mock_llm.url, "TEST_KEY").check())
    with pytest.raises(BackendError, match=r"refused the API key"):  # in the middle of a run too
        _generate(OpenAIBackend("mock", mock_llm.url, "TEST_KEY"), [_request("x")])
    monkeypatch.setenv("TEST_KEY", "right")
    asyncio.run(OpenAIBackend("mock", mock_llm.url, "TEST_KEY").check())
    with pytest.raises(BackendError, match="does not serve model 'gpt-9'; it serves: mock"):
        asyncio.run(OpenAIBackend("gpt-9", mock_llm.url, "TEST_KEY").check())
    with pytest.raises(BackendError, match="answered 404 for model 'gpt-9'"):
        _generate(OpenAIBackend("gpt-9", mock_llm.url, "TEST_KEY"), [_request("x")])
    with pytest.raises(BackendError, match="cannot reach the LLM endpoint http://127.0.0.1:9/v1"):
        asyncio.run(OpenAIBackend("mock", "http://127.0.0.1:9/v1").check())


def test_an_endpoint_that_stops_accepting_connections_stops_the_run():
    backend = OpenAIBackend("mock", "http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.0)
    with pytest.raises(BackendError, match="stopped accepting connections"):
        _generate(backend, [_request("x")])


def test_calls_at_once_get_the_places_in_flight_in_the_order_they_came(mock_llm):
    """The io stage's batches in flight share the limit: the first batch's requests all go before
    the next batch sends any (its answer is read while the later ones keep the places busy), not
    interleaved with them, as places handed over request by request were."""
    backend = OpenAIBackend("mock", mock_llm.url, concurrency=3)
    order: list[tuple[int, int]] = []

    async def both():
        calls = [[_request(f"call {c} asks {i}") for i in range(12)] for c in range(3)]
        return await asyncio.gather(
            *(backend.generate(requests, lambda i, a, c=c: order.append((c, i))) for c, requests in enumerate(calls))
        )

    answers = asyncio.run(both())
    assert all(a.ok for call in answers for a in call)
    calls_in_order = [c for c, _ in order]
    # a call sends once the calls before it have sent all theirs (3 places: 2 of their requests may
    # still be out then), so at most 2 of their answers come after its first
    assert calls_in_order.index(1) >= 12 - 2 and calls_in_order.index(2) >= 24 - 2, calls_in_order
