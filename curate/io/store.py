"""Inputs at a URI: s3://, gs://, az:// and abfs://, hf://datasets/..., http(s)://, file://,
memory:// and any other fsspec filesystem.

A URI stays a string everywhere (a Source's path); only the reader opens it, here (an s3:// object
by pyarrow's own S3 client where the options allow, native_s3.py; else through fsspec):
- Parquet through a file handle that reads what pyarrow asks for and nothing more (no read-ahead
  cache): the footer, then the column chunks of the row groups the task reads (those of one row
  group coalesced into one range request), never the whole object;
- JSONL, CSV and Arrow streams through a sequential stream of CHUNK-sized range requests,
  decompressed as they come (gzip, zstd, bz2 from the name), never staged to disk.

Credentials come from each filesystem's own standard places (AWS_* variables and profiles,
AWS_ENDPOINT_URL for an S3-compatible endpoint, GOOGLE_APPLICATION_CREDENTIALS, HF_TOKEN, ...),
plus the recipe's `input.storage_options`. A store that cannot be reached, a missing bucket or a
refused credential is an InputError naming the URI (exit 2, before any worker starts). Throttling,
resets and timeouts are retried by one policy (retries.py: `storage_options.retries`), counted.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

import pyarrow as pa

from curate.errors import InputError
from curate.io import exceptions, native_s3, retries
from curate.io.gunzip import gunzip

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Per filesystem, what changes when an object's bytes do (in this order in a fingerprint): S3's
# ETag and VersionId, GCS's generation, Azure's etag and version_id, the Hub's blob or LFS id,
# an HTTP server's ETag or Last-Modified, a local or in-memory file's mtime / creation time.
VERSION_KEYS = ("ETag", "VersionId", "generation", "etag", "version_id", "blob_id", "Last-Modified", "mtime", "created")
STREAM_BLOCK = 8 << 20  # bytes per request of a sequential read
PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "hf": "huggingface_hub",
    "http": "aiohttp",
    "https": "aiohttp",
}


def is_uri(spec: str) -> bool:
    """Whether `spec` names its filesystem (`scheme://...`); a plain path is read as a local file."""
    return bool(_SCHEME.match(spec))


def filesystem(uri: str, options: dict | None = None, side: str = "input"):
    """The fsspec filesystem of `uri` (with `options` from the recipe's `side`.storage_options) and
    the path in it; an S3 client's requests retried by the policy of `options` (retries.py). The
    output's filesystem is an instance of its own, so that its retries are counted as the
    output's even where the input is on the same store with the same options."""
    try:
        import fsspec
    except ImportError:
        raise InputError(f"{uri}: reading a URI needs fsspec: pip install 'curate[remote]'") from None
    setting = f"{side}.storage_options"
    policy = retries.Policy.of(options, setting)
    options = {k: v for k, v in (options or {}).items() if k != retries.OPTION}
    if side == "output":
        options["skip_instance_cache"] = True
    s3 = uri.split("://", 1)[0].lower() in ("s3", "s3a")
    try:
        fs, path = fsspec.core.url_to_fs(uri, **(retries.s3_options(options, setting) if s3 else options))
    except ImportError as e:
        package = PACKAGES.get(uri.split("://", 1)[0].lower(), "the filesystem's package")
        raise InputError(f"{uri}: reading it needs {package} (pip install {package}): {e}") from None
    except (ValueError, TypeError) as e:  # an unknown scheme, an option the filesystem does not take
        raise InputError(f"{uri}: cannot open this URI (check {setting}): {e}") from None
    if s3:
        with store_errors(uri, "cannot connect"):  # the client is made here: a bad profile says so here
            retries.hook_s3(fs, policy, retries.count_output if side == "output" else retries.count)
    return fs, path


def store_exceptions() -> tuple[type[BaseException], ...]:
    """What the filesystems raise for an unreachable endpoint, a refused credential or a failed
    request, where they do not turn it into an OSError themselves."""
    return exceptions.installed(
        [OSError, TimeoutError, ConnectionError],
        (
            ("botocore.exceptions", ("BotoCoreError", "ClientError")),
            ("aiohttp", ("ClientError",)),
            ("huggingface_hub.errors", ("HfHubHTTPError",)),
        ),
    )


@contextmanager
def store_errors(uri: str, doing: str = "cannot list") -> Iterator[None]:
    """Failures of the store behind `uri` as an InputError naming it and saying what it means."""
    try:
        yield
    except InputError:
        raise
    except FileNotFoundError as e:
        raise InputError(f"input not found: {uri} ({e or 'no such object, prefix or bucket'})") from None
    except PermissionError as e:
        raise InputError(
            f"{uri}: access refused ({e}); check the credentials (environment variables, "
            f"profile) or input.storage_options"
        ) from None
    except store_exceptions() as e:
        raise InputError(f"{uri}: {doing}: {type(e).__name__}: {e}") from None


def version(info: dict) -> str:
    """What identifies this version of an object, from the filesystem's `info` (see VERSION_KEYS)."""
    return ";".join(f"{k}={info[k]}" for k in VERSION_KEYS if info.get(k) not in (None, ""))


# Stores whose files can be opened on what the listing gave (s3fs): without it, each open asks
# the store (a HEAD request) for the object's size and ETag; with it, every range read is still
# checked against the listed ETag, so an object changed since it was listed is an error.
OPENS_LISTED = ("s3", "s3a")


def _open(uri: str, options: dict | None, size: int | None, version: str, block: int = 0, **kwargs):
    """`uri` opened for reading: by pyarrow's S3 client where the options allow (native_s3.py),
    else through fsspec, each read retried (RetryingFile)."""
    native = native_s3.client(uri, options)
    if native is not None:
        with store_errors(uri, "cannot open"):
            return native_s3.NativeObject(
                *native, uri, _version_fields(version).get("ETag"), retries.Policy.of(options), block
            )
    fs, path = filesystem(uri, options)
    listed = size is not None and uri.split("://", 1)[0].lower() in OPENS_LISTED
    with store_errors(uri, "cannot open"):
        handle = fs.open(path, "rb", size=size, **kwargs) if listed else fs.open(path, "rb", **kwargs)
    if listed:  # what s3fs sets from its HEAD: the details, and the ETag each range read must match
        fields = _version_fields(version)
        handle.details = {"name": path, "size": size, **fields}
        if "ETag" in fields:
            handle.read_kw = {**handle.read_kw, "IfMatch": fields["ETag"]}
    return retries.RetryingFile(handle, retries.Policy.of(options))


def unchanged(uri: str, options: dict | None, version: str) -> None:
    """After an object's last row was read: an InputError if it is no longer the version it was
    listed as, where its reads could not say so themselves (pyarrow's client: native_s3.py)."""
    with store_errors(uri, "cannot check"):
        native_s3.unchanged(uri, options, _version_fields(version).get("ETag"))


def _version_fields(version: str) -> dict:
    """The fields `version` was made of (ETag, VersionId, ...)."""
    return dict(part.split("=", 1) for part in version.split(";") if "=" in part)


def open_random(uri: str, options: dict | None = None, size: int | None = None, version: str = ""):
    """`uri` as a seekable file reading exactly the ranges asked for (Parquet: footer, chunks);
    `size` and `version`: the object's, as listed."""
    return _open(uri, options, size, version, cache_type="none")


def open_stream(
    uri: str,
    options: dict | None = None,
    compression: str | None = None,
    size: int | None = None,
    version: str = "",
    meter=None,
    block: int | None = None,
) -> pa.NativeFile:
    """`uri` as a stream read front to back in requests of `block` bytes (STREAM_BLOCK by
    default), decompressed on the way; `size` and `version`: the object's, as listed; `meter` (a
    ReadMeter) follows the position in the object."""
    block = block or STREAM_BLOCK
    handle = _open(uri, options, size, version, block, block_size=block, cache_type="readahead")
    if meter is not None:
        meter.follow(handle)
    if compression == "gzip":
        return gunzip(handle)
    return pa.input_stream(pa.PythonFile(handle, mode="r"), compression=compression)


REQUESTS_IN_FLIGHT = 32  # footers and headers read at once from a store (each one waits on a round trip)


def map_objects(fn, items: list, remote: bool) -> Iterator:
    """`fn` over `items`, results in order: from a store many at once (a request each, mostly
    waiting), else one by one here. An error surfaces at its item, after the ones before it."""
    if not remote or len(items) < 2:
        return map(fn, items)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(REQUESTS_IN_FLIGHT)
    results = pool.map(fn, items)
    pool.shutdown(wait=False)  # `results` still yields every result; the threads end when done
    return results


# The most of a file an upload holds in memory at once. s3fs sends a file under two parts of its
# chunk size (50 MB by default) in one PUT read whole, and each part of a larger one read whole:
# a worker putting its work files to the store held up to 100 MB more than one writing them to
# local disk, beside its fit's own memory.
UPLOAD_PART = 8 << 20
MAX_PARTS = 10_000  # S3's most parts in one multipart upload


def protocols(fs) -> tuple[str, ...]:
    """The protocol names of an fsspec filesystem (one name or several)."""
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def upload_options(fs, sizes: list[int]) -> dict:
    """The options of `fs.put` / `fs.put_file` for files of `sizes` bytes that bound the memory of
    their upload: on S3, parts of UPLOAD_PART (larger where a file would need more than MAX_PARTS);
    nothing for other filesystems, which read a file to upload in blocks of their own."""
    if "s3" not in protocols(fs):
        return {}
    return {"chunksize": max(UPLOAD_PART, -(-max(sizes, default=0) // MAX_PARTS))}
