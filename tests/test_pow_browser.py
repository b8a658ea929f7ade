"""The proof-of-work check in a real browser (issue 23): Debian's chromium (Playwright) runs the vendored ALTCHA
widget, which fetches a real challenge from the app (default cost) and solves it while the voter listens; the
vote carries the solution and counts. With the challenge route blocked the widget cannot solve: the vote is
refused with a clear message on the page and a `pow_required` row in the refusal log (never dropped silently);
once the route answers again, the next refusal's fresh widget solves; a vote pressed while it solves is held on
the page and goes in once it is done (no further refusal), and the same battle's vote counts.
"""
from __future__ import annotations

import pytest

from arena.ui.pow_ui import PAYLOAD_JS
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import wait_for_vote

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("app",)
SOLVED = f"() => !!({PAYLOAD_JS})"        # what a vote would send now (arena/ui/pow_ui.py) is a solution


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("pow_ui")
    seed(data, MODELS, n_scripts=1)
    proc = AppProcess(data, env={"EMPATHY_ARENA_POW": "1"}).start()   # the app's defaults: every 50 votes, counter up to 5000
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def browser(app, chromium):
    """The module's chromium (tests/conftest.py), started after the app."""
    return chromium


def start_and_listen(page, app) -> str:
    page.goto(app.url + "/")
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle")
    page.wait_for_selector("#arena-pow altcha-widget", state="attached")
    page.keyboard.press("p")                                        # play all: the listening rule's 3 s each
    wait_for_vote(page, 60_000, button="b")
    for aspect in ("#arena-said", "#arena-sounded"):     # both aspects first: an overall vote then goes at once
        page.locator(f"{aspect} label", has_text="A").click()
    return page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")


def rows(app, sql, *args):
    return [dict(r) for r in Store(app.data_dir).query(sql, args)]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_widget_solves_a_real_challenge_and_the_vote_counts(app, browser):
    page = browser.new_page()
    page.set_default_timeout(30_000)
    battle = start_and_listen(page, app)
    page.wait_for_function(SOLVED, timeout=60_000)                # the real widget, a real PBKDF2 challenge
    assert "Anonymous voting" in page.inner_text("#arena-pow")
    page.click("#arena-vote-b")
    page.wait_for_selector("#arena-reveal", state="visible")
    assert "✅" in page.inner_text("#arena-message")
    vote = rows(app, "SELECT session_id FROM arena_votes WHERE battle_id=?", battle)
    assert len(vote) == 1
    assert rows(app, "SELECT session_id FROM arena_pow_passes WHERE session_id=?", vote[0]["session_id"])
    assert rows(app, "SELECT reason FROM arena_refused_votes WHERE battle_id=?", battle) == []
    # the next battle of this session owes nothing: no widget
    page.keyboard.press("n")
    page.wait_for_function(f"() => document.querySelector('.arena-meter')?.dataset.battle !== '{battle}'")
    page.wait_for_function("() => !document.querySelector('#arena-pow altcha-widget')")    # the box empties
    page.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_without_a_solution_the_vote_is_refused_clearly_then_counts_once_solved(app, browser):
    page = browser.new_page()
    page.set_default_timeout(30_000)
    page.route("**/api/arena/pow/challenge", lambda route: route.abort())   # the check cannot get a challenge
    battle = start_and_listen(page, app)
    assert not page.evaluate(SOLVED)
    page.click("#arena-vote-a")
    page.wait_for_function("() => document.querySelector('#arena-message')?.innerText.includes('automatic check')")
    assert not page.locator("#arena-reveal").is_visible()
    assert rows(app, "SELECT reason FROM arena_refused_votes WHERE battle_id=?", battle) == [{"reason": "pow_required"}]
    assert rows(app, "SELECT id FROM arena_votes WHERE battle_id=?", battle) == []
    page.unroute("**/api/arena/pow/challenge")
    # the widget had failed, so a vote still goes to the server: refused again, and a fresh check starts
    page.click("#arena-vote-a")
    page.wait_for_function("() => { const w = document.querySelector('#arena-pow altcha-widget'); "
                           "return w && w.getAttribute('data-round') === '2' && "
                           "['verifying', 'verified'].includes(w.getState()); }", timeout=60_000)
    # a vote pressed while it solves is held on the page and goes in once it is done (no third refusal)
    page.click("#arena-vote-a")
    page.wait_for_selector("#arena-reveal", state="visible", timeout=60_000)
    assert len(rows(app, "SELECT id FROM arena_votes WHERE battle_id=?", battle)) == 1
    assert rows(app, "SELECT reason FROM arena_refused_votes WHERE battle_id=?", battle) == [
        {"reason": "pow_required"}] * 2
    page.close()
