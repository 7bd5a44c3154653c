"""Crawl archives for the tests, written with warcio at test time: real pages (pages/, from
trafilatura's sdist) and generated hard cases, plus the reference reader (a plain warcio
iteration with datatrove's WarcReader rule) the curate reader must agree with."""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass, field
from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"
HTML_TYPES = ("text/html", "application/xhtml+xml")


def real_pages() -> dict[str, bytes]:
    """name -> raw bytes of each real page."""
    out = {}
    for p in sorted(PAGES.iterdir()):
        if p.name.endswith(".html"):
            out[p.stem] = p.read_bytes()
        elif p.name.endswith(".html.gz"):
            out[p.name[:-8]] = gzip.decompress(p.read_bytes())
    return out


@dataclass
class Rec:
    """One record to write: a response (HTTP status and headers, payload), or another type."""

    url: str
    body: bytes = b""
    kind: str = "response"
    status: str = "200 OK"
    http: list[tuple[str, str]] = field(default_factory=lambda: [("Content-Type", "text/html; charset=utf-8")])
    identified: str | None = "text/html"  # WARC-Identified-Payload-Type; None: absent
    date: str = "2024-01-02T03:04:05Z"
    raw_http: bytes | None = None  # the whole HTTP block as given (a broken header), instead of status/http/body
    extra: list[tuple[str, str]] = field(default_factory=list)


