"""A crawl archive's bytes as the plain stream warcio reads: a .gz file's members are inflated here,
one member at a time, so that a damaged member (cut short, or corrupt) is found, named by its
offset, and stepped over to the next member instead of ending the file (curate/io/warc.py)."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b\x08"
RAW_BLOCK = 1 << 16  # compressed bytes read at a time
OUT_BLOCK = 1 << 16  # decompressed bytes handed to warcio at a time


@dataclass
class _Damage:
    raw_offset: int  # where the damaged member starts in the file
    start: int  # where its bytes start in the inflated stream
    error: str
    reason: str
    reported: bool = False


class Inflated:
    """A WARC file's bytes, inflated member by member when it is gzip, as the plain stream warcio
    reads. A read never crosses a member boundary, so what warcio has buffered when a record
    fails is that record's member only. `tell()` is the position in the inflated bytes;
    `raw_offset(pos)` the file offset of the member holding it. A damaged member stops the
    stream (reads give b"") until `resync()` finds the next member."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.buf = raw.read(RAW_BLOCK)  # raw bytes not yet inflated
        self.buf_at = 0  # file offset of buf[0]
        self.gzip = self.buf.startswith(GZIP_MAGIC)
        self.z: zlib._Decompress | None = None  # the member being inflated
        self.pos = 0
        self.members: list[tuple[int, int]] = []  # (inflated start, file offset) of recent members
        self.damage: _Damage | None = None

    def tell(self) -> int:
        return self.pos

    def raw_offset(self, pos: int) -> int:
        if not self.gzip:
            return pos
        found = 0
        for start, offset in self.members:
            if start > pos:
                break
            found = offset
        return found

    def _fill(self) -> bool:
        more = self.raw.read(RAW_BLOCK)
        self.buf += more
        return bool(more)

    def read(self, n: int = -1) -> bytes:
        if self.damage is not None:
            return b""
        if not self.gzip:
            if not self.buf and not self._fill():
                return b""
            cut = n if 0 < n < len(self.buf) else len(self.buf)
            data, self.buf = self.buf[:cut], self.buf[cut:]
            self.buf_at += len(data)
            self.pos += len(data)
            return data
        while True:
            if not self.buf and not self._fill():
                if self.z is not None:
                    self._damaged("the gzip member is cut short (the file ends inside it)", "truncated")
                return b""
            if self.z is None:  # a member starts here
                if len(self.buf) < 3:
                    self._fill()
                if not self.buf.startswith(GZIP_MAGIC):
                    if self._only_padding():
                        return b""
                    self.members.append((self.pos, self.buf_at))
                    self._damaged("bytes that are not a gzip member stand between records", "unparseable")
                    return b""
                self.z = zlib.decompressobj(31)
                self.members = self.members[-64:] + [(self.pos, self.buf_at)]
            try:
                # one member's bytes per read: a member's end ends the read (see the class doc)
                data = self.z.decompress(self.buf, n if n > 0 else OUT_BLOCK)
            except zlib.error as e:
                self._damaged(f"the gzip member is corrupt ({e})", "unparseable")
                return b""
            rest = self.z.unused_data if self.z.eof else self.z.unconsumed_tail
            self.buf_at += len(self.buf) - len(rest)
            self.buf = rest
            if self.z.eof:
                self.z = None
            if data:
                self.pos += len(data)
                return data

    def _only_padding(self) -> bool:
        """Whether the rest of the file is NULs or blank lines (some writers pad the end)."""
        while True:
            if self.buf.strip(b"\x00 \t\r\n"):
                return False
            self.buf_at += len(self.buf)
            self.buf = b""
            if not self._fill():
                return True

    def _damaged(self, error: str, reason: str) -> None:
        start, offset = self.members[-1] if self.members else (0, 0)
        self.damage = _Damage(offset, start, error, reason)
        self.z = None

    def resync(self) -> bool:
        """After a damaged member (or a record that does not parse, with `skip`): go on at the
        next place a gzip member starts and inflates to a record. False at the end of the file."""
        if not self.gzip:
            return False
        damaged_at = self.damage.raw_offset if self.damage is not None else self.members[-1][1]
        self.damage, self.z = None, None
        search = 1 if self.buf_at <= damaged_at else 0  # never the damaged member's own start again
        while True:
            i = self.buf.find(GZIP_MAGIC, search)
            if i < 0:
                keep = max(len(self.buf) - 2, 0)
                self.buf_at += keep
                self.buf = self.buf[keep:]
                search = 0
                if not self._fill():
                    self.buf_at += len(self.buf)
                    self.buf = b""
                    return False
                continue
            while len(self.buf) - i < 1024 and self._fill():
                pass
            if _starts_record(self.buf[i : i + RAW_BLOCK]):
                self.buf_at += i
                self.buf = self.buf[i:]
                return True
            search = i + 1

    def skip_member(self) -> None:
        """Drop what is left of the member being inflated (a record in it did not parse)."""
        while self.z is not None and self.damage is None:
            if self.read(OUT_BLOCK) == b"" and self.z is None:
                break


def _starts_record(candidate: bytes) -> bool:
    try:
        head = zlib.decompressobj(31).decompress(candidate, 64)
    except zlib.error:
        return False
    return head.startswith(b"WARC/") or bool(re.match(rb"[a-z][a-z0-9+.-]*:\S* ", head[:64]))
