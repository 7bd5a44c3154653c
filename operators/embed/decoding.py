"""Images decoded and preprocessed ahead of the model: inline, or by a pool of CPU processes.

An open_clip image model wants float tensors (open_clip's own preprocess: decode, resize, crop,
normalise). Done on the thread that drives the model, the GPU waits on Pillow for every batch.
`DecodePool` moves that work to `workers` spawned processes: they write each preprocessed image
into a ring of image slots in one shared memory file, and the model process reads whole batches
from it without a copy (or through a pinned buffer to the GPU). The ring is the bounded queue:
the workers run at most a ring ahead of the model, in chunks of a few images handed out in
order, so memory stays at `slots` images whatever the batch.

Both feeds give the model the same float32 arrays in the same order, so the scores do not depend
on `decode_workers`. An image that cannot be read is an error message at its position (its row
goes to the trace), as when the model process decodes it.

The workers start when the backend is built (their imports of torch and open_clip overlap the
model's loading), die with the model process (and end when it exits), leave Ctrl-C to the run,
and use one thread each.
A worker that dies (killed, out of memory) stops the step with an error naming it.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import shutil
import signal
import tempfile
from typing import Callable

import numpy as np

from curate.errors import CurateError
from curate.lifetime import die_with_parent
from curate_operators.embed.images import ImageError, open_image

CHUNK = 8  # images per worker task: small, so the first batch is ready soon and workers share it evenly
WAIT_SECONDS = 1.0  # how often a waiting model process checks that its workers are alive


class InlineFeed:
    """Decodes in this process, when the model asks (decode_workers: 0)."""

    def __init__(self, preprocess: Callable, items: list):
        self.preprocess, self.items = preprocess, items

    def take(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
        """Images start..start+count-1: the float32 array of those that decoded, which did, and why
        the others did not (by position)."""
        pixels, ok, errors = [], np.zeros(count, dtype=bool), {}
        for k in range(count):
            try:
                pixels.append(self.preprocess(open_image(self.items[start + k])).numpy())
                ok[k] = True
            except ImageError as e:
                errors[start + k] = str(e)
        return (np.stack(pixels) if pixels else np.empty((0,), np.float32)), ok, errors

    def release(self, upto: int) -> None:
        """Images before `upto` are no longer needed."""


class DecodePool:
    """`workers` decode processes and the ring they fill; one feed at a time reads it."""

    def __init__(self, workers: int):
        ctx = multiprocessing.get_context("spawn")  # never forked: the model process holds threads and CUDA
        self.tasks = ctx.Queue()  # chunks, taken by whichever worker is free
        self.results = ctx.Queue()
        self.setups = [ctx.SimpleQueue() for _ in range(workers)]  # each worker's own: every one needs it
        self.procs = [ctx.Process(target=_work, args=(os.getpid(), setup, self.tasks, self.results), daemon=True,
                                  name=f"curate-decode-{i}") for i, setup in enumerate(self.setups)]
        for p in self.procs:
            p.start()
        self.ring: np.ndarray | None = None
        self.in_flight = 0  # chunks handed out and not yet answered (a feed given up part-way leaves some)

    def configure(self, preprocess: Callable, shape: tuple[int, ...], slots: int) -> None:
        """The model's preprocess and a ring of `slots` images of `shape` (float32), in a shared file
        that is unlinked once every worker has mapped it (nothing is left behind if a process dies)."""
        slots = -(-slots // CHUNK) * CHUNK  # whole chunks, so no chunk wraps around the ring's end
        nbytes = slots * int(np.prod(shape)) * 4
        fd, path = tempfile.mkstemp(prefix="curate-decode-", dir=_shared_dir(nbytes))
        try:
            os.ftruncate(fd, nbytes)
            self.ring = np.memmap(path, dtype=np.float32, mode="r+", shape=(slots, *shape))
            for setup in self.setups:
                setup.put((preprocess, path, (slots, *shape)))
            for _ in self.procs:
                self._answer()
        finally:
            os.close(fd)
            os.unlink(path)

    def feed(self, items: list) -> "PoolFeed":
        while self.in_flight:  # chunks of an abandoned feed still write into the ring: let them end
            self._answer()
        return PoolFeed(self, items)

    def _answer(self) -> tuple:
        """The next message of any worker; an error if one died or failed."""
        while True:
            try:
                message = self.results.get(timeout=WAIT_SECONDS)
            except queue_module.Empty:
                dead = [p for p in self.procs if not p.is_alive()]
                if dead:
                    raise CurateError(f"an image decode worker died ({_how(dead[0].exitcode)}); if it ran out of "
                                      f"memory, set decode_workers lower (or 0: decode in the model process)")
                continue
            if message[0] == "chunk" or message[:2] == ("failed", "chunk"):
                self.in_flight -= 1
            if message[0] == "failed":
                raise RuntimeError(f"image decode worker: {message[2]}")
            return message

    def close(self) -> None:
        for setup in self.setups:  # a worker still waiting for its setup (the model did not load) ends too
            setup.put(None)
            self.tasks.put(None)
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        self.ring = None


class PoolFeed:
    """One list of items through the pool, read in order by `take`, never more than the ring ahead."""

    def __init__(self, pool: DecodePool, items: list):
        self.pool, self.items = pool, items
        self.slots = len(pool.ring)
        self.next = 0  # the first item not yet handed to a worker
        self.head = 0  # the first item still needed (released below it)
        self.done: dict[int, dict[int, str]] = {}  # chunk start -> errors (by position) of chunks decoded
        self._hand_out()

    def _hand_out(self) -> None:
        while self.next < len(self.items) and self.next + CHUNK <= self.head + self.slots:
            chunk = self.items[self.next:self.next + CHUNK]
            self.pool.tasks.put(("chunk", self.next, self.next % self.slots, chunk))
            self.pool.in_flight += 1
            self.next += len(chunk)

    def take(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
        """As InlineFeed.take; the array is a view of the ring where it can be (valid until release)."""
        assert start >= self.head and count <= self.slots - CHUNK + 1, "takes go in order, within the ring"
        chunks = range(start - start % CHUNK, start + count, CHUNK)
        while any(c not in self.done for c in chunks):
            _, first, errors = self.pool._answer()
            self.done[first] = errors
        errors = {p: e for c in chunks for p, e in self.done[c].items() if start <= p < start + count}
        ok = np.ones(count, dtype=bool)
        ok[[p - start for p in errors]] = False
        at = start % self.slots
        if at + count <= self.slots:
            pixels = self.pool.ring[at:at + count]
        else:  # wraps around the ring's end
            pixels = np.concatenate([self.pool.ring[at:], self.pool.ring[:at + count - self.slots]])
        return (pixels if ok.all() else pixels[ok]), ok, errors

    def release(self, upto: int) -> None:
        for c in [c for c in self.done if c + CHUNK <= upto]:
            del self.done[c]
        self.head = upto
        self._hand_out()


def _work(parent_pid: int, setup, tasks, results) -> None:
    """A decode worker: one thread, dies with the model process, decodes chunks into the ring."""
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole group: the run stops its workers. SIGTERM still ends the worker:
    # multiprocessing sends it to daemon children when their parent exits.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    import torch  # noqa: F401  (the preprocess's tensors; imported before the model process needs us)

    torch.set_num_threads(1)
    try:
        given = setup.get()
        if given is None:
            return
        preprocess, path, shape = given
        ring = np.memmap(path, dtype=np.float32, mode="r+", shape=shape)
    except Exception as e:  # noqa: BLE001: a bug here must reach the model process, not hang it
        results.put(("failed", "setup", f"{type(e).__name__}: {e}"))
        return
    results.put(("ready",))
    while (task := tasks.get()) is not None:
        _, first, slot, values = task
        try:
            errors = {}
            for k, value in enumerate(values):
                try:
                    ring[slot + k] = preprocess(open_image(value)).numpy()
                except ImageError as e:
                    errors[first + k] = str(e)
            results.put(("chunk", first, errors))
        except Exception as e:  # noqa: BLE001: as above
            results.put(("failed", "chunk", f"{type(e).__name__}: {e}"))


def decode_workers(requested: int | None, device: str, threads: int) -> int:
    """The decode worker processes: as the recipe says; else for the cores the model's process was
    given (`threads`, torch's threads there). On a GPU, its share of the machine's cores but one (the
    model's own process): a GPU outruns Pillow on one core many times over. On CPU, one beside the
    model's threads when it has two cores or more, else none. The model keeps its threads: a CPU
    model is ~30 times the work of decoding its image (ViT-B-32: 160 ms of a core per pair, 5 ms to
    decode and preprocess a 300 px JPEG), so a decode process needs a few percent of a core, which
    it takes from the model's threads as it needs them, while a core given up for it would cost the
    model 1/threads of its speed (half of it on two cores). Decoding in the model's process instead
    (0) puts the decoding between the model's batches, every core but one idle meanwhile. One core:
    none, as a second process on it would only share it."""
    if requested is not None:
        return requested
    if device == "cpu":
        return 1 if threads >= 2 else 0
    try:
        gpus = len(os.listdir("/proc/driver/nvidia/gpus"))  # every model worker of the machine has its share
    except OSError:
        gpus = 1
    return max(1, len(os.sched_getaffinity(0)) // max(1, gpus) - 1)


def _shared_dir(nbytes: int) -> str:
    """Where the ring's file goes: /dev/shm (memory) when it has room, else the temp directory."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and shutil.disk_usage(shm).free > 2 * nbytes:
        return shm
    return tempfile.gettempdir()


def _how(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit code {exitcode}"
