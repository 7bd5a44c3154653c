"""Listing a prefix of S3 for the plan, lean: ListObjectsV2 pages read for the key, size and ETag
of each object and nothing more.

Through s3fs, each page of 1,000 keys goes through botocore's generic parser: every field of
every object turned into a dict entry, every LastModified parsed by dateutil; that was most of
the client's 9.5 CPU-seconds for 100,000 keys. Here the requests are the same s3fs client's
(signing, endpoint, credentials, the retry policy's hook and its counts), but a page asked for
by this module is parsed by ElementTree for those three fields, once: recent botocore also
parses every S3 answer whole before its parse, to find an error inside a 200 or a body cut
short; for a lean page that look is made here, on the page's one parse. The marker is a context
variable of the listing's own asyncio task: every other request of the client is parsed as
before, and looked at by botocore's own function.

Subprefixes are listed many at once, as listing.find_all does with fs.ls / fs.find.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from typing import cast
from urllib.parse import unquote_plus
from xml.etree import ElementTree

_LEAN = contextvars.ContextVar("curate_lean_listing", default=False)
PAGE_KEYS = 1000  # keys a page (S3's most)
_PAGE = "CuratePage"  # where a lean page's objects and subprefixes go in the parsed response
# What botocore's parser is left to parse of a lean page: an empty result.
_EMPTY = b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult></ListBucketResult>'


def lean(fs) -> bool:
    """Whether `fs` is an s3fs filesystem this module can list (one listing object versions
    asks another API: it is listed by s3fs itself)."""
    return hasattr(fs, "_call_s3") and not getattr(fs, "version_aware", False)


def find(fs, path: str, in_flight: int, split_levels: int) -> dict[str, dict]:
    """Every object under the prefix `path` (bucket/key) as {name: {name, size, type, ETag}},
    the names and fields fs.find gives; directory placeholders (keys ending in "/") left out.
    The prefix is split one level at a time (a delimited listing) until there are `in_flight`
    subprefixes or `split_levels` levels, then each is listed whole, `in_flight` requests at once."""
    from fsspec.asyn import sync

    return sync(fs.loop, _find, fs, path, in_flight, split_levels)


async def _find(fs, path: str, in_flight: int, split_levels: int) -> dict[str, dict]:
    _LEAN.set(True)  # this task's requests, and those of the tasks it starts, are parsed here
    bucket, _, key = path.strip("/").partition("/")
    await fs.set_session()
    _hook(await fs.get_s3(bucket))  # the client s3fs sends this bucket's requests with
    gate = asyncio.Semaphore(in_flight)
    found: dict[str, dict] = {}

    def add(objects):
        for name, size, etag in objects:
            if not name.endswith("/"):
                found[f"{bucket}/{name}"] = {"name": f"{bucket}/{name}", "size": size, "type": "file", "ETag": etag}

    prefixes = [f"{key}/" if key else ""]
    for _ in range(split_levels):
        deeper = []
        for objects, subprefixes in await asyncio.gather(*(_list(fs, bucket, p, "/", gate) for p in prefixes)):
            add(objects)
            deeper += subprefixes
        prefixes = deeper
        if len(prefixes) >= in_flight or not prefixes:
            break
    for objects, _ in await asyncio.gather(*(_list(fs, bucket, p, "", gate) for p in prefixes)):
        add(objects)
    return found


async def _list(fs, bucket: str, prefix: str, delimiter: str, gate: asyncio.Semaphore):
    """The objects (key, size, ETag) and subprefixes of one prefix, page after page."""
    objects, subprefixes, token = [], [], None
    while True:
        kw: dict[str, str] = {"ContinuationToken": token} if token else {}
        async with gate:
            page = await fs._call_s3(
                "list_objects_v2",
                Bucket=bucket,
                Prefix=prefix,
                Delimiter=delimiter,
                MaxKeys=PAGE_KEYS,
                **kw,
                **fs.req_kw,
            )
        found, more, token = page[_PAGE]
        objects += found
        subprefixes += more
        if token is None:
            return objects, subprefixes


def _hook(client) -> None:
    import botocore.handlers

    check = getattr(botocore.handlers, "_handle_200_error", None)  # absent from older botocore
    events = client.meta.events
    if check is not None:
        events.unregister("before-parse.s3.*", check)
    events.unregister("before-parse.s3.*", unique_id="curate-lean-listing")
    events.register_first("before-parse.s3.*", functools.partial(_before_parse, check), unique_id="curate-lean-listing")


def _before_parse(check, response_dict: dict, customized_response_dict: dict, operation_model, **kw) -> None:
    """A lean page's answer parsed here; any other answer looked at by botocore's `check`."""
    if not (_LEAN.get() and operation_model.name == "ListObjectsV2" and response_dict["status_code"] == 200):
        if check is not None:
            check(
                response_dict=response_dict,
                customized_response_dict=customized_response_dict,
                operation_model=operation_model,
                **kw,
            )
        return
    try:
        root = ElementTree.fromstring(response_dict["body"])
    except ElementTree.ParseError:
        root = None
    if root is None or root.tag == "Error":
        # an error inside a 200 or a page cut short: a 500 to botocore, retried and named as
        # botocore's own look at the answer would have made it
        response_dict["status_code"] = 500
        return
    customized_response_dict[_PAGE] = parse_page(root)
    response_dict["body"] = _EMPTY


def parse_page(root: ElementTree.Element) -> tuple[list[tuple[str, int, str | None]], list[str], str | None]:
    """A parsed ListObjectsV2 answer's objects (key, size, ETag as S3 gives it, quotes included),
    its subprefixes, and the token of the next page (None on the last)."""
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    # botocore asks for keys URL-encoded (XML cannot carry every character a key may hold) and
    # decodes them after its parse, as unquote_plus does
    decode = unquote_plus if root.findtext(f"{ns}EncodingType") == "url" else str
    # S3 gives every object its Key and Size, every common prefix its Prefix (ETag may be missing)
    objects = [
        (decode(cast(str, c.findtext(f"{ns}Key"))), int(cast(str, c.findtext(f"{ns}Size"))), c.findtext(f"{ns}ETag"))
        for c in root.iterfind(f"{ns}Contents")
    ]
    subprefixes = [decode(cast(str, p.findtext(f"{ns}Prefix"))) for p in root.iterfind(f"{ns}CommonPrefixes")]
    more = root.findtext(f"{ns}IsTruncated") == "true"
    return objects, subprefixes, root.findtext(f"{ns}NextContinuationToken") if more else None
