"""The configured screen, behind an in-process cache.

The cache key is (screen name, sha256 of the text): a reply screened when it is stored is not screened again
when a release is built, and a change of screen (package upgrade, another endpoint) screens afresh.
"Not screened" answers are never cached, so the next call retries the remote.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from . import offline, remote, settings
from .core import ScreenResult

MAX_TEXT_CHARS = 20_000      # longer texts are screened on their first 20k characters plus their last 2k
CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, str], ScreenResult] = OrderedDict()
_lock = threading.Lock()


def screen_name() -> str:
    s = settings.load()
    return remote.screen_name(s) if s.url else offline.screen_name()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "\n" + text[-2000:]


def screen_text(text: str) -> ScreenResult:
    """Screen one text with the configured screen. Never raises for a screening failure: an unavailable screen
    gives status "not_screened" (flagged unless EMPATHY_ARENA_SCREEN_REQUIRED=0)."""
    if not isinstance(text, str):
        raise TypeError("screen_text takes a str")
    s = settings.load()
    name = remote.screen_name(s) if s.url else offline.screen_name()
    key = (name, f"{s.threshold}:{int(s.required)}:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest())
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    clipped = _clip(text)
    result = remote.screen(clipped, s) if s.url else offline.screen(clipped, s.threshold, s.required)
    if result.status == "screened":
        with _lock:
            _cache[key] = result
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return result


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def warm() -> None:
    """Load the offline classifier now (seconds: scikit-learn and the model), e.g. in a background thread at start-up,
    so the first reply screened does not pay for it. Does nothing when a remote screen is configured."""
    if not settings.load().url:
        offline.screen("a sentence to load the screen", 0.85)   # MIN_WORDS or more: the semantic layer loads too