def write_warc(path: Path, recs: list[Rec], gz: bool | None = None) -> Path:
    """A WARC file (each record its own gzip member when `gz`, by default when the name ends .gz)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    gz = path.name.endswith(".gz") if gz is None else gz
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gz)
    writer.write_record(writer.create_warcinfo_record(path.name, {"software": "curate tests"}))
    for i, r in enumerate(recs):
        headers = [("WARC-Date", r.date)] + ([("WARC-Identified-Payload-Type", r.identified)] if r.identified else [])
        headers += r.extra
        if r.raw_http is not None:  # written by hand: warcio's writer refuses a broken HTTP block
            head = [("WARC-Type", r.kind), ("WARC-Record-ID", f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>"),
                    ("WARC-Target-URI", r.url), *headers, ("Content-Type", "application/http; msgtype=response"),
                    ("Content-Length", str(len(r.raw_http)))]
            data = b"WARC/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in head) + b"\r\n" + \
                r.raw_http + b"\r\n\r\n"
            buf.write(gzip.compress(data, mtime=0) if gz else data)
            continue
        elif r.kind in ("response", "revisit"):
            http = StatusAndHeaders(r.status, list(r.http), protocol="HTTP/1.1")
            rec = writer.create_warc_record(r.url, r.kind, payload=io.BytesIO(r.body), http_headers=http,
                                            warc_headers_dict=dict(headers))
        elif r.kind == "request":
            http = StatusAndHeaders(f"GET {r.url} HTTP/1.1", [("Host", "example.com")], is_http_request=True)
            rec = writer.create_warc_record(r.url, "request", payload=io.BytesIO(b""), http_headers=http,
                                            warc_headers_dict=dict(headers))
        else:  # conversion (WET), resource, metadata
            rec = writer.create_warc_record(r.url, r.kind, payload=io.BytesIO(r.body), length=len(r.body),
                                            warc_content_type="text/plain", warc_headers_dict=dict(headers))
        writer.write_record(rec)
    path.write_bytes(buf.getvalue())
    return path


def hard_cases() -> list[Rec]:
    """Every hard case the reader must handle, besides the real pages."""
    latin = "<html><head><title>Café</title></head><body><p>Voilà un été très élégant à Zürich, " \
            "déjà célèbre.</p></body></html>"
    sjis_text = "<html><head><meta charset=\"Shift_JIS\"><title>日本</title></head><body><p>" + \
                "日本語のページです。東京は大きな都市です。" * 5 + "</p></body></html>"
    nested = "<html><body>" + "<div>" * 3000 + "<p>deep text at the bottom</p>" + "</div>" * 3000 + "</body></html>"
    chunked_gz = gzip.compress(b"<html><body><p>compressed and chunked page body</p></body></html>", mtime=0)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked_gz), chunked_gz)
    return [
        Rec("http://latin.example/1", latin.encode("latin-1"), http=[("Content-Type", "text/html; charset=ISO-8859-1")]),
        Rec("http://sjis.example/meta", sjis_text.encode("shift_jis"), http=[("Content-Type", "text/html")]),
        # the header says UTF-8, the bytes are Shift-JIS (its meta too): the header fails, the meta decodes
        Rec("http://sjis.example/lying", sjis_text.encode("shift_jis"), http=[("Content-Type", "text/html; charset=utf-8")]),
        # a lying header and no meta: detection decides
        Rec("http://latin.example/lying", ("<html><body><p>" + "Ça été très élégant, où êtes-vous déjà ? " * 20
                                           + "</p></body></html>").encode("latin-1"),
            http=[("Content-Type", "text/html; charset=utf-8")]),
        Rec("http://img.example/a.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), http=[("Content-Type", "image/png")],
            identified="image/png"),
        # no identified type: the server's Content-Type decides (a PDF: left out; an HTML page without it: kept)
        Rec("http://pdf.example/a.pdf", b"%PDF-1.4 binary", http=[("Content-Type", "application/pdf")], identified=None),
        Rec("http://noident.example/", b"<html><body><p>no identified type</p></body></html>", identified=None),
        Rec("http://sniff.example/", b"<!DOCTYPE html><html><body><p>sniffed</p></body></html>", http=[], identified=None),
        Rec("http://xhtml.example/", b"<?xml version='1.0'?><html xmlns='http://www.w3.org/1999/xhtml'><body><p>x"
            b"</p></body></html>", http=[("Content-Type", "application/xhtml+xml")], identified="application/xhtml+xml"),
        Rec("http://redirect.example/", b"<html><body>Moved</body></html>", status="301 Moved Permanently",
            http=[("Location", "http://redirect.example/new"), ("Content-Type", "text/html")]),
        Rec("http://missing.example/", b"<html><body>Not found</body></html>", status="404 Not Found"),
        Rec("http://empty.example/", b""),
        Rec("http://nested.example/", nested.encode()),
        Rec("http://chunked.example/", chunked, http=[("Content-Type", "text/html; charset=utf-8"),
                                                       ("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")]),
        Rec("http://revisit.example/", b"", kind="revisit", extra=[("WARC-Refers-To", "<urn:uuid:x>")]),
        Rec("http://request.example/", kind="request"),
        Rec("http://meta.example/", b"{}", kind="metadata", identified=None),
        Rec("http://cp1252.example/", "<html><body><p>“quoted” – dash … ellipsis</p></body></html>".encode("cp1252"),
            http=[("Content-Type", "text/html; charset=iso-8859-1")]),
    ]


def undecodable() -> Rec:
    """UTF-8 declared and detected, with bytes UTF-8 cannot decode."""
    body = ("<html><head><meta charset='utf-8'></head><body><p>" + "日本語のページです。" * 40).encode() + \
        b"\xff\xfe\xfa" + "</p></body></html>".encode()
    return Rec("http://undecodable.example/", body)


def broken_http() -> Rec:
    return Rec("http://broken-http.example/", raw_http=b"this is not an HTTP status line\r\nX: y\r\n\r\n<html></html>")


def wet_records() -> list[Rec]:
    return [Rec(f"http://wet.example/{i}", f"Title {i}\nA paragraph of extracted text number {i}.\n".encode(),
                kind="conversion", identified=None, extra=[("WARC-Refers-To", f"<urn:uuid:{i:08d}>")])
            for i in range(3)]


def real_records(n: int | None = None) -> list[Rec]:
    pages = real_pages()
    return [Rec(f"https://real.example/{name}", body) for name, body in list(pages.items())[:n]]


def write_arc_gz(path: Path, pages: list[tuple[str, bytes]]) -> Path:
    """An ARC file, each record its own gzip member (the first: the filedesc:// header)."""
    members = []
    desc = b"1 0 curate-tests\nURL IP-address Archive-date Content-type Archive-length\n"
    members.append(b"filedesc://%s 0.0.0.0 20080101000000 text/plain %d\n%s\n" % (path.name.encode(), len(desc), desc))
    for url, body in pages:
        http = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
        members.append(b"%s 1.2.3.4 20080102030405 text/html %d\n%s\n" % (url.encode(), len(http), http))
    path.write_bytes(b"".join(gzip.compress(m, mtime=0) for m in members))
    return path


def member_offsets(data: bytes) -> list[int]:
    """The offsets of the gzip members of `data`."""
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        z = zlib.decompressobj(31)
        z.decompress(data[at:])
        at = len(data) - len(z.unused_data)
    return offsets


def reference(path: Path, statuses: tuple[int, ...] | None = (200,)) -> list[tuple[str, bytes]]:
    """(url, payload bytes) of the records datatrove's WarcReader keeps (response or conversion;
    the identified payload type, else the declared type or a sniff, must be HTML/XHTML, or text/plain
    for a conversion), with HTTP status in `statuses`: a plain warcio iteration."""
    from warcio.archiveiterator import ArchiveIterator

    out = []
    with open(path, "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type not in ("response", "conversion"):
                continue
            if record.rec_type == "response" and statuses is not None:
                if record.http_headers is None or not record.http_headers.get_statuscode().isdigit() \
                        or int(record.http_headers.get_statuscode()) not in statuses:
                    continue
            allowed = HTML_TYPES + (("text/plain",) if record.rec_type == "conversion" else ())
            identified = record.rec_headers.get_header("WARC-Identified-Payload-Type")
            if identified is not None and identified not in allowed:
                continue
            payload = record.content_stream().read()
            declared = (record.http_headers.get_header("Content-Type") if record.http_headers
                        else record.rec_headers.get_header("Content-Type"))
            mime = identified or (declared.split(";")[0].strip().lower() if declared else None)
            if mime is None:
                head = payload[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
                mime = "text/html" if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<title",
                                                       b"<!--")) else None
            if mime not in allowed:
                continue
            url = record.rec_headers.get_header("WARC-Target-URI") or record.rec_headers.get_header("uri")
            out.append((url, payload))
    return out
