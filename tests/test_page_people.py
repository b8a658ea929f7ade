"""Issue 24, a page for people: the production page (app.py's build_app, tests/support/space_app.py) in Debian's
chromium at 1366×800 and 390×844 (touch), over a seeded data dir (tests/support/page_fixtures.py: three espeak-ng
"models", a few votes, scorer results on the served benchmark).

One started Space and one browser for the module; every test opens its own context and page (so the fixtures
move onto a shared one as they are). `PAGE_APP_ROOT=/path/to/another/checkout` serves that checkout's app
instead (how each test was seen to fail on the code before issue 24).
"""
from __future__ import annotations

from pathlib import Path

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


README = Path(__file__).resolve().parents[1] / "README.md"
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


# ------------------------------------------------------------------------------------------------ the API
def readme_api_snippet() -> str:
    text = README.read_text()
    block = text.split("<!-- api-snippet -->", 1)[1].split("<!-- /api-snippet -->", 1)[0]
    return block.split("```python", 1)[1].split("```", 1)[0]


def test_the_readme_api_snippet_runs_against_a_started_space_and_nothing_else_is_on_the_api_page(space):
    import contextlib
    import io

    import httpx
    from gradio_client import Client

    from arena.service import ArenaService
    from eval_backend.store import Store
    from tests.support.page_fixtures import MODELS

    code = readme_api_snippet().replace("http://127.0.0.1:7860/", space.url + "/")
    scope: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md (api snippet)", "exec"), scope)
    arena, bench = scope["arena"], scope["bench"]
    expected = {r["model"]: r for r in ArenaService(Store(space.data_dir)).ratings_table("overall")}
    assert [r["model"] for r in arena] == list(expected)                       # the board's own order
    for row in arena:
        want = expected[row["model"]]
        assert (row["votes"], row["rated_votes"], row["provisional"]) == (want["votes"], want["bt_votes"],
                                                                          want["provisional"])
        if row["provisional"]:              # every seeded model is under the floor: no score, what it needs
            assert row["bt_score"] is None and row["votes_needed"] == 30 - want["bt_votes"] > 0
    assert {r["model"] for r in bench} == set(MODELS)
    for row in bench:
        for board in ("LB1", "LB2", "LB3", "selection"):
            assert row[board] is None or isinstance(row[board], float), row
            if row[board] is None:
                assert f"{board}: not computed" in row["notes"], row
    assert any(isinstance(r["selection"], float) for r in bench)
    lines = printed.getvalue().splitlines()
    assert all(sum(f" {m} " in line for line in lines) == 2 for m in MODELS), lines   # one line per board

    # the API page, as the client sees it: exactly the documented endpoints; every other event of the page
    # (enumerated from its config) is private
    documented = {line.split("`")[1] for line in README.read_text().splitlines() if line.startswith("| `/")}
    info = Client(space.url + "/", verbose=False).view_api(return_format="dict", print_info=False)
    assert set(info["named_endpoints"]) == documented == {"/arena_board", "/benchmark_board"}
    assert not info["unnamed_endpoints"]
    config = httpx.get(space.url + "/config", timeout=30).json()
    shown = [d.get("api_name") for d in config["dependencies"] if d.get("api_visibility") != "private"]
    assert sorted(shown) == ["arena_board", "benchmark_board"], shown
    assert len(config["dependencies"]) > 20          # the page's own events are there, only hidden
