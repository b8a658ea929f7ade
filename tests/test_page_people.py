"""Issue 24, a page for people: the production page (app.py's build_app, tests/support/space_app.py) in Debian's
chromium at 1366×800 and 390×844 (touch), over a seeded data dir (tests/support/page_fixtures.py: three espeak-ng
"models", a few votes, scorer results on the served benchmark).

One started Space and one browser for the module; every test opens its own context and page (so the fixtures
move onto a shared one as they are). `PAGE_APP_ROOT=/path/to/another/checkout` serves that checkout's app
instead (how each test was seen to fail on the code before issue 24).
"""
from __future__ import annotations

import pytest

from tests.support.page_fixtures import DESKTOP, PageSpace, open_page, seed_page

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
MODULE_DATABASE_FIXTURES = ("space",)   # the running app writes to the module's database (tests/conftest.py)


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    data = tmp_path_factory.mktemp("page")
    seed_page(data)
    app = PageSpace(data).start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from tests.support.page_fixtures import CHROMIUM_ARGS
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


SELECTED_TAB = "() => document.querySelector('button[role=tab][aria-selected=true]')?.innerText.trim()"


def public_tabs():
    from app import TABS
    return [t for t in TABS if not t.operator_only]


# ------------------------------------------------------------------------------------------------ links
def test_every_tab_opens_from_its_own_link_and_the_link_survives_the_load(space, browser):
    """Each public tab of app.TABS, from a fresh page: `?tab=<id>` selects it, and once the page has settled
    (no request open for 500 ms) the tab and the address are still the link's."""
    for tab in public_tabs():
        ctx, page = open_page(browser, f"{space.url}/?tab={tab.id}&q=keep", DESKTOP)
        try:
            page.wait_for_function(f"(label) => ({SELECTED_TAB})() === label", arg=tab.label, timeout=30_000)
            page.traffic.settle()
            assert page.evaluate(SELECTED_TAB) == tab.label
            assert f"tab={tab.id}" in page.url and "q=keep" in page.url, (tab.id, page.url)
        finally:
            ctx.close()
