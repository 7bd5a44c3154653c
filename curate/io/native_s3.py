"""Objects in S3 read by pyarrow's own C++ client (pyarrow.fs.S3FileSystem) rather than s3fs.

Why: s3fs reads through aiohttp and botocore in Python, and every worker imports and sets up
both (and an SSL context) before its first byte: about a quarter of a CPU-second a worker, where
pyarrow's client costs a few hundredths (measured against a loopback moto server; the CPU per byte
read was the same either way). It also lets a stream's next block download on a thread while the
reader inflates and parses the one before.

Only where the recipe's storage_options say nothing this module cannot say the same way to
pyarrow (`client` answers None otherwise, and the reader takes s3fs as before): an endpoint
(storage_options.endpoint_url, client_kwargs.endpoint_url, fsspec's FSSPEC_S3_ENDPOINT_URL, or
AWS_ENDPOINT_URL), a key / secret / token, anon, a region; credentials otherwise come from the
AWS SDK's own chain (AWS_* variables, profiles, instance roles), as botocore's do.

What s3fs gave is kept:
- retries: the client's own are off (one attempt); each request (the HEAD at open, each range)
  is tried again by curate's policy (retries.py), counted by reason;
- a changed object is an error: the HEAD that opens an object must give the ETag it was listed
  with, and read_source asks once more after its last row (`unchanged`). So a read whose object
  changed before it began, or while it ran and stayed changed, fails; one that changed and was
  put back to the listed bytes between the two HEADs is not seen (s3fs's If-Match on every range
  saw that too; pyarrow sends no such header);
- errors name the URI (store.store_errors: missing, refused, unreachable).
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse

from curate.errors import InputError
from curate.io import retries

# storage_options this module maps onto pyarrow's client (any other key: s3fs reads the object)
OPTIONS = {"endpoint_url", "key", "secret", "token", "anon", "client_kwargs", "skip_instance_cache"}
CLIENT_KWARGS = {"endpoint_url", "region_name"}
TIMEOUT_S = 60  # seconds to connect, and without a byte of an answer, before a try fails


def client(uri: str, options: dict | None) -> tuple[Any, str] | None:
    """pyarrow's S3 client for `uri` with `options` (input.storage_options) and the object's path
    in it (bucket/key), or None where the options hold what it cannot be told (s3fs reads then)."""
    if uri.split("://", 1)[0].lower() not in ("s3", "s3a"):
        return None
    given = {k: v for k, v in (options or {}).items() if k != retries.OPTION}
    import fsspec.config  # FSSPEC_S3_* variables and fsspec's config files: defaults the options override

    given = {**fsspec.config.conf.get("s3", {}), **given}
    inner = given.get("client_kwargs") or {}
    if set(given) - OPTIONS or not isinstance(inner, dict) or set(inner) - CLIENT_KWARGS:
        return None
    endpoint = (
        given.get("endpoint_url")
        or inner.get("endpoint_url")
        or os.environ.get("AWS_ENDPOINT_URL_S3")
        or os.environ.get("AWS_ENDPOINT_URL")
    )
    region = inner.get("region_name")
    if not endpoint and not region:
        return None  # AWS itself, the bucket's region unknown: s3fs follows the redirect to it
    path = uri.split("://", 1)[1]
    try:
        fs = _client(
            endpoint or "",
            region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            given.get("key"),
            given.get("secret"),
            given.get("token"),
            bool(given.get("anon")),
        )
    except ImportError:  # a pyarrow built without S3
        return None
    return fs, path


@lru_cache(maxsize=None)
def _client(endpoint: str, region: str, key: str | None, secret: str | None, token: str | None, anon: bool):
    """One client per set of options in a process (made once: it starts the AWS SDK)."""
    from pyarrow import fs as pafs

    kwargs = {
        "region": region,
        "anonymous": anon,
        # one attempt: curate's policy retries and counts (retries.py)
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=1),
        # botocore's waits (s3fs's): the SDK's own 3 s without a byte failed every try of a
        # footer against a store slowed by a loaded machine
        "connect_timeout": TIMEOUT_S,
        "request_timeout": TIMEOUT_S,
    }
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs.update(endpoint_override=parsed.netloc + parsed.path.rstrip("/"), scheme=parsed.scheme or "https")
    if key or secret:
        kwargs.update(access_key=key, secret_key=secret, session_token=token)
    return pafs.S3FileSystem(**kwargs)


def _etag(value) -> str:
    value = value.decode() if isinstance(value, bytes) else str(value)
    return value.strip('"')


def _head(fs, path: str, uri: str, etag: str | None, policy: retries.Policy):
    """The object opened (a HEAD request), checked against the ETag it was listed with."""
    handle = retries.call(policy, lambda: fs.open_input_file(path))
    now = handle.metadata().get("ETag") or handle.metadata().get(b"ETag")
    if etag and now is not None and _etag(now) != _etag(etag):
        handle.close()
        raise InputError(
            f"{uri}: the object changed since the input was listed (ETag {etag}, now {_etag(now)}); "
            f"run again to read its new version"
        )
    return handle


def unchanged(uri: str, options: dict | None, etag: str | None) -> None:
    """Raise InputError if the object at `uri` no longer has the ETag `etag` (one HEAD request)."""
    found = client(uri, options)
    if found is not None and etag:
        _head(*found, uri, etag, retries.Policy.of(options)).close()


class NativeObject:
    """An object of S3 as a binary file: each `read` of a random-access one is one range request;
    a stream (`block` > 0) is read in ranges of `block` bytes, the next asked for on a thread while
    the reader works on the one before (two blocks held at most)."""

    def __init__(self, fs, path: str, uri: str, etag: str | None, policy: retries.Policy, block: int = 0):
        self._policy, self._block = policy, block
        self._file = _head(fs, path, uri, etag, policy)
        self._size = self._file.size()
        self._pos = 0
        self.closed = False
        self._held: tuple[int, memoryview] = (0, memoryview(b""))  # a stream's block: (offset, bytes)
        self._next: tuple[int, threading.Thread, list] | None = None

    def _range(self, at: int, n: int):
        return retries.call(self._policy, lambda: self._file.read_at(n, at))

    def _prefetch(self, at: int) -> None:
        box: list = []

        def fetch():
            try:
                box.append(self._range(at, self._block))
            except BaseException as e:  # raised by the reader that takes the block
                box.append(e)

        thread = threading.Thread(target=fetch, daemon=True)
        thread.start()
        self._next = (at, thread, box)

    def _block_at(self, at: int) -> memoryview:
        """The stream's block starting at `at`: the one fetched ahead if it starts there."""
        if self._next is not None and self._next[0] == at:
            _, thread, box = self._next
            thread.join()
            self._next = None
            if isinstance(box[0], BaseException):
                raise box[0]
            data = box[0]
        else:
            data = self._range(at, self._block)
        if at + len(data) < self._size:
            self._prefetch(at + len(data))
        return memoryview(data)

    def read(self, size: int = -1):
        """`size` bytes from the position, fewer only at the end (all that is left if negative),
        as Arrow's readers expect of a file: an Arrow buffer or a view of one, copied only where
        a stream's read spans two blocks."""
        left = self._size - self._pos
        size = left if size is None or size < 0 else min(size, left)
        if size <= 0:
            return b""
        if not self._block:
            data = self._range(self._pos, size)
            self._pos += len(data)
            return data
        parts = []
        while size > 0:
            start, held = self._held
            if not start <= self._pos < start + len(held):
                self._held = (self._pos, self._block_at(self._pos))
                start, held = self._held
            part = held[self._pos - start : self._pos - start + size]
            parts.append(part)
            self._pos += len(part)
            size -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = {0: 0, 1: self._pos, 2: self._size}[whence] + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        if self._next is not None:
            self._next[1].join()  # its block is dropped; a failure of it no longer matters
            self._next = None
        self._file.close()
        self.closed = True

    def __enter__(self) -> "NativeObject":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
