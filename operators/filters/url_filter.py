"""url_filter: removes rows by their URL, from block and allow lists in the user's files.

Each list is a text file, one entry a line ('#' starts a comment). Three kinds of entry:
- `domains`: exact host names; "example.com" also matches "www.example.com";
- `suffixes`: a domain and all its subdomains; "example.com" matches "a.b.example.com";
- `substrings`: anywhere in the lower-cased URL ("casino", "/wp-login").
A URL matching an allow entry stays whatever the block lists say; with `only_allowed`, every
URL matching no allow entry goes. Host names are compared lower-cased, without port or user.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.errors import InputError, RecipeError
from curate.ops import Filter, Params, Verdict, loaded, reads_column
from curate.paths import local_path


class UrlLists(Params):
    domains: str | None = local_path(None, hub=False, description="File of exact host names.")
    suffixes: str | None = local_path(None, hub=False, description="File of domains matched with all their subdomains.")
    substrings: str | None = local_path(None, hub=False, description="File of substrings of the lower-cased URL.")


class UrlFilterParams(Params):
    url_column: str = reads_column("url", "The column holding each row's URL.")
    block: UrlLists = Field(UrlLists(), description="Lists of URLs to remove.")
    allow: UrlLists = Field(UrlLists(), description="Lists of URLs to keep whatever the block lists say.")
    only_allowed: bool = Field(False, description="Remove every URL that matches no allow entry.")
    drop_missing: bool = Field(False, description="Remove rows without a URL (else they stay).")


def _entries(path: str | None, where: str) -> list[str]:
    if path is None:
        return []
    file = Path(path).expanduser()
    if not file.is_file():
        raise RecipeError(where, f"url_filter: list {file} does not exist")
    return [e.lower() for line in file.read_text().splitlines() if (e := line.split("#", 1)[0].strip())]


class Matcher:
    """One side's lists: which kind of entry, if any, a URL matches."""

    def __init__(self, lists: UrlLists, side: str):
        self.domains = {d.removeprefix("www.") for d in _entries(lists.domains, f"{side}.domains")}
        self.suffixes = set(_entries(lists.suffixes, f"{side}.suffixes"))
        substrings = _entries(lists.substrings, f"{side}.substrings")
        self.substrings = re.compile("|".join(map(re.escape, substrings))) if substrings else None

    def __bool__(self) -> bool:
        return bool(self.domains or self.suffixes or self.substrings)

    def match(self, url: str, host: str) -> str | None:
        if host.removeprefix("www.") in self.domains:
            return "domain"
        if self.suffixes:
            labels = host.split(".")
            if any(".".join(labels[i:]) in self.suffixes for i in range(len(labels))):
                return "suffix"
        if self.substrings is not None and self.substrings.search(url):
            return "substring"
        return None


def host_of(url: str) -> str:
    try:
        return (urlsplit(url if "//" in url else "//" + url).hostname or "").rstrip(".")
    except ValueError:  # e.g. an invalid IPv6 literal
        return ""


class UrlFilter(Filter):
    """Drops rows whose URL is on a block list (or on no allow list, with only_allowed)."""

    name = "url_filter"
    Params = UrlFilterParams
    # Loaded in this order, so a missing block list is the error reported first.
    @loaded
    def block(self) -> Matcher:
        block = Matcher(self.params.block, "block")
        if not block and not self.params.only_allowed:
            raise RecipeError("block", "url_filter: no block list given, so it would remove nothing "
                                       "(give block lists, or allow lists with only_allowed: true)")
        return block

    @loaded
    def allow(self) -> Matcher:
        allow = Matcher(self.params.allow, "allow")
        if self.params.only_allowed and not allow:
            raise RecipeError("allow", "url_filter: only_allowed without allow lists would remove every row")
        return allow

    def verdict(self, url: str | None) -> tuple[str, str] | None:
        if url is None or not url.strip():
            return ("url_missing", "no URL") if self.params.drop_missing else None
        lower = url.strip().lower()
        host = host_of(lower)
        if self.allow and self.allow.match(lower, host):
            return None
        if self.params.only_allowed:
            return "url_not_allowed", f"host={host}"
        kind = self.block.match(lower, host)
        return (f"url_blocked_{kind}", f"host={host}") if kind else None

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        column = batch.column(self.params.url_column)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_null(column.type)):
            raise InputError(f"url_filter: column '{self.params.url_column}' must be text, it is {column.type}")
        found = [self.verdict(u) for u in column.to_pylist()]
        return Verdict(keep=np.array([f is None for f in found], bool),
                       reason=pa.array([f and f[0] for f in found], pa.string()),
                       detail=pa.array([f and f[1] for f in found], pa.string()))
