"""One retry policy for a store's requests: throttling (503 SlowDown, 429), server errors, connection
resets and timeouts are tried again after an exponential backoff with full jitter (a random wait up
to base * 2^n, capped), a bounded number of times, and every retry is counted by its reason.

Three places retry, each a failure the others cannot see:
- a request to S3 through s3fs: botocore's own retries are switched off and this policy answers
  its `needs-retry` event instead (listing pages, footers, ranges: each request on its own);
- a read whose response broke off mid-body (or a store without such a hook: https://, gs://, ...):
  `RetryingFile` reads the same range again;
- a request of pyarrow's own S3 client (native_s3.py: the HEAD that opens an object, each range),
  its own retries off, tried again whole; its failure's reason read from its message.

Counts go to the innermost `tally()` open in the process (a task's, in a worker), else to the
process's own count that `take_untallied()` hands to the run (listing, footers, planning). They are
process-wide, not per thread: fsspec does its I/O on a thread of its own. (Where a stage's tasks run
on threads of the run process, a stage with no operator, a retry goes to the tally opened last:
which of the tasks counts it may be the other's; the run's total is the same.) The requests to an
output store (uploads, the lease) are the run process's alone and are counted apart, by
`count_output`, whatever tally is open (a task running in that process reads the input meanwhile),
until `take_output()`.
"""

from __future__ import annotations

import http.client
import random
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from curate.errors import InputError
from curate.io import exceptions

OPTION = "retries"  # the storage_options key of this policy (taken out before fsspec sees the options)
RETRY_STATUS = {408, 429, 500, 502, 503, 504}
# S3's error codes for "slow down" and "try again", whatever the status says
RETRY_CODES = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
    "RequestLimitExceeded",
    "TooManyRequests",
}


@dataclass(frozen=True)
class Policy:
    attempts: int = 8  # tries of one request or read in all, the first included
    backoff_s: float = 0.2  # the wait before the n-th retry is random up to backoff_s * 2^(n-1) ...
    max_backoff_s: float = 20.0  # ... and at most this

    @classmethod
    def of(cls, options: dict | None, setting: str = "input.storage_options") -> "Policy":
        """The policy `storage_options.retries` sets ({attempts, backoff_s, max_backoff_s}), else the
        default; `setting` names the options in messages."""
        given = (options or {}).get(OPTION)
        if given is None:
            return cls()
        if not isinstance(given, dict) or set(given) - {"attempts", "backoff_s", "max_backoff_s"}:
            raise InputError(
                f"{setting}.{OPTION}: expected a mapping of attempts, backoff_s and max_backoff_s (got {given!r})"
            )
        try:
            values: dict[str, Any] = {k: (int if k == "attempts" else float)(v) for k, v in given.items()}
            policy = cls(**values)
        except (TypeError, ValueError) as e:
            raise InputError(f"{setting}.{OPTION}: {e}") from None
        if policy.attempts < 1 or policy.backoff_s < 0 or policy.max_backoff_s < 0:
            raise InputError(
                f"{setting}.{OPTION}: attempts must be at least 1 and the waits not negative (got {given!r})"
            )
        return policy

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1, 2, ...): full jitter, so that workers
        throttled together do not come back together."""
        return random.uniform(0.0, min(self.max_backoff_s, self.backoff_s * 2 ** (retry - 1)))


_lock = threading.Lock()
_tallies: list[dict[str, int]] = [{}]  # [the process's own, then each tally() open, innermost last]


def count(reason: str) -> None:
    with _lock:
        top = _tallies[-1]
        top[reason] = top.get(reason, 0) + 1


@contextmanager
def tally() -> Iterator[dict[str, int]]:
    """The retries made while open, by reason (a task's), counted here and nowhere else."""
    mine: dict[str, int] = {}
    with _lock:
        _tallies.append(mine)
    try:
        yield mine
    finally:
        with _lock:  # this one itself: another open tally, or the process's own, may be equal to it
            del _tallies[next(i for i, t in enumerate(_tallies) if t is mine)]


_output: dict[str, int] = {}  # the output store's retries, by reason, since the last take_output()


def count_output(reason: str) -> None:
    with _lock:
        _output[reason] = _output.get(reason, 0) + 1


def take_output() -> dict[str, int]:
    """The output store's retries since the last call, by reason; counted from zero again."""
    with _lock:
        taken = dict(_output)
        _output.clear()
    return taken


def take_untallied() -> dict[str, int]:
    """The retries this process made outside any tally since the last call (a run's listing and
    footers), by reason; counted from zero again."""
    with _lock:
        taken = dict(_tallies[0])
        _tallies[0].clear()
    return taken


def _transient() -> tuple[type[BaseException], ...]:
    """What a broken connection, a cut body or a timeout raises, by the libraries under fsspec."""
    return exceptions.installed(
        [ConnectionError, TimeoutError, http.client.IncompleteRead],
        (
            ("aiohttp", ("ClientPayloadError", "ClientConnectionError")),
            ("fsspec.exceptions", ("FSTimeoutError",)),
            ("botocore.exceptions", ("ConnectionError", "HTTPClientError", "IncompleteReadError")),
        ),
    )


def failure(error: BaseException) -> str | None:
    """Why `error` is worth another try (its reason), or None: a refused credential, a missing
    object or a damaged file fails the same way every time."""
    status = getattr(error, "status", None)  # an HTTP store's answer (aiohttp.ClientResponseError)
    if isinstance(status, int):
        return f"{status}" if status in RETRY_STATUS else None
    if type(error) is OSError and "AWS Error " in str(error):  # pyarrow's own S3 client (native_s3.py)
        return _aws_failure(str(error))
    return type(error).__name__ if isinstance(error, _transient()) else None


# pyarrow's S3 client says what failed only in its message: "AWS Error SLOW_DOWN during GetObject
# operation: ...", "AWS Error UNKNOWN (HTTP status 503) during HeadObject operation: ..." (a HEAD
# answer has no body to name its error), "AWS Error NETWORK_CONNECTION during ...: curlCode: 18, ..."
_AWS_ERROR = re.compile(r"AWS Error (\w+)(?: \(HTTP status (\d+)\))?")
# the AWS SDK's names of the errors retried (with the reason counted, as an S3 answer's is by hook_s3)
AWS_RETRIED = {
    "SLOW_DOWN": "503 SlowDown",
    "THROTTLING": "Throttling",
    "SERVICE_UNAVAILABLE": "503",
    "INTERNAL_FAILURE": "500",
    "REQUEST_TIMEOUT": "RequestTimeout",
    "NETWORK_CONNECTION": "NETWORK_CONNECTION",
}


def _aws_failure(message: str) -> str | None:
    found = _AWS_ERROR.search(message)
    if found is None:
        return None
    name, status = found.group(1), found.group(2)
    if name in AWS_RETRIED:
        return AWS_RETRIED[name]
    return status if status and int(status) in RETRY_STATUS else None


T = TypeVar("T")


def call(policy: Policy, request: Callable[[], T], counted: Callable[[str], None] = count) -> T:
    """`request()`, tried again by `policy` while it fails as a store fails for a while, each
    retry `counted` by its reason."""
    attempt = 1
    while True:
        try:
            return request()
        except Exception as e:
            reason = failure(e)
            if reason is None or attempt >= policy.attempts:
                raise
        counted(reason)
        time.sleep(policy.delay(attempt))
        attempt += 1


class RetryingFile:
    """A file of a store whose `read` is tried again, from where it started, when the response
    breaks off; everything else is the file's own."""

    def __init__(self, handle, policy: Policy):
        self._handle, self._policy = handle, policy

    def read(self, size: int = -1) -> bytes:
        start = self._handle.tell()

        def read_from_start() -> bytes:  # a try again starts where the broken read began
            self._handle.seek(start)
            return self._handle.read(size)

        return call(self._policy, read_from_start)

    def readinto(self, buffer) -> int:
        """A read into `buffer`, retried as `read` is (ISA-L's gzip reader reads so)."""
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self) -> "RetryingFile":
        return self

    def __exit__(self, *exc) -> None:
        self._handle.close()


