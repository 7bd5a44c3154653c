"""A pool worker ends as soon as the pool lets it go: the interpreter's shutdown (atexit hooks,
a last full garbage collection, module teardown; seconds with s3fs and Arrow loaded) is skipped,
while what it put on the progress queue and its results still arrive."""

import atexit
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from curate.engine.rundir.layout import RunLayout
from curate.engine.local.engine import LocalExecutor
from curate.engine.work.worker import spawn_pool, stop_pool


def _task(marker: str) -> int:
    """Reports progress, and leaves an atexit hook that would mark a full interpreter shutdown."""
    from curate.engine.work import worker

    worker._queue.put(("read", 3, 3))
    atexit.register(Path(marker).write_text, "shut down")
    return os.getpid()


def test_worker_skips_interpreter_shutdown_and_delivers_its_progress(tmp_path):
    queue = multiprocessing.get_context("spawn").Queue()
    pool = spawn_pool(1, queue)
    marker = tmp_path / "marker"
    pid = pool.submit(_task, str(marker)).result()
    stop_pool(pool)
    assert queue.get(timeout=10) == ("read", 3, 3)
    assert not marker.exists(), "the worker ran its atexit hooks: interpreter shutdown was not skipped"
    assert pid != os.getpid()



def _fail_first(i: int) -> int:
    if i == 0:
        raise ValueError("piece 0 failed")
    time.sleep(0.2)
    return i


def test_a_failed_map_piece_then_a_killed_pool_prints_no_traceback(tmp_path):
    """A fit's piece fails with pieces still queued, then the run kills its workers: nothing is
    raised in the pool's own thread (pool.map cancelled the queued pieces, and Python 3.11's pool
    raised InvalidStateError for each when the kill broke it)."""
    raised = []
    hook = threading.excepthook
    threading.excepthook = lambda args: raised.append(args.exc_type)
    layout = RunLayout.at(str(tmp_path / "out"))
    Path(layout.work).mkdir(parents=True)
    executor = LocalExecutor(2, lambda *a: None, layout)
    try:
        with pytest.raises(ValueError, match="piece 0 failed"):
            executor.map(_fail_first, range(40))
        executor.close(kill=True)
        time.sleep(0.5)  # the pool's thread notices the kill
    finally:
        threading.excepthook = hook
    assert raised == []
