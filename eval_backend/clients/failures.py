"""Why a model call failed, in the store's vocabulary, and which failures are worth retrying.

A client raises `CallFailure`; the runner retries the retryable ones and stores
the last one as `Reply(status="failed", error_class=...)`. Every message that
may be stored or logged goes through `redact` first, so an API key echoed by a
provider (many echo part of a wrong key) never reaches the database or a log.
"""
from __future__ import annotations

import email.utils
import time

from ..store import FAILURE_CLASSES

# Worth another attempt: the same request may well succeed a moment later.
RETRYABLE = frozenset({"timeout", "http_5xx", "rate_limited", "connection"})
MAX_MESSAGE = 500
REDACTED = "***"


class CallFailure(Exception):
    """One failed attempt. `retry_after` is the server's Retry-After in seconds, if it sent one."""

    def __init__(self, error_class: str, message: str, retry_after: float | None = None):
        if error_class not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure class {error_class!r}")
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.error_class in RETRYABLE


def redact(text: str | None, secrets: list[str | None]) -> str | None:
    """Remove every secret from `text`, and the 8-char head and tail a provider may echo of a long one."""
    if text is None:
        return None
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, REDACTED)
        if len(secret) >= 16:  # "Incorrect API key provided: sk-abcde*****uvwxyz12" style echoes
            text = text.replace(secret[:8], REDACTED).replace(secret[-8:], REDACTED)
    return text


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def parse_retry_after(headers, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or HTTP date), or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def status_class(status: int) -> str:
    if status == 429:
        return "rate_limited"
    return "http_5xx" if status >= 500 else "http_4xx"
