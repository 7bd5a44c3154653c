"""The text of a crawled page's payload: decoded with the first of these that decodes it without
error: a byte-order mark; the charset of the HTTP Content-Type; the charset of a `<meta>` tag in
its first 4 KB; UTF-8; what cchardet (else charset_normalizer) detects. ISO-8859-1 and ASCII are
read as windows-1252, as browsers do (curate/io/warc.py)."""

from __future__ import annotations

import codecs
import re

META_PEEK = 4096  # bytes of a payload searched for a <meta charset>


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


def detect(payload: bytes) -> str | None:
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


def candidates(payload: bytes, declared: str | None) -> list[str]:
    bom = next((name for mark, name in _BOMS if payload.startswith(mark)), None)
    labels = [bom, _header_charset(declared), _meta_charset(payload), "utf-8"]
    out = list(dict.fromkeys(c for c in map(_codec, labels) if c))
    return out


def decode(payload: bytes, declared_content_type: str | None) -> tuple[str, str] | None:
    """(text, codec name) of the first charset that decodes `payload` strictly (see the module
    doc), or None. Detection runs only when the declared charsets and UTF-8 all fail."""
    tried = candidates(payload, declared_content_type)
    for codec in tried:
        try:
            return payload.decode(codec), codec
        except (UnicodeDecodeError, LookupError):
            continue
    detected = _codec(detect(payload))
    for candidate in (detected, "cp1252" if detected == "cp1252" else None):
        if candidate and candidate not in tried:
            try:
                return payload.decode(candidate), candidate
            except (UnicodeDecodeError, LookupError):
                pass
    if detected == "cp1252" or "cp1252" in tried:  # 1252 leaves five bytes undefined; Latin-1 none
        return payload.decode("latin-1"), "latin-1"
    return None
