"""Per-row uint64 arrays (shingle samples, signatures) kept on disk, keyed by _ord.

Values are appended to one flat file as batches arrive (in any order); only the index
(start and length per _ord, 16 bytes a row) is held in memory. Reads map the file for the
duration of one gather, so resident memory stays bounded by what a gather touches.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for each (s, l), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    group_start = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=group_start[1:])
    within = np.arange(total, dtype=np.int64) - np.repeat(group_start, lengths)
    return np.repeat(starts.astype(np.int64), lengths) + within


class RowStoreWriter:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = open(self.path, "wb")
        self._written = 0
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def append(self, ords: np.ndarray, values: np.ndarray, offsets: np.ndarray) -> None:
        """Row ords[i] owns values[offsets[i]:offsets[i+1]]."""
        self._file.write(np.ascontiguousarray(values, dtype=np.uint64).tobytes())
        self._parts.append((ords.astype(np.int64), offsets[:-1] + self._written, np.diff(offsets)))
        self._written += len(values)

    def close(self) -> "RowStore":
        self._file.close()
        size = max((int(o.max()) + 1 for o, _, _ in self._parts if len(o)), default=0)
        starts = np.zeros(size, np.int64)
        lengths = np.zeros(size, np.int64)
        for ords, s, n in self._parts:
            starts[ords] = s
            lengths[ords] = n
        np.save(self.path.with_suffix(".starts.npy"), starts)
        np.save(self.path.with_suffix(".lengths.npy"), lengths)
        return RowStore(self.path)


class RowStore:
    """Read side: gather the arrays of many rows at once."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.starts = np.load(self.path.with_suffix(".starts.npy"))
        self.lengths = np.load(self.path.with_suffix(".lengths.npy"))

    def gather(self, ords: np.ndarray, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(values, offsets) for rows `ords`, in that order (rows may repeat); with `head`,
        only each row's first `head` values."""
        lengths = self.lengths[ords] if head is None else np.minimum(self.lengths[ords], head)
        offsets = np.zeros(len(ords) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] == 0:
            return np.zeros(0, np.uint64), offsets
        data = np.memmap(self.path, dtype=np.uint64, mode="r")
        try:
            values = np.array(data[ranges(self.starts[ords], lengths)])
        finally:
            del data
        return values, offsets
