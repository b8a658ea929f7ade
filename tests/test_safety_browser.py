"""The arena page shows the calm crisis notice exactly for the battles whose reply read as a crisis (issue 14).

Debian's chromium via Playwright against a real app process (tests/support/arena_app.py) with reply screening on.
The data dir is seeded with espeak-ng replies of two models; their screening decisions are recorded through the
project's ledger from the real offline screen's verdicts (a kind sentence, a first-person crisis sentence) — the
transcription path itself is covered by tests/test_safety_e2e.py. For each battle the page shows, the box must be
visible exactly when the server's battle row names a request whose reply was recorded as a crisis.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from eval_backend.showcase import in_arena_pool
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import launch_chromium, new_page, wait_for_vote

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("app",)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from eval_backend.moderation import ledger
    from eval_backend.moderation.replies import subject_of
    from eval_backend.safety import screen_text

    data = tmp_path_factory.mktemp("safety_ui")
    info = seed(data, MODELS, n_scripts=2)
    store = Store(data)
    kind, crisis = screen_text("I am so sorry, that sounds hard."), screen_text("Honestly, I want to die. I cannot go on anymore.")
    assert not kind.flagged and not kind.crisis and not crisis.flagged and crisis.crisis, (kind.reason, crisis.reason)
    # every other request battles can use (the arena pool, eval_backend/showcase.py): some battles crisis, some not
    crisis_requests = set([r for r in info["requests"] if in_arena_pool(r)][::2])
    for r in store.replies(benchmark_hash=info["benchmark_hash"]):
        bad = r.model == "flat-model" and r.request_id in crisis_requests
        ledger.record(store, "reply", subject_of(r), "seeded decision", crisis if bad else kind)
    proc = AppProcess(data, settings={"min_listen_s": 0, "session_votes_per_minute": 1000},
                      env={"EMPATHY_ARENA_SCREEN_REPLIES": "1"}).start()
    proc.crisis_requests = crisis_requests
    yield proc
    proc.stop()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_crisis_notice_follows_the_battle(app):
    with launch_chromium() as browser:
        page = new_page(browser, 30_000)
        page.goto(app.url + "/")
        seen = set()
        last = None
        for _ in range(12):
            page.click("#arena-next")
            page.wait_for_function("(last) => { const b = document.querySelector('.arena-meter')?.dataset.battle;"
                                   " return b && b !== last; }", arg=last)
            last = page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")
            rid = Store(app.data_dir).query("SELECT request_id FROM arena_battles WHERE id=?", (last,))[0][0]
            expected = rid in app.crisis_requests
            # the notice follows the battle in a chained event: wait until the box shows what this battle asks for
            # (a notice left from the previous battle, or missing, fails here after the wait)
            shown = ("() => { const b = document.getElementById('arena-crisis');"
                     " return !!b && b.offsetParent !== null && b.innerText.trim().length > 0; }")
            try:
                page.wait_for_function(shown if expected else f"() => !({shown})()", timeout=60_000)
            except PlaywrightTimeout:
                pass
            box = page.locator("#arena-crisis")
            visible = box.count() > 0 and box.is_visible()
            assert visible == expected, (rid, visible)
            if visible:
                assert "you do not have to face it alone" in box.inner_text()
            seen.add(expected)
            if seen == {True, False}:
                break
            # vote, so the page offers the next battle
            wait_for_vote(page, 60_000)
            page.click("#arena-vote-a")
            page.click("#arena-send")      # no aspect answered: send the vote as it is (issue 24)
            page.wait_for_selector("#arena-reveal", state="visible")
    assert seen == {True, False}           # both kinds of battle were shown
