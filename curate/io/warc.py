"""Crawl archives (WARC, WET, ARC; plain or gzip per record) as rows, one per page record.

Files are streamed record by record: warcio parses each record's headers, and the gzip members
are inflated here (`_Inflated`), one member at a time, so that a damaged member (cut short, or
corrupt) is found, named by its offset, and stepped over to the next member instead of ending
the file. Nothing holds more than one record's payload at a time.

Which records become rows (datatrove's WarcReader rule, `Selection`):
- `response` records (an ARC file's records are responses too) and `conversion` records (WET);
- a response must carry an HTTP status in `statuses` (default 200: a redirect or error page is
  not the page);
- the payload's type must be in `mime_types` (default text/html, application/xhtml+xml; a
  conversion record may also be text/plain). The type is the record's
  `WARC-Identified-Payload-Type` (compared exactly, as datatrove does); where a record has none,
  the server's `Content-Type` (for a WET record, the record's own), else a sniff of the first
  bytes for HTML. datatrove asks libmagic there instead; its answer depends on the libmagic
  build, so curate does not.

Columns (all strings, the same for every file, so the schema is known without reading one):
`url` (WARC-Target-URI; ARC `uri`), `warc_date` (WARC-Date as written; an ARC date as
YYYY-MM-DDThh:mm:ssZ), `warc_record_id` (as written, angle brackets kept; null for ARC),
`content_type` (the type the rule matched), `charset` (the codec the payload was decoded with),
`html` (a response's payload as text) and `text` (a WET conversion record's text).

The payload (HTTP chunking and content encoding undone by warcio) is decoded with the first of
these that decodes it without error: a byte-order mark; the charset of the HTTP Content-Type;
the charset of a `<meta>` tag in its first 4 KB; UTF-8; what cchardet (else charset_normalizer)
detects. ISO-8859-1 and ASCII are read as windows-1252, as browsers do.

Bad records go to the trace with the byte offset of the record (of its gzip member, in a
.gz file) and the rest of the file is read: a gzip member cut short (`truncated`) or corrupt, a
record whose HTTP headers do not parse, a payload no charset decodes (`unparseable`). In an
uncompressed file a record whose WARC header does not parse ends the file there (traced): there
is no member boundary to resume at.
"""

from __future__ import annotations

import codecs
import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import pyarrow as pa

SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("url", "warc_date", "warc_record_id", "content_type", "charset", "html", "text")]
)
HTML_TYPES = ("text/html", "application/xhtml+xml")
SUFFIXES = (".warc", ".arc", ".wet")  # before an optional .gz
GZIP_MAGIC = b"\x1f\x8b\x08"
RAW_BLOCK = 1 << 16  # compressed bytes read at a time
OUT_BLOCK = 1 << 16  # decompressed bytes handed to warcio at a time
META_PEEK = 4096  # bytes of a payload searched for a <meta charset>
BATCH_PAYLOAD_BYTES = 32 << 20  # a batch is cut when its pages reach this much text, whatever batch_rows
RAW_SAMPLE = 300  # bytes of a bad record's headers kept in the trace


@dataclass(frozen=True)
class Selection:
    """Which records are rows (see the module doc)."""

    mime_types: tuple[str, ...] = HTML_TYPES
    statuses: tuple[int, ...] | None = (200,)  # None: any HTTP status


DEFAULT = Selection()


@dataclass
class Page:
    offset: int
    url: str | None
    warc_date: str | None
    warc_record_id: str | None
    content_type: str
    charset: str
    html: str | None
    text: str | None


@dataclass
class Broken:
    offset: int
    raw: bytes
    error: str
    reason: str = "unparseable"


@dataclass
class _Damage:
    raw_offset: int  # where the damaged member starts in the file
    start: int  # where its bytes start in the inflated stream
    error: str
    reason: str
    reported: bool = False


class _Inflated:
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


