"""Images decoded by CPU worker processes ahead of the model (operators/embed/decoding.py): the
same arrays in the same order as decoding in the model's process, whatever the sizes of the
model's batches (its out-of-memory halving included), the ring wrapping around; unreadable
images named at their positions; a worker that dies stops the step with a clear error."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from curate.errors import CurateError
from curate_operators.embed.decoding import CHUNK, DecodePool, InlineFeed, decode_workers
from tests.curate.io.wds_shards import image_bytes

pytest.importorskip("torch")

SHAPE = (3, 4, 4)
SLOW_SIZE = (30, 30)


def small(img):
    """A picklable stand-in for open_clip's preprocess: resize, then float32 CHW in [0, 1]."""
    import time

    import torch

    if img.size == SLOW_SIZE:  # a slow image: its chunks are still decoding when a test moves on
        time.sleep(0.1)
    pixels = np.asarray(img.resize(SHAPE[1:]), dtype=np.float32) / 255
    return torch.from_numpy(pixels.transpose(2, 0, 1).copy())


ITEMS = [image_bytes((8 + i % 5, 6 + i % 3), color=(i * 7 % 256, i * 13 % 256, 90)) for i in range(60)]
BAD = {5: b"not an image", 17: b"\xff\xd8\xff truncated", 41: b""}
for _position, _value in BAD.items():
    ITEMS[_position] = _value


@pytest.fixture(scope="module")
def pool():
    p = DecodePool(2)
    p.configure(small, SHAPE, slots=3 * CHUNK)  # a small ring: the 60 items wrap around it
    yield p
    p.close()


def read_all(feed, sizes: list[int], retry: set[int] = frozenset()):
    """Every item through `feed` in takes of `sizes` (cycled); a take in `retry` is first taken
    larger and not released, as the batcher retries a sub-batch after running out of memory."""
    out, oks, errors, start, i = [], [], {}, 0, 0
    while start < len(ITEMS):
        count = min(sizes[i % len(sizes)], len(ITEMS) - start)
        if i in retry and count > 1:
            feed.take(start, count)  # the "out of memory" attempt: the same images are taken again
            count //= 2
        pixels, ok, failed = feed.take(start, count)
        if ok.any():  # none decoded: an empty array, of no particular shape
            out.append(np.array(pixels))
        oks.append(ok)
        errors.update(failed)
        feed.release(start + count)
        start, i = start + count, i + 1
    return np.concatenate(out), np.concatenate(oks), errors


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 2 * CHUNK + 1), min_size=1, max_size=6),
       retry=st.sets(st.integers(0, 20), max_size=4))
@example(sizes=[1], retry=set())
@example(sizes=[2 * CHUNK + 1], retry={0, 1})  # the largest take the ring allows, wrapping
@example(sizes=[CHUNK], retry=set())
def test_pool_gives_what_inline_decoding_gives(pool, sizes, retry):
    expected = read_all(InlineFeed(small, ITEMS), sizes)
    got = read_all(pool.feed(ITEMS), sizes, retry)
    assert np.array_equal(got[0], expected[0])
    assert got[1].tolist() == expected[1].tolist() == [i not in BAD for i in range(len(ITEMS))]
    assert got[2] == expected[2] and sorted(got[2]) == sorted(BAD)
    assert "not an image" in got[2][5]


def test_a_feed_given_up_part_way_does_not_leak_into_the_next(pool):
    abandoned = pool.feed([image_bytes(SLOW_SIZE, color=(0, 0, 0))] * len(ITEMS))
    abandoned.take(0, 2)  # chunks are still decoding when the caller stops (an error, an interrupt)
    expected = read_all(InlineFeed(small, ITEMS), [7])
    got = read_all(pool.feed(ITEMS), [7])
    assert np.array_equal(got[0], expected[0])


def test_a_dead_worker_stops_the_step_with_a_clear_error():
    p = DecodePool(1)
    try:
        p.configure(small, SHAPE, slots=2 * CHUNK)
        os.kill(p.procs[0].pid, signal.SIGKILL)
        p.procs[0].join()
        feed = p.feed(ITEMS)
        with pytest.raises(CurateError, match="decode worker died .*killed by SIGKILL.*decode_workers"):
            feed.take(0, 4)
    finally:
        p.close()


def test_default_workers():
    assert decode_workers(3, "cuda", 1) == 3 and decode_workers(0, "cpu", 16) == 0 and decode_workers(2, "cpu", 1) == 2
    # on CPU one process beside the model's threads, where it has a second core
    assert [decode_workers(None, "cpu", threads) for threads in (1, 2, 16)] == [0, 1, 1]
    assert decode_workers(None, "cuda", 1) >= 1


def test_workers_left_running_end_with_their_process(tmp_path):
    """An operator never torn down (a test, a crash) must not keep its process from exiting:
    multiprocessing ends daemon children with SIGTERM at exit, which the workers must not ignore."""
    import subprocess
    import sys

    script = tmp_path / "left.py"
    script.write_text("from tests.operators.embed.test_decoding import SHAPE, small\n"
                      "from curate_operators.embed.decoding import DecodePool\n"
                      "if __name__ == '__main__':\n"
                      "    DecodePool(1).configure(small, SHAPE, slots=8)\n")
    root = str(__import__("pathlib").Path(__file__).resolve().parents[3])
    done = subprocess.run([sys.executable, str(script)], cwd=root, env={**os.environ, "PYTHONPATH": root},
                          timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_decode_workers_is_for_images():
    from pydantic import ValidationError

    from curate_operators.embed.embed import EmbedParams

    assert EmbedParams(backend="open_clip", model="m", modality="image", decode_workers=3).decode_workers == 3
    with pytest.raises(ValidationError, match="decode_workers is for modality: image"):
        EmbedParams(decode_workers=2)
