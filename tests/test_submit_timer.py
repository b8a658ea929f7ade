"""The Submit tab's 3 s timer runs only while the Submit tab is selected (issue 21, point 5), in a real browser
(Debian chromium via Playwright) against the production page (tests/support/space_app.py: app.py's app).

Each tick is a `queue/join` plus an event stream held open on the server; before, every open page ticked ~20 times a
minute whatever tab it showed. The timer's tick event is found in the app's own config (the tick whose outputs
include the job table), and the browser's own requests are counted: none on a page left on the Arena tab or any
other tab, ticks while the Submit tab is selected (a page opened with ?tab=submit included).
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import requests

from tests.support.arena_fixtures import free_port, seed
from tests.support.browser import new_page
from tests.support.processes import ServerProcess as Proc

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

MODULE_DATABASE_FIXTURES = ("site",)       # the app process writes to the module's database
INTERVAL_S = 1.0           # the app's Submit timer, set for this module (3 s in production: submit_tab.REFRESH_S)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = tmp_path_factory.mktemp("timer")
    seed(data, (), n_scripts=1)                                  # the demo benchmark (spec "demo") only
    port = free_port()
    app = Proc(["-m", "tests.support.space_app", "--port", str(port), "--data-dir", str(data),
                "--submit-refresh", str(INTERVAL_S)], data / "app.log",
               {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo", "GRADIO_ANALYTICS_ENABLED": "False",
                "HF_HUB_OFFLINE": "1"})
    app.start(f"http://127.0.0.1:{port}/api/arena/health")
    yield f"http://127.0.0.1:{port}"
    app.stop()


def _submit_tick(url: str) -> int:
    """The fn index of the Submit timer's tick, from the app's config: a `tick` event whose outputs include the job
    table (there is exactly one)."""
    cfg = requests.get(url + "/config", timeout=30).json()
    table = next(c["id"] for c in cfg["components"] if c.get("props", {}).get("elem_id") == "jobs-table")
    ticks = [d["id"] for d in cfg["dependencies"]
             if any(t[1] == "tick" for t in d["targets"]) and table in d["outputs"]]
    assert len(ticks) == 1, ticks
    return ticks[0]


class Ticks:
    """Every queue/join the page sends for the Submit timer's tick."""

    def __init__(self, page, fn: int):
        self.fn, self.count = fn, 0
        page.on("request", self._seen)

    def _seen(self, request) -> None:
        if self.is_tick(request):
            self.count += 1

    def is_tick(self, request) -> bool:
        return (request.method == "POST" and urlsplit(request.url).path.endswith("/gradio_api/queue/join")
                and json.loads(request.post_data or "{}").get("fn_index") == self.fn)


def _tab(page, tab_id: str) -> None:
    page.locator(f"[role='tab'][data-tab-id='{tab_id}']").click()
    page.wait_for_function("id => new URLSearchParams(location.search).get('tab') === id", arg=tab_id)


def _ticks_within(page, ticks: Ticks, seconds: float) -> int:
    before = ticks.count
    page.wait_for_timeout(1000 * seconds)          # counting what does (not) happen in a span: a span is waited
    return ticks.count - before


def _wait_tick(page, ticks: Ticks) -> None:
    """The next tick reaches the server (an event waited on, not a sleep)."""
    with page.expect_request(ticks.is_tick, timeout=30_000):   # a slow first answer included
        pass


def test_no_tick_away_from_the_submit_tab_ticks_on_it(site, chromium):
    fn = _submit_tick(site)
    page = new_page(chromium)
    ticks = Ticks(page, fn)
    try:
        page.goto(site + "/")
        page.locator("[role='tab'][data-tab-id='arena'][aria-selected='true']").wait_for()
        # a page left on the Arena tab: 3 intervals and more, not one tick (before: 3 or 4)
        assert _ticks_within(page, ticks, 3.5 * INTERVAL_S) == 0
        tabs = page.evaluate("() => [...document.querySelectorAll(\"[role='tab'][data-tab-id]\")]"
                             ".filter(b => b.getClientRects().length).map(b => b.dataset.tabId)")
        assert "submit" in tabs and len(tabs) > 2, tabs
        for other in (t for t in tabs if t != "submit"):         # every other visible tab stops it
            _tab(page, "submit")
            _wait_tick(page, ticks)                               # the Submit tab keeps the queue fresh
            _wait_tick(page, ticks)
            _tab(page, other)
            page.wait_for_timeout(1000)          # a tick already sent when the tab changed may still arrive
            assert _ticks_within(page, ticks, 1.5 * INTERVAL_S) == 0, f"the timer still ticks on tab {other!r}"
    finally:
        page.context.close()


def test_a_page_opened_on_the_submit_tab_ticks(site, chromium):
    page = new_page(chromium)
    ticks = Ticks(page, _submit_tick(site))
    try:
        page.goto(site + "/?tab=submit")
        page.locator("[role='tab'][data-tab-id='submit'][aria-selected='true']").wait_for()
        _wait_tick(page, ticks)
        _wait_tick(page, ticks)
        assert ticks.count >= 2
    finally:
        page.context.close()
