"""url_normalize: each page's URL in one canonical spelling, its domain, and its capture time as
a number, so that exact_dedup can keep one row per URL (the latest capture) and url_filter can
match domains.

The URL is rewritten (in place by default) by rules that never change what it points to:
- surrounding whitespace and the angle brackets some WARC 1.0 writers put around it go;
- scheme and host are lower-cased, a trailing dot of the host goes, a default port (:80 for
  http, :443 for https) goes, an IDN host is kept in its Unicode form lower-cased;
- an empty path becomes "/"; percent-escapes get upper-case hex, and escapes of unreserved
  characters (letters, digits, - . _ ~) are decoded, as RFC 3986 section 6.2.2 allows;
- the fragment (#...) goes: it never reaches the server.
The query is kept as it is (its order can matter to the server), unless `drop_query_params`
names parameters to remove (tracking parameters such as utm_source).

`domain`: the host without a leading "www.". The time column: `warc_date` (ISO 8601, as the
WARC reader gives it) as seconds since 1970 (float64), null where it does not parse.
A row whose URL has no scheme or host is traced `url_invalid`.

Exact URL dedup, the latest capture kept:
  - url_normalize: {}
  - exact_dedup: {columns: [url], normalize: false, prefer: warc_time}
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.errors import CurateError
from curate.ops import Map, Params, Result, Verdict, reads_column, writes_column

DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class UrlNormalizeParams(Params):
    url_column: str = reads_column("url", "The column holding each row's URL.")
    column: str = writes_column("url", "Column for the normalised URL (by default the URL column itself).")
    domain_column: str = writes_column("domain", "Column for the host without a leading www.")
    date_column: str | None = reads_column("warc_date", "ISO 8601 capture time (the WARC reader's warc_date); "
                                                        "null: no time column.")
    time_column: str | None = writes_column("warc_time", "Column for the capture time in seconds since 1970 "
                                                         "(exact_dedup's prefer); null: none.")
    drop_query_params: list[str] = Field(default_factory=list, description="Query parameters to remove "
                                         "(e.g. utm_source, utm_medium, fbclid); names or prefixes ending in *.")


def _escapes(part: str) -> str:
    def fix(m: re.Match) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED else "%" + m.group(1).upper()
    return _ESCAPE.sub(fix, part)


def normalize(url: str, drop: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(normalised URL, domain) of `url`, or None where it has no scheme or host."""
    url = url.strip().strip("<>").strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad port or IPv6 literal
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if not scheme or not host:
        return None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    path = _escapes(parts.path) or "/"
    query = parts.query
    if drop and query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs
                if not any(k == d or (d.endswith("*") and k.startswith(d[:-1])) for d in drop)]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    query = _escapes(query)
    domain = host.removeprefix("www.")
    return urlunsplit((scheme, netloc, path, query, "")), domain


def epoch_seconds(value: str | None) -> float | None:
    """An ISO 8601 time (a trailing Z for UTC; no zone: UTC) as seconds since 1970, or None."""
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


class UrlNormalize(Map):
    """Normalises each URL and adds its domain and capture time."""

    name = "url_normalize"
    Params = UrlNormalizeParams

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        p = self.params
        types = {p.column: pa.string(), p.domain_column: pa.string()}
        if p.time_column and p.date_column:
            types[p.time_column] = pa.float64()
        fields = [f.with_type(types[f.name]) if f.name in types else f for f in schema]
        return pa.schema(fields + [pa.field(n, t) for n, t in types.items() if n not in schema.names])

    def process(self, batch: pa.RecordBatch) -> Result:
        p = self.params
        column = batch.column(p.url_column)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_null(column.type)):
            raise CurateError(f"url_normalize: column '{p.url_column}' must be text, it is {column.type}")
        drop = tuple(p.drop_query_params)
        found = [normalize(u, drop) if u is not None else None for u in column.to_pylist()]
        urls = [f[0] if f else None for f in found]
        domains = [f[1] if f else None for f in found]
        out = _put(batch, p.column, pa.array(urls, pa.string()))
        out = _put(out, p.domain_column, pa.array(domains, pa.string()))
        if p.time_column and p.date_column:
            dates = batch.column(p.date_column).to_pylist()
            out = _put(out, p.time_column, pa.array([epoch_seconds(d) for d in dates], pa.float64()))
        keep = np.array([f is not None for f in found], bool)
        reasons = pa.array([None if f else "url_invalid" for f in found], pa.string())
        originals = column.to_pylist()
        details = pa.array([None if f else f"not a URL with a scheme and host: {str(u)[:200]!r}"
                            for f, u in zip(found, originals)], pa.string())
        return Result(out, Verdict(keep, reasons, details))


def _put(batch: pa.RecordBatch, name: str, values: pa.Array) -> pa.RecordBatch:
    at = batch.schema.get_field_index(name)
    return batch.set_column(at, name, values) if at >= 0 else batch.append_column(name, values)