def records(raw: BinaryIO, selection: Selection = DEFAULT) -> Iterator[Page | Broken]:
    """The page records of the archive `raw` (its bytes as in the file) and its bad records, in
    file order."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.recordloader import ArcWarcRecordLoader
    from warcio.statusandheaders import StatusAndHeadersParserException

    loader = ArcWarcRecordLoader(verify_http=False, arc2warc=False)
    parse_errors = (
        ArchiveLoadFailed,
        StatusAndHeadersParserException,
        ValueError,
        EOFError,
        KeyError,
        IndexError,
        UnicodeDecodeError,
    )
    stream = _Inflated(raw)
    while True:
        it = ArchiveIterator(stream, no_record_parse=True)
        try:
            for record in it:
                start = it.offset
                found = _page(record, loader, selection, parse_errors)
                it.read_to_end()
                truncated = getattr(record.raw_stream, "limit", 0) > 0
                damage = stream.damage
                if damage is not None and damage.start <= start:
                    damage.reported = True
                    found = Broken(
                        damage.raw_offset,
                        _head(record),
                        f"record at byte {damage.raw_offset} ({_where(record)}): {damage.error}",
                        damage.reason,
                    )
                elif truncated:
                    found = Broken(
                        stream.raw_offset(start),
                        _head(record),
                        f"record at byte "
                        f"{stream.raw_offset(start)} ({_where(record)}): the file ends inside it "
                        f"({record.raw_stream.limit:,} of its {record.length:,} bytes are missing)",
                        "truncated",
                    )
                if isinstance(found, Broken):
                    if found.offset < 0:  # from _page: a record whose headers or payload fail
                        found.offset = stream.raw_offset(start)
                        found.error = f"record at byte {found.offset}, {found.error}"
                    yield found
                elif found is not None:
                    found.offset = stream.raw_offset(start)
                    yield found
        except parse_errors as e:
            if stream.damage is None:  # the record's own WARC header does not parse
                at = stream.raw_offset(it.offset)
                yield Broken(
                    at,
                    b"",
                    f"record at byte {at}: not a WARC/ARC record ({_one_line(e)})"
                    + ("" if stream.gzip else "; the rest of the file cannot be read"),
                )
                stream.skip_member()
                if not stream.resync():
                    return
                continue
        damage = stream.damage
        if damage is None:
            return
        if not damage.reported:
            yield Broken(damage.raw_offset, b"", f"record at byte {damage.raw_offset}: {damage.error}", damage.reason)
        if not stream.resync():
            return


def _page(record, loader, selection: Selection, parse_errors) -> Page | Broken | None:
    """The record as a Page, None where the rule leaves it out, Broken where it cannot be read."""
    kind = record.rec_type
    if kind not in ("response", "conversion"):
        return None
    headers = record.rec_headers
    uri = (headers.get_header("WARC-Target-URI") or headers.get_header("uri") or "").strip().strip("<>")
    http = None
    if kind == "response":
        try:
            # warcio looks for HTTP headers only behind a lower-case http: or https: URI; schemes are
            # case-insensitive (RFC 3986), and a page at HTTP://... is a page
            scheme, colon, rest = uri.partition(":")
            http = loader.load_http_headers(kind, scheme.lower() + colon + rest, record.raw_stream, record.length)
        except parse_errors as e:
            return Broken(-1, _head(record), f"{_where(record)}: its HTTP headers do not parse ({_one_line(e)})")
        if http is not None and not (http.protocol.upper().startswith("HTTP/") and _STATUS.match(http.statusline)):
            # warcio parses any first line leniently; a page behind one that is not HTTP cannot be trusted
            line = f"{http.protocol} {http.statusline}".strip()
            return Broken(-1, _head(record), f"{_where(record)}: its HTTP status line does not parse ({line[:100]!r})")
        record.http_headers = http  # so content_stream() undoes the chunking and content encoding
        if selection.statuses is not None:
            try:
                if http is None or int(http.get_statuscode()) not in selection.statuses:
                    return None
            except (TypeError, ValueError):
                return None
    identified = headers.get_header("WARC-Identified-Payload-Type")
    allowed = selection.mime_types + (("text/plain",) if kind == "conversion" else ())
    if identified is not None and identified not in allowed:
        return None  # decided before the payload is read, as datatrove does
    try:
        payload = record.content_stream().read()
    except Exception as e:  # noqa: BLE001 - warcio's chunked/encoded readers raise their own types; one record
        return Broken(-1, _head(record), f"{_where(record)}: its payload cannot be decoded ({_one_line(e)})")
    declared = http.get_header("Content-Type") if http is not None else headers.get_header("Content-Type")
    mime = identified or _mime(declared) or ("text/html" if _sniff_html(payload) else None)
    if mime not in allowed:
        return None
    date = headers.get_header("WARC-Date") or _arc_date(headers.get_header("archive-date"))
    record_id = headers.get_header("WARC-Record-ID")
    if kind == "conversion":
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError as e:
            return Broken(-1, _head(record), f"{_where(record)}: its text is not UTF-8 ({e.reason} at byte {e.start})")
        return Page(-1, uri or None, date, record_id, mime, "utf-8", None, text)
    decoded = decode(payload, declared)
    if decoded is None:
        return Broken(
            -1,
            _head(record),
            f"{_where(record)}: no charset decodes its payload (declared: "
            f"{declared!r}; tried {', '.join(_candidates(payload, declared))}, then "
            f"detection: {_detect(payload)})",
        )
    html, charset = decoded
    return Page(-1, uri or None, date, record_id, mime, charset, html, None)


_STATUS = re.compile(r"\d{3}(\s|$)")


def _where(record) -> str:
    uri = record.rec_headers.get_header("WARC-Target-URI") or record.rec_headers.get_header("uri")
    return f"{record.rec_type} {uri}" if uri else record.rec_type


def _head(record) -> bytes:
    return record.rec_headers.to_bytes()[:RAW_SAMPLE] if hasattr(record.rec_headers, "to_bytes") else b""


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300] or type(e).__name__


def _mime(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def _sniff_html(payload: bytes) -> bool:
    head = payload[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<!--"))


def _arc_date(value: str | None) -> str | None:
    if not value or len(value) < 14 or not value[:14].isdigit():
        return value
    v = value
    return f"{v[0:4]}-{v[4:6]}-{v[6:8]}T{v[8:10]}:{v[10:12]}:{v[12:14]}Z"


# Charsets -------------------------------------------------------------------------------------

_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)
_META = re.compile(rb"<meta\b[^>]*>", re.I)
# What browsers read these labels as (WHATWG Encoding): windows-1252 is a superset that differs
# only in 0x80-0x9F, where real pages labelled Latin-1 mean 1252's quotes and dashes.
_AS = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "l1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "x-sjis": "shift_jis",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}  # a <meta> saying UTF-16 is read as UTF-8
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    label = _AS.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = _CHARSET.search(content_type.encode("latin-1", "replace"))
    return m.group(1).decode("ascii", "replace") if m else None


def _meta_charset(payload: bytes) -> str | None:
    for tag in _META.finditer(payload[:META_PEEK]):
        m = _CHARSET.search(tag.group(0))
        if m:
            return m.group(1).decode("ascii", "replace")
    return None


def _detect(payload: bytes) -> str | None:
    try:
        import cchardet  # faust-cchardet, as datatrove

        return cchardet.detect(payload).get("encoding")
    except ImportError:
        pass
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return None
    best = from_bytes(payload).best()
    return best.encoding if best is not None else None


def _candidates(payload: bytes, declared: str | None) -> list[str]:
    bom = next((name for mark, name in _BOMS if payload.startswith(mark)), None)
    labels = [bom, _header_charset(declared), _meta_charset(payload), "utf-8"]
    out = list(dict.fromkeys(c for c in map(_codec, labels) if c))
    return out


def decode(payload: bytes, declared_content_type: str | None) -> tuple[str, str] | None:
    """(text, codec name) of the first charset that decodes `payload` strictly (see the module
    doc), or None. Detection runs only when the declared charsets and UTF-8 all fail."""
    tried = _candidates(payload, declared_content_type)
    for codec in tried:
        try:
            return payload.decode(codec), codec
        except (UnicodeDecodeError, LookupError):
            continue
    detected = _codec(_detect(payload))
    for candidate in (detected, "cp1252" if detected == "cp1252" else None):
        if candidate and candidate not in tried:
            try:
                return payload.decode(candidate), candidate
            except (UnicodeDecodeError, LookupError):
                pass
    if detected == "cp1252" or "cp1252" in tried:  # 1252 leaves five bytes undefined; Latin-1 none
        return payload.decode("latin-1"), "latin-1"
    return None


# Rows -----------------------------------------------------------------------------------------


def batches(
    raw: BinaryIO, batch_rows: int, selection: Selection = DEFAULT
) -> Iterator[tuple[pa.RecordBatch | None, list[Broken]]]:
    """`records` as RecordBatches of SCHEMA (at most `batch_rows` rows, or BATCH_PAYLOAD_BYTES of
    text) with the bad records met since the last batch."""
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    broken: list[Broken] = []
    size = 0

    def flush():
        nonlocal columns, broken, size
        rows = len(columns["url"])
        batch = pa.RecordBatch.from_pydict(columns, schema=SCHEMA) if rows else None
        out = (batch, broken)
        columns, broken, size = {name: [] for name in SCHEMA.names}, [], 0
        return out

    for item in records(raw, selection):
        if isinstance(item, Broken):
            broken.append(item)
            continue
        for name in SCHEMA.names:
            columns[name].append(getattr(item, name))
        size += len(item.html or item.text or "")
        if len(columns["url"]) >= batch_rows or size >= BATCH_PAYLOAD_BYTES:
            yield flush()
    if columns["url"] or broken:
        yield flush()


def read(
    source,
    batch_rows: int,
    on_bad_row: str,
    meter,
    schema: pa.Schema | None = None,
    on_truncated: str = "fail",
    selection: Selection = DEFAULT,
):
    """curate/io/readers.py's reader for `input.format: warc`: (batch, BadRows) chunks of the
    file `source` (local or at a URI: streamed, never downloaded whole), each bad record a bad
    row at its byte offset (unit "offset"). `on_truncated` does not apply: a member cut short is one
    bad record, and the records before it are read in any case."""
    from curate.io import store
    from curate.io.bad_rows import BadRows

    if source.is_uri:  # the raw bytes: gzip members are inflated here, not by the store's stream
        raw = store.open_stream(source.path, source.storage_options, None, source.size, source.version, meter)
    else:
        raw = open(source.path, "rb")
        meter.follow(raw)
    with raw:
        for batch, broken in batches(raw, batch_rows, selection):
            bad = None
            if broken:
                bad = BadRows(unit="offset")
                for b in broken:
                    bad.add(b.offset, b.raw, b.error, b.reason)
            if batch is not None and schema is not None and batch.schema != schema:
                fields = [f for f in schema if f.name in SCHEMA.names]  # not partition columns: added after
                batch = pa.RecordBatch.from_arrays(
                    [batch.column(f.name).cast(f.type) for f in fields], schema=pa.schema(fields)
                )
            yield batch, bad
