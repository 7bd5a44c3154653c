"""How far a reader is through its file, in the file's own bytes (compressed, as on disk or in the
store), so that progress moves while a long task reads, not only when it ends.

A stream's reader follows the raw file under its decompression (its position); a Parquet reader,
which jumps between column chunks, says what share of its rows it has read (`share`).
"""

from __future__ import annotations


class ReadMeter:
    """Bytes of one file its reader has consumed so far; 0 before it opens the file."""

    def __init__(self):
        self._position = lambda: 0
        self._last = 0
        self.blank_lines = 0  # JSONL lines with nothing on them, skipped (the manifest's read counts)
        self.empty = False  # the file has no bytes or no rows: skipped (the manifest's read counts)

    def follow(self, handle) -> None:
        """Measure by `handle`'s position: the raw file a stream decompresses."""
        self._position = handle.tell

    def share(self, done: int, of: int, size: int) -> None:
        """`done` of `of` units (rows) read, of a file of `size` bytes."""
        at = size * done // of if of else size
        self._position = lambda: at

    @property
    def bytes(self) -> int:
        try:
            self._last = max(self._last, int(self._position()))
        except (OSError, ValueError):  # the file is closed: it was read as far as it was last seen
            pass
        return self._last
