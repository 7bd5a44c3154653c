"""Workers come from a fork server started once per process (worker.worker_context): each pool's
workers still see the run's environment as it is when the pool starts, not the server's."""

import os

from curate.engine.work.worker import spawn_pool, stop_pool, worker_context

PROBE = "CURATE_TEST_WORKER_ENV"


def _seen_by_workers() -> list[str | None]:
    pool = spawn_pool(2, worker_context().Queue())
    try:
        return [pool.submit(os.getenv, PROBE).result() for _ in range(4)]
    finally:
        stop_pool(pool)


def test_each_pool_sees_the_environment_of_its_start(monkeypatch):
    monkeypatch.setenv(PROBE, "first")
    assert _seen_by_workers() == ["first"] * 4  # the fork server starts here, if not before
    monkeypatch.setenv(PROBE, "second")
    assert _seen_by_workers() == ["second"] * 4
    monkeypatch.delenv(PROBE)
    assert _seen_by_workers() == [None] * 4
