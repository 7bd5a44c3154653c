"""A pool worker ends as soon as the pool lets it go: the interpreter's shutdown (atexit hooks,
a last full garbage collection, module teardown; seconds with s3fs and Arrow loaded) is skipped,
while what it put on the progress queue and its results still arrive."""

import atexit
import multiprocessing
import os
from pathlib import Path

from curate.engine.worker import spawn_pool, stop_pool


def _task(marker: str) -> int:
    """Reports progress, and leaves an atexit hook that would mark a full interpreter shutdown."""
    from curate.engine import worker

    worker._queue.put(("read", 3, 3))
    atexit.register(Path(marker).write_text, "shut down")
    return os.getpid()


def test_worker_skips_interpreter_shutdown_and_delivers_its_progress(tmp_path):
    queue = multiprocessing.get_context("spawn").Queue()
    pool = spawn_pool(1, queue, str(tmp_path / "workers.lock"))
    marker = tmp_path / "marker"
    pid = pool.submit(_task, str(marker)).result()
    stop_pool(pool)
    assert queue.get(timeout=10) == ("read", 3, 3)
    assert not marker.exists(), "the worker ran its atexit hooks: interpreter shutdown was not skipped"
    assert pid != os.getpid()