def s3_options(options: dict, setting: str = "input.storage_options") -> dict:
    """`options` (the recipe's `setting`) for s3fs with botocore's own retries off (this policy
    answers its needs-retry event instead: see `hook_s3`)."""
    config = dict(options.get("config_kwargs") or {})
    if "retries" in config:
        raise InputError(
            f"{setting}.config_kwargs.retries: curate retries the store's requests "
            f"itself (and counts them); set {setting}.{OPTION}: {{attempts: N}} instead"
        )
    config["retries"] = {"mode": "standard", "total_max_attempts": 1}
    return {**options, "config_kwargs": config}


def hook_s3(fs, policy: Policy, counted=count) -> None:
    """Answer the needs-retry event of `fs`'s S3 client by `policy` (botocore's own handler, with
    one attempt allowed, says no first), each retry `counted`, and turn off s3fs's retries of its
    calls, which would try again unseen (a body that breaks off is read again by RetryingFile
    instead)."""
    fs.retries = 1

    def needs_retry(attempts: int, response=None, caught_exception=None, **_) -> float | None:
        reason = _s3_failure(response, caught_exception)
        if reason is None or attempts >= policy.attempts:
            return None
        counted(reason)
        return policy.delay(attempts)

    events = fs.s3.meta.events
    events.unregister("needs-retry.s3", unique_id="curate-retries")  # the latest policy for this client
    events.register_last("needs-retry.s3", needs_retry, unique_id="curate-retries")


def _s3_failure(response, caught_exception) -> str | None:
    if caught_exception is not None:
        return failure(caught_exception)
    if response is None:
        return None
    http_response, parsed = response
    status, code = http_response.status_code, (parsed or {}).get("Error", {}).get("Code", "")
    if status in RETRY_STATUS or code in RETRY_CODES:
        return f"{status} {code}" if code and code != str(status) else f"{status}"  # a HEAD answer has no code
    return None
