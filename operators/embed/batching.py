"""Model sub-batches: length-sorted buckets inside a window, a token budget, and OOM halving.

The operator gets one Arrow batch (the window) at a time. Its items are sorted by length, longest
first, and cut into sub-batches of at most `batch_size` items and, when `max_tokens` is set, at
most `max_tokens` padded tokens (items x the longest item of the sub-batch); items of similar
length share a sub-batch, so little of each model call is padding. Results are written back at
the items' original positions, so the order of the window is kept.

An out-of-memory error (the backend says which errors are) halves the sub-batch and retries it;
the smaller cap stays for the rest of the operator's life (the next window would hit the same
limit). An item that does not fit on its own is a CurateError.

Nothing here imports torch: the backend passes `is_oom` and `after_oom`.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable

import numpy as np

from curate.errors import CurateError

log = logging.getLogger(__name__)


class Batcher:
    def __init__(self, batch_size: int, max_tokens: int | None = None,
                 is_oom: Callable[[BaseException], bool] = lambda e: False,
                 after_oom: Callable[[], None] = lambda: None, what: str = "embed"):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.cap = batch_size  # rows per model call; halved on out-of-memory errors
        self.max_tokens = max_tokens
        self.is_oom = is_oom
        self.after_oom = after_oom
        self.what = what
        self.calls: deque[int] = deque(maxlen=4096)  # sizes of the latest sub-batches (for tests and stats)

    def order(self, lengths: np.ndarray) -> np.ndarray:
        """Positions sorted by length, longest first; ties keep their input order."""
        return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")

    def size_at(self, longest: int) -> int:
        """Rows in a sub-batch whose longest item has `longest` tokens."""
        size = self.cap
        if self.max_tokens:
            size = min(size, max(1, self.max_tokens // max(int(longest), 1)))
        return size

    def run(self, lengths: np.ndarray, encode: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`encode(positions)` for every sub-batch; the rows of its results, at their positions.

        `encode` gets an int64 array of item positions and returns one float32 row per position.
        """
        n = len(lengths)
        order = self.order(lengths)
        lengths = np.asarray(lengths)
        out: np.ndarray | None = None
        i = 0
        while i < n:
            size = self.size_at(lengths[order[i]])
            positions = order[i:i + size]
            oom = False
            try:
                part = np.asarray(encode(positions))
            except Exception as e:  # noqa: BLE001: only out-of-memory errors are handled
                if not self.is_oom(e):
                    raise
                if len(positions) == 1:
                    raise CurateError(f"{self.what}: out of GPU memory on a single item (of {int(lengths[order[i]])} "
                                      f"tokens); lower max_length, use a smaller model or precision: float16, "
                                      f"or run on CPU (device: cpu)") from None
                oom = True  # handled below, once the exception (and the tensors it holds) is gone
            if oom:
                self.cap = max(1, len(positions) // 2)
                log.warning("%s: out of memory on a sub-batch of %d; retrying with %d", self.what,
                            len(positions), self.cap)
                self.after_oom()
                continue
            if part.ndim != 2 or part.shape[0] != len(positions):
                raise RuntimeError(f"{self.what}: the model returned shape {part.shape} for {len(positions)} items")
            if out is None:
                out = np.empty((n, part.shape[1]), dtype=np.float32)
            out[positions] = part
            self.calls.append(len(positions))
            i += len(positions)
        return out if out is not None else np.empty((0, 0), dtype=np.float32)
