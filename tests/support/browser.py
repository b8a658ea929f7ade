"""Debian's chromium driven by Playwright: the one launch the browser tests, the benchmarks and scripts/screenshots.py
share (never `playwright install`).

The binary is Debian's headless shell of chromium (package chromium-headless-shell, packages-test.txt): the same
source and version as /usr/bin/chromium (Blink, V8, the media stack), built without the desktop browser's own
layers; it is what Playwright itself runs for headless chromium. A fresh page of the Space costs ~2.65 CPU-s there
against ~3.9 in the full browser (docs/benchmarks.md, "Test suite"), and the suite opens ~170 a pass.
EMPATHY_ARENA_TEST_CHROMIUM names another binary for a run (e.g. /usr/bin/chromium, the full browser).

In a test module, take the `chromium` fixture (tests/conftest.py): one browser for the module, closed after it;
open a page per use with `new_page(chromium)` (a fresh context: its own cookies, viewport and device). A module that
needs more flags (a fake microphone) overrides the module-scoped `chromium_args` fixture.

Why per module and not per session: while Playwright's sync API is started, the main thread counts as running an
asyncio loop, so `asyncio.run()` in any later test would fail. Launching chromium costs ~1 s of CPU; a module holds
one browser for all its tests.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

CHROMIUM = os.environ.get("EMPATHY_ARENA_TEST_CHROMIUM", "/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 # tests play clips from script, without a user gesture
                 "--autoplay-policy=no-user-gesture-required")


@contextmanager
def launch_chromium(extra_args: tuple[str, ...] | list[str] = ()) -> Iterator:
    """A started Playwright driving a fresh chromium (CHROMIUM_ARGS + `extra_args`); both stopped on exit."""
    from playwright.sync_api import sync_playwright   # imported here: the app's own modules never need it

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, timeout_ms: float = 60_000, **context):
    """A page in a new context of `browser` (keywords go to `new_context`: viewport, has_touch, accept_downloads...);
    every wait on it times out after `timeout_ms`. Closing the page's context is the caller's choice."""
    page = browser.new_context(**context).new_page()
    page.set_default_timeout(timeout_ms)
    return page


# One player's state, as the page sees it: what a wait for playable audio reports when it times out.
PLAYER_STATE_JS = """(sel) => [...document.querySelectorAll(sel)].map(a => {
    const url = a.currentSrc || a.src;
    const loads = performance.getEntriesByType('resource').filter(e => url && e.name === url);
    return {src: a.getAttribute('src'), currentSrc: a.currentSrc, preload: a.preload, duration: a.duration,
            readyState: a.readyState, networkState: a.networkState, error: a.error && a.error.code,
            visible: a.checkVisibility(), loads: loads.map(e => ({start_ms: Math.round(e.startTime),
                end_ms: Math.round(e.responseEnd), status: e.responseStatus}))};
})"""
PLAYABLE_JS = "(sel) => { const a = document.querySelector(sel); return !!(a && a.currentSrc && a.duration > 0); }"


def wait_for_playable(page, selector: str, timeout_ms: float | None = None) -> None:
    """Wait until the first player matching `selector` has a source and knows its duration. On a timeout, fail
    with what the page showed: the state of every player on the page, the awaited one among them (source,
    readyState, networkState, media error, the fetches of its URL), not only "timed out"."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(PLAYABLE_JS, arg=selector, **({"timeout": timeout_ms} if timeout_ms else {}))
    except PlaywrightTimeout as e:
        players = page.evaluate(PLAYER_STATE_JS, "audio")
        raise AssertionError(f"no playable audio at {selector!r} ({e}); the page's players: {players}") from None


# The arena's listening state, as the page sees it: what a wait for the vote to unlock reports when it times out.
LISTEN_STATE_JS = """() => {
    const meter = document.querySelector('.arena-meter');
    const vote = document.getElementById('arena-vote-a');
    return {meter: meter ? {...meter.dataset} : null,
            status: (document.querySelector('.arena-meter-status') || {}).textContent || null,
            listen: window.__arenaListen || null, vote_disabled: vote ? vote.disabled : null,
            message: (document.getElementById('arena-message') || {}).textContent || null,
            players: [...document.querySelectorAll('audio')].map(a => ({
                id: (a.closest('[id]') || {}).id || null, paused: a.paused, ended: a.ended,
                time: a.currentTime, duration: a.duration, rate: a.playbackRate, readyState: a.readyState,
                error: a.error && a.error.code,
                played: Array.from({length: a.played.length}, (_, i) => [a.played.start(i), a.played.end(i)])}))};
}"""


def wait_for_vote(page, timeout_ms: float | None = None, button: str = "a", polling=None) -> None:
    """Wait until the arena's vote button `button` is enabled (the meter counted every clip heard and the server
    unlocked the vote). On a timeout, fail with what the page showed: the meter, its countdown, the page's
    listening state (the order, the queue, the unlock sent) and every player's played ranges."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    extra = {k: v for k, v in (("timeout", timeout_ms), ("polling", polling)) if v is not None}
    try:
        page.wait_for_function("(id) => { const b = document.getElementById(id); return !!b && !b.disabled; }",
                               arg=f"arena-vote-{button}", **extra)
    except PlaywrightTimeout as e:
        raise AssertionError(f"the vote never unlocked ({e}); the page: {page.evaluate(LISTEN_STATE_JS)}") from None
