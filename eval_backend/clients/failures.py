"""Why a model call failed, in the store's vocabulary, and which failures are worth retrying.

A client raises `CallFailure`; the runner retries the retryable ones and stores
the last one as `Reply(status="failed", error_class=...)`. Every message that
may be stored or logged goes through `redact` first, so an API key echoed by a
provider (many echo part of a wrong key) never reaches the database or a log;
`redact` also finds the key base64-, hex- and percent-encoded (reply text too).

Classes: timeout (no complete reply within the call's wall-clock timeout), http_4xx, http_5xx,
rate_limited, malformed_body, bad_audio, connection (no HTTP status at all), too_large (the reply
exceeded a size cap: body bytes, audio seconds, text characters, or the job's stored bytes),
deadline (the job's deadline ended the request), redirect (a 3xx: redirects are never followed).

A failure's `message` never quotes the reply body; a body excerpt goes in `detail`, which the client
adds to the message only where the limits allow it (`ReplyLimits.show_body`: operator models, not
submitted endpoints).
"""
from __future__ import annotations

import base64
import email.utils
import time
import urllib.parse

from ..store import FAILURE_CLASSES

# Worth another attempt: the same request may well succeed a moment later.
RETRYABLE = frozenset({"timeout", "http_5xx", "rate_limited", "connection"})
MAX_MESSAGE = 500
REDACTED = "***"


class CallFailure(Exception):
    """One failed attempt. `retry_after` is the server's Retry-After in seconds, if it sent one."""

    def __init__(self, error_class: str, message: str, retry_after: float | None = None, detail: str = ""):
        if error_class not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure class {error_class!r}")
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message
        self.retry_after = retry_after
        self.detail = detail           # text taken from the reply body; shown only where allowed

    @property
    def retryable(self) -> bool:
        return self.error_class in RETRYABLE


def encoded_forms(secret: str) -> list[str]:
    """The spellings of `secret` an endpoint could echo without quoting it: percent-encoded, hex, and
    base64 (standard and URL-safe) at each of the three byte alignments it can have inside a longer
    encoded text (only the characters that depend on the secret alone, so any surrounding bytes match)."""
    raw = secret.encode()
    forms = {urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret), raw.hex(), raw.hex().upper()}
    for k, skip in ((0, 0), (1, 2), (2, 3)):
        enc = base64.b64encode(b"\0" * k + raw).decode()
        core = enc[skip:len(enc) - 4] if len(enc) - 4 > skip else ""
        if len(core) >= 8:
            forms.update({core, core.replace("+", "-").replace("/", "_")})
    forms.discard(secret)
    return sorted((f for f in forms if len(f) >= 8), key=len, reverse=True)


def redact(text: str | None, secrets: list[str | None]) -> str | None:
    """Remove every secret from `text` (also encoded, see `encoded_forms`), and the 8-char head and tail
    a provider may echo of a long one."""
    if text is None:
        return None
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, REDACTED)
        if len(secret) >= 8:
            for form in encoded_forms(secret):
                text = text.replace(form, REDACTED)
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
