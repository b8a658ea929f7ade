"""Debian's chromium driven by Playwright: the one launch the browser tests, the benchmarks and scripts/screenshots.py
share (never `playwright install`).

In a test module, take the `chromium` fixture (tests/conftest.py): one browser for the module, closed after it;
open a page per use with `new_page(chromium)` (a fresh context: its own cookies, viewport and device). A module that
needs more flags (a fake microphone) overrides the module-scoped `chromium_args` fixture.

Why per module and not per session: while Playwright's sync API is started, the main thread counts as running an
asyncio loop, so `asyncio.run()` in any later test would fail. Launching chromium costs ~1 s of CPU; a module holds
one browser for all its tests.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

CHROMIUM = "/usr/bin/chromium"
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
