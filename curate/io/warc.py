"""Crawl archives (WARC, WET, ARC; plain or gzip per record) as rows, one per page record.

Files are streamed record by record: warcio parses each record's headers, and the gzip members
are inflated by curate (warc_gzip.py), one member at a time, so that a damaged member (cut short,
or corrupt) is found, named by its offset, and stepped over to the next member instead of ending
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
detects (warc_charset.py). ISO-8859-1 and ASCII are read as windows-1252, as browsers do.

Bad records go to the trace with the byte offset of the record (of its gzip member, in a
.gz file) and the rest of the file is read: a gzip member cut short (`truncated`) or corrupt, a
record whose HTTP headers do not parse, a payload no charset decodes (`unparseable`). In an
uncompressed file a record whose WARC header does not parse ends the file there (traced): there
is no member boundary to resume at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import pyarrow as pa

from curate.io.warc_charset import candidates, decode, detect
from curate.io.warc_gzip import Inflated

SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("url", "warc_date", "warc_record_id", "content_type", "charset", "html", "text")]
)
HTML_TYPES = ("text/html", "application/xhtml+xml")
SUFFIXES = (".warc", ".arc", ".wet")  # before an optional .gz
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
    stream = Inflated(raw)
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
            f"{declared!r}; tried {', '.join(candidates(payload, declared))}, then "
            f"detection: {detect(payload)})",
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
    from curate.io.readers import BadRows

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
