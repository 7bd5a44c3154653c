"""The Hugging Face Hub's API as curate/io/hub.py calls it: the client, the token (never written
anywhere: messages are scrubbed of it), and each call tried again on a rate limit or
unavailability (429, 503, ...), waiting what the Hub says (Retry-After), a counted number of
times; every other error a CurateError that names what was asked."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from curate.errors import CurateError

if TYPE_CHECKING:
    from curate.io.hub import Target

RETRY_STATUS = (408, 429, 500, 502, 503, 504)
RETRY_TEXT = (
    "Too Many Requests",
    "Service Unavailable",
    "rate limit",
    "maximum queue size reached",
    "maximum time in concurrency queue reached",
    "lfs-verify",
)
ATTEMPTS = int(os.environ.get("CURATE_HUB_ATTEMPTS", "6"))  # tries of one Hub call, the first included
MAX_WAIT = 60.0  # seconds: the longest wait between two tries, whatever the Hub asks


def default_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_api(target: Target):
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise CurateError("an hf:// output needs huggingface_hub: pip install 'curate[hub]'") from None
    return HfApi(endpoint=target.endpoint or default_endpoint())


def hub_token(output) -> str:
    """output.storage_options.token (a ${VAR} in the recipe), else HF_TOKEN, else the login's."""
    from huggingface_hub import get_token

    token = output.storage_options.get("token") or get_token()
    if not token:
        raise CurateError(
            "publishing to the Hugging Face Hub needs a token with write access: set HF_TOKEN, or "
            "run `hf auth login` (or give output.storage_options.token: ${VAR})"
        )
    return str(token)


def scrub(text: str, token: str | None) -> str:
    return text.replace(token, "<token>") if token else text


def _status(error: Exception) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _wait(error: Exception, attempt: int) -> float:
    """How long to wait before trying again: what the Hub said (Retry-After, RateLimit's t=),
    else 1, 2, 4... seconds."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    for value in (headers.get("Retry-After"), *re.findall(r"t=(\d+)", headers.get("RateLimit", ""))):
        try:
            if value is not None:
                return min(float(value), MAX_WAIT)
        except ValueError:
            pass
    return min(2.0**attempt, MAX_WAIT)


def _retryable(error: Exception) -> bool:
    if _status(error) in RETRY_STATUS:
        return True
    if type(error).__name__ in (
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
        "ConnectionError",
        "Timeout",
    ):
        return True
    return any(text in str(error) for text in RETRY_TEXT)


@dataclass
class Calls:
    """The Hub's calls of one publishing, each tried again on a rate limit or unavailability,
    counted; every other error a CurateError that names what was asked."""

    target: Target
    token: str
    status: Callable[[str], None]
    retries: dict[str, int] = field(default_factory=dict)

    def __call__(self, what: str, fn, *args, passthrough: tuple = (), **kwargs):
        """`fn(*args, **kwargs)`, tried again while the Hub is busy; errors of the types in
        `passthrough` are raised as they are (the caller's to read)."""
        for attempt in range(ATTEMPTS):
            try:
                return fn(*args, **kwargs)
            except passthrough:
                raise
            except Exception as e:  # noqa: BLE001 - the Hub's and the network's, as user errors
                if _retryable(e) and attempt + 1 < ATTEMPTS:
                    reason = str(_status(e) or type(e).__name__)
                    self.retries[reason] = self.retries.get(reason, 0) + 1
                    wait = _wait(e, attempt)
                    self.status(
                        f"the Hub answered {reason} to {what}; trying again in {wait:.0f}s "
                        f"({attempt + 1} of {ATTEMPTS - 1} retries)"
                    )
                    time.sleep(wait)
                    continue
                raise self.error(what, e, attempt + 1) from None
        raise AssertionError("unreachable")

    def error(self, what: str, e: Exception, tries: int = 1) -> CurateError:
        status = _status(e)
        repo = self.target.repo_id
        if status == 401:
            why = "the Hub refused the token (HF_TOKEN, else the `hf auth login` one): set a valid token"
        elif status == 403:
            why = f"the token may not write to {repo}: use a token with write access to its namespace"
        elif status == 412:
            why = (
                "the branch moved while publishing (someone else committed); --resume checks the repository "
                "again and publishes"
            )
        elif status == 429 or (status in RETRY_STATUS and tries >= ATTEMPTS):
            why = f"the Hub kept refusing ({status}, {tries} tries): try again later"
        else:
            from huggingface_hub.errors import HfHubHTTPError

            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            why = f"{first}" if isinstance(e, HfHubHTTPError) else f"{type(e).__name__}: {first}"
        return CurateError(scrub(f"publishing to {self.target.uri}: {what}: {why}", self.token))
