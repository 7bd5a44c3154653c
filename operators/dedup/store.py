"""Per-row arrays (shingle samples, signatures) kept on disk, keyed by _ord.

Values are appended to one flat file as batches arrive (in any order); only the index
(start, length and last value per _ord, 16 bytes a row and the value) is held in memory. The
last value is the cut-off of a sample cut short (verify.cutoffs): kept in the index, it is
known without reading the file, which at ten million documents is larger than the page cache.

Reads are positioned reads (pread) into the caller's array: the pages they bring into the
page cache never count in the process's resident memory. (Mapping the file per block of rows,
as reads did, counted every page the kernel mapped around each row, a whole large folio of the
page cache at a time on Linux 6: a verification worker held 600 MB of one such map at a million
documents, seen in its /proc smaps.) Inside `kept_mapped()` one read-only map serves the
gathers: random reads of a small file then cost no system call, and resident memory grows up
to the file's size (clean page-cache pages, which the kernel can reclaim). Callers choose by
the file's size against their budget.
"""

from __future__ import annotations

import mmap
import os
from contextlib import contextmanager
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
    def __init__(self, path: Path, dtype=np.uint64):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self._file = open(self.path, "wb")
        self._written = 0
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def append(self, ords: np.ndarray, values: np.ndarray, offsets: np.ndarray) -> None:
        """Row ords[i] owns values[offsets[i]:offsets[i+1]]."""
        values = np.ascontiguousarray(values, dtype=self.dtype)
        self._file.write(values.tobytes())
        lengths = np.diff(offsets)
        lasts = np.zeros(len(lengths), self.dtype)  # an empty row has none: 0
        lasts[lengths > 0] = values[offsets[1:][lengths > 0] - 1]
        self._parts.append((ords.astype(np.int64), offsets[:-1] + self._written, lengths, lasts))
        self._written += len(values)

    def close(self) -> "RowStore":
        self._file.close()
        size = max((int(o.max()) + 1 for o, *_ in self._parts if len(o)), default=0)
        starts = np.zeros(size, np.int64)
        lengths = np.zeros(size, np.int64)
        lasts = np.zeros(size, self.dtype)
        for ords, s, n, last in self._parts:
            starts[ords] = s
            lengths[ords] = n
            lasts[ords] = last
        np.save(self.path.with_suffix(".starts.npy"), starts)
        np.save(self.path.with_suffix(".lengths.npy"), lengths)
        np.save(self.path.with_suffix(".lasts.npy"), lasts)
        return RowStore(self.path, self.dtype)


class RowStore:
    """Read side: gather the arrays of many rows at once.

    `scattered`: the gathers pick rows all over a file that may be larger than the page cache
    (a verification's candidates). Its reads (and its kept map) then ask the kernel for the
    pages read only (POSIX_FADV_RANDOM, MADV_RANDOM): each page it does not hold would otherwise
    bring the read-ahead window around it (8 MB on this machine's disk), so a few thousand rows
    read most of a 2 GB file.
    """

    def __init__(self, path: Path, dtype=np.uint64, scattered: bool = False):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.scattered = scattered
        # Mapped: a piece of the fit that opens the store in another process reads what it needs.
        self.starts = np.load(self.path.with_suffix(".starts.npy"), mmap_mode="r")
        self.lengths = np.load(self.path.with_suffix(".lengths.npy"), mmap_mode="r")
        self.lasts = np.load(self.path.with_suffix(".lasts.npy"), mmap_mode="r")  # each row's last value
        self._kept: np.memmap | None = None

    @property
    def nbytes(self) -> int:
        return self.path.stat().st_size

    @contextmanager
    def kept_mapped(self):
        """Keep one map open for the gathers inside the block (thread-safe: reads only)."""
        if self.nbytes == 0:
            yield self
            return
        self._kept = np.memmap(self.path, dtype=self.dtype, mode="r")
        if self.scattered:
            self._kept._mmap.madvise(mmap.MADV_RANDOM)
        try:
            yield self
        finally:
            self._kept = None  # the last reference: unmaps

    def gather(self, ords: np.ndarray, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(values, offsets) for rows `ords`, in that order (rows may repeat); with `head`,
        only each row's first `head` values."""
        lengths = self.lengths[ords] if head is None else np.minimum(self.lengths[ords], head)
        offsets = np.zeros(len(ords) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return self.read(self.starts[ords], lengths), offsets

    def read(self, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The values at flat positions [starts[i], starts[i] + lengths[i]), concatenated."""
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, self.dtype)
        if self._kept is not None:
            return self._kept[ranges(starts, lengths)]
        out = np.empty(total, self.dtype)
        into = memoryview(out).cast("B")
        size = self.dtype.itemsize
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if self.scattered:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            at = 0
            for start, length in zip(*_runs(np.asarray(starts, np.int64), np.asarray(lengths, np.int64))):
                got = os.preadv(fd, [into[at * size:(at + length) * size]], start * size)
                if got != length * size:
                    raise OSError(f"{self.path}: {got} bytes at {start * size}, expected {length * size} (truncated?)")
                at += length
        finally:
            os.close(fd)
        return out


def _runs(starts: np.ndarray, lengths: np.ndarray) -> tuple[list[int], list[int]]:
    """(starts, lengths) with each row that follows on from the one before merged into it, empty
    rows left out: rows read in file order take one read a block."""
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    if len(starts) == 0:
        return [], []
    new_run = np.ones(len(starts), bool)
    new_run[1:] = starts[1:] != starts[:-1] + lengths[:-1]
    first = np.flatnonzero(new_run)
    return starts[first].tolist(), np.add.reduceat(lengths, first).tolist()
