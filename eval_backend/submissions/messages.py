"""What a submitter is told when the Check/Submit preflight's test call fails: a field and a plain sentence.

The client (clients/openai_chat.py) raises `CallFailure(error_class, message)`; its message is written for the
operator's logs and can carry a library's words (an aiohttp class name, "Connect call failed", an OpenSSL
reason). A submitter should instead learn which form field to fix, in words. `preflight_error` maps a failure
to `(field, sentence)`:

- the endpoint could not be reached (DNS, refused, TLS, reset, a non-HTTP answer) or did not answer in time:
  under `base_url`, the field it concerns, in a sentence that says so plainly;
- the endpoint refused the key (HTTP 401/403): under `api_key`; not found (HTTP 404): under `base_url`;
- anything about the reply itself (other HTTP errors, a body that is not a chat completion, audio that does
  not decode, a reply over a size cap, a redirect): under `endpoint`, the form's general message, tagged
  with the failure class in parentheses (the vocabulary of the jobs table).

Sentences are composed here only: from the raw message at most a status code and the numbers of a size limit
are taken (matched by pattern, never copied as a whole), so no reply body, secret or library text reaches the
page. `connection_cause` reads the cause from the client's message; tests/test_submission_validation.py drives
each cause through the real client, so a change of that message shows up there.
"""
from __future__ import annotations

import re

ENDPOINT_FIELD = "base_url"     # the form's "Endpoint base URL" box
GENERAL = "endpoint"            # a preflight outcome that belongs to no single field

_REACH = "The endpoint at this base URL could not be reached: "
CONNECTION_SENTENCES = {
    "dns": _REACH + "its host name does not resolve. Check the spelling of the host.",
    "refused": _REACH + "nothing accepts connections at that host and port. Check the port, and that the "
                        "server is running and reachable from the internet.",
    "tls": _REACH + "the secure (https) connection failed: the certificate is not valid for this host, or the "
                    "server does not speak https on that port (use http:// if it serves plain HTTP).",
    "unreachable": _REACH + "there is no network route to its host.",
    "policy": "This endpoint cannot be used: its host resolves to an address that is not allowed "
              "(internal or reserved networks are never contacted).",
    "protocol": _REACH + "the connection was closed, or the server did not answer in HTTP. Check the "
                         "scheme (http or https) and the port.",
}
# (cause, patterns in the client's message), first match wins; "protocol" when none matches
_CAUSES = (
    ("policy", ("address policy",)),
    ("dns", ("DNSError", "Name or service not known", "nodename nor servname", "name resolution",
             "No address associated")),
    ("tls", ("SSL", "Certificate", "certificate", "TLS")),
    ("unreachable", ("Network is unreachable", "No route to host", "Host is unreachable")),
    ("refused", ("Connect call failed", "Connection refused", "ConnectionRefused")),
)


def connection_cause(message: str) -> str:
    """dns, tls, unreachable, refused, policy or protocol, from a `connection` failure's message."""
    for cause, needles in _CAUSES:
        if any(n in message for n in needles):
            return cause
    return "protocol"


def _status(message: str) -> str | None:
    m = re.search(r"\bHTTP (\d{3})\b", message)
    return m.group(1) if m else None


def _limit(message: str) -> str:
    """ "the limit of 8,388,608 bytes" from a too_large message: digits and a unit word, nothing else."""
    m = re.search(r"limit of ([\d,.]+(?: (?:bytes|s|characters))?)", message)
    return f" (the limit is {m.group(1)})" if m else ""


def _size(message: str) -> str:
    m = re.search(r"\(([\d,]+) bytes\)", message)
    return f" ({m.group(1)} bytes)" if m else ""


def preflight_error(error_class: str, message: str, timeout_s: float) -> tuple[str, str]:
    """(form field, sentence) for a failed test call; `timeout_s` is one test call's limit."""
    message = message or ""
    if error_class == "connection":
        return ENDPOINT_FIELD, CONNECTION_SENTENCES[connection_cause(message)]
    if error_class == "timeout":
        return ENDPOINT_FIELD, (f"The endpoint at this base URL did not send a complete reply within {timeout_s:g} s "
                                "(the limit of one test call). It may be down or too slow.")
    status = _status(message)
    tag = f"The test call failed ({error_class}): "
    if error_class == "http_4xx" and status in ("401", "403"):
        return "api_key", (f"The endpoint refused the test call as not authorised (HTTP {status}). Check the API "
                           "key, or whether this endpoint needs one.")
    if error_class == "http_4xx" and status == "404":
        return ENDPOINT_FIELD, ("The endpoint answered HTTP 404 (not found) to …/chat/completions. Check the base "
                                "URL (usually ending in /v1) and the model id.")
    if error_class == "http_4xx":
        return GENERAL, (tag + f"the endpoint rejected the request with HTTP {status or '4xx'}. Check the model id, "
                               "and that the model takes audio input.")
    if error_class == "rate_limited":
        return GENERAL, tag + "the endpoint is limiting the request rate (HTTP 429). Try again later."
    if error_class == "http_5xx":
        what = f"HTTP {status}, a server error" if status else "an error in its reply stream"
        return GENERAL, tag + f"the endpoint answered with {what}. Try again once it works."
    if error_class == "redirect":
        return GENERAL, (tag + f"the endpoint redirects (HTTP {status or '3xx'}); redirects are not followed, so "
                               "give the final URL.")
    if error_class == "malformed_body":
        return GENERAL, (tag + f"the endpoint's reply{_size(message)} is not a chat-completions reply "
                               "(JSON with choices[0].message).")
    if error_class == "bad_audio":
        return GENERAL, (tag + "the endpoint's audio could not be read (expected base64 WAV, or 16-bit PCM "
                               "when streaming).")
    if error_class == "too_large":
        return GENERAL, tag + f"the endpoint's reply is larger than this Space accepts{_limit(message)}."
    if error_class == "deadline":
        return GENERAL, tag + "the test ran out of time."
    return GENERAL, tag + "the endpoint's reply could not be used."


def wrong_audio_sentence() -> str:
    """The reply has audio that does not decode (checked after the client accepted it)."""
    return "The endpoint's audio does not decode as WAV; the arena cannot play it."
