"""The remote screen: an OpenAI-compatible moderation endpoint, `POST {url}/v1/moderations` with
{"model", "input"} -> {"results": [{"flagged", "categories", "category_scores"}]}.

Every failure (timeout, connection, 4xx/5xx, redirect, malformed or oversized body) becomes a "not_screened"
result with only its failure class as the reason: the body is never echoed (it could carry the key, or the very
text being screened). Our rules (personal data, crisis phrasings) run too: the protocol has no personal-data
category, and a remote crisis reading is combined with ours.
"""
from __future__ import annotations

import json
import threading
import time
from urllib.parse import urlsplit

import httpx

from . import rules
from .core import Finding, ScreenResult, Thresholds, combine, not_screened
from .settings import ScreenSettings

MAX_BODY_BYTES = 256 * 1024      # a moderation answer for one text is a few hundred bytes

# The protocol's categories -> ours. Our threshold (EMPATHY_ARENA_SCREEN_THRESHOLD) applies to category_scores; the
# server's own booleans only add to the crisis reading. Self-harm intent is a crisis reading (help notice), not
# a flag by itself; categories we do not map (e.g. "illicit") are ignored.
CATEGORY_MAP = {
    "harassment": "abuse", "harassment/threatening": "abuse",
    "hate": "hate", "hate/threatening": "hate",
    "sexual": "sexual", "sexual/minors": "sexual",
    "self-harm": "self_harm", "self-harm/instructions": "self_harm",
    "violence": "violence", "violence/graphic": "violence",
}
CRISIS_CATEGORIES = ("self-harm", "self-harm/intent", "self-harm/instructions")
THREAT_CATEGORIES = ("harassment/threatening", "hate/threatening")   # also count as violence


class Failure(Exception):
    """A failure class from eval_backend.store.FAILURE_CLASSES."""


def screen_name(settings: ScreenSettings) -> str:
    host = urlsplit(settings.url or "").netloc or "unset"
    return f"remote:{settings.model}@{host}+{rules.VERSION}"


_clients: dict[float, httpx.Client] = {}
_clients_lock = threading.Lock()


def _client(timeout_s: float) -> httpx.Client:
    """One pooled client per timeout (httpx.Client is thread-safe): a screen reuses its connection instead of
    opening one per text."""
    with _clients_lock:
        client = _clients.get(timeout_s)
        if client is None:
            client = _clients[timeout_s] = httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False)
        return client


def _post(settings: ScreenSettings, text: str) -> dict:
    headers = {"content-type": "application/json"}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    deadline = time.monotonic() + settings.timeout_s
    try:
        with _client(settings.timeout_s).stream("POST", f"{settings.url}/v1/moderations", headers=headers,
                                                json={"model": settings.model, "input": text}) as response:
            status = response.status_code
            if status == 429:
                raise Failure("rate_limited")
            if 300 <= status < 400:
                raise Failure("redirect")
            if status >= 500:
                raise Failure("http_5xx")
            if status >= 400:
                raise Failure("http_4xx")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise Failure("too_large")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise Failure("too_large")
                if time.monotonic() > deadline:
                    raise Failure("timeout")
    except httpx.TimeoutException:
        raise Failure("timeout") from None
    except httpx.HTTPError:
        raise Failure("connection") from None
    try:
        return json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError):
        raise Failure("malformed_body") from None


def _findings(payload: dict) -> tuple[list[Finding], bool]:
    """Our findings from one answer, and whether the remote reads a crisis. Raises Failure on a malformed one."""
    try:
        result = payload["results"][0]
        scores = result["category_scores"]
        flags = result.get("categories") or {}
        if not isinstance(scores, dict) or not isinstance(flags, dict):
            raise TypeError
        clean = {str(k): float(v) for k, v in scores.items() if not isinstance(v, bool)}
    except (KeyError, IndexError, TypeError, ValueError):
        raise Failure("malformed_body") from None
    if any(not 0.0 <= v <= 1.0 for v in clean.values()) or not clean:
        raise Failure("malformed_body")
    findings = []
    for name, score in clean.items():
        ours = CATEGORY_MAP.get(name)
        if ours:
            findings.append(Finding(ours, score, "remote", name))
        if name in THREAT_CATEGORIES:
            findings.append(Finding("violence", score, "remote", name))
    crisis = any(clean.get(name, 0.0) >= 0.5 or flags.get(name) is True for name in CRISIS_CATEGORIES)
    return findings, crisis


def screen(text: str, settings: ScreenSettings) -> ScreenResult:
    name = screen_name(settings)
    try:
        findings, crisis = _findings(_post(settings, text))
    except Failure as failure:
        return not_screened(name, str(failure), settings.required)
    return combine(findings + rules.findings(text), Thresholds(default=settings.threshold), name, crisis_hint=crisis)
