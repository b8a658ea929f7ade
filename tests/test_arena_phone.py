"""The arena on a phone (390×844, touch) and on a desktop, in a real browser against a real app process (issue 15).

Seeded data dir (two espeak-ng "models"), the default listening rule (each clip's first 3 s, up to 2x). On the
phone: "Start a battle" is on the first screen at load, with no empty players or disabled buttons; once the clips
are heard, the four vote buttons are on screen (at the top of the page and scrolled down); after the vote each
player carries its model's name and nothing plays any more (the element that was playing included). Skip gives a
new battle; the skipped one has no vote and no refusal row. Keyboard hints show on a desktop, never on a touch
screen. The skip route of the JSON API, and the revealed player's name is inert text. The production page
(app.py's tabs) shows every tab on a phone's tab bar.
"""
from __future__ import annotations

import pytest

from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import wait_for_vote

MODELS = ("warm-model", "flat-model")
PHONE = dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)
DESKTOP = dict(viewport={"width": 1440, "height": 900})
VOTES = ("#arena-vote-a", "#arena-vote-b", "#arena-vote-tie", "#arena-vote-bad")

MODULE_DATABASE_FIXTURES = ("app",)   # the running app writes to the module's database (tests/conftest.py)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("arena_phone")
    seed(data, MODELS, n_scripts=1)
    proc = AppProcess(data).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def browser(app, chromium):
    return chromium


def _page(browser, app, device: dict):
    ctx = browser.new_context(**device)
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    page.goto(app.url + "/")
    page.wait_for_selector("#arena-next", state="visible")
    return ctx, page


def _in_viewport(page, selector: str) -> bool:
    """The element is laid out and lies wholly inside the visible screen (no scrolling needed to see it)."""
    return page.evaluate("""(sel) => {
      const e = document.querySelector(sel);
      if (!e || !e.getClientRects().length) return false;
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
    }""", selector)


def _start(page) -> str:
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle")
    page.wait_for_function("() => document.querySelectorAll('#arena-players audio[src]').length === 3 && "
                           "[...document.querySelectorAll('#arena-players audio')].every(a => a.duration > 0)")
    return page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")


def _listen(page) -> None:
    """Every clip at the page's top speed, all at once; wait until the vote unlocks."""
    page.evaluate("() => { for (const a of document.querySelectorAll('#arena-players audio')) "
                  "{ a.playbackRate = 2; a.play(); } }")
    wait_for_vote(page, 60_000)


def _db(app, sql: str, params=()) -> list[dict]:
    return [dict(r) for r in Store(app.data_dir).query(sql, params)]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_phone_start_on_first_screen_votes_on_screen_reveal_on_the_players_and_silence(app, browser):
    ctx, page = _page(browser, app, PHONE)
    try:
        assert _in_viewport(page, "#arena-next")                     # at load, no scrolling
        assert page.inner_text("#arena-next").strip() == "Start a battle"
        # nothing empty before a battle: no players, no (disabled) vote buttons, no Skip
        assert not page.locator("#arena-players").is_visible()
        for sel in (*VOTES, "#arena-skip"):
            assert not page.locator(sel).is_visible()

        battle_id = _start(page)
        assert _in_viewport(page, "#arena-skip") and not page.locator("#arena-next").is_visible()
        boxes = page.evaluate("() => ['user', 'a', 'b'].map((k) => "
                              "document.getElementById('arena-audio-' + k).getBoundingClientRect().top)")
        assert boxes[0] < boxes[1] < boxes[2]                        # the user's clip, then A, then B: stacked
        _listen(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        assert all(_in_viewport(page, sel) for sel in VOTES), "vote buttons not on the first screen"
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        assert all(_in_viewport(page, sel) for sel in VOTES), "vote buttons scrolled away"

        # reply B plays (looping) while the vote is cast
        page.evaluate("() => { const b = document.querySelector('#arena-audio-b audio'); window.__playing = b; "
                      "b.loop = true; b.playbackRate = 1; b.play(); }")
        page.wait_for_function("() => !window.__playing.paused && window.__playing.currentTime > 0")
        page.click("#arena-vote-a")
        page.click("#arena-send")                                    # no aspect answered: send it as it is
        page.wait_for_selector("#arena-reveal", state="visible")
        row = _db(app, "SELECT model_a, model_b, slot FROM arena_votes WHERE battle_id=?", (battle_id,))[0]
        assert row["slot"] == "A"
        page.wait_for_function("(m) => document.querySelector('#arena-audio-a').innerText.includes(m)",
                               arg=row["model_a"])
        label_a, label_b = page.inner_text("#arena-audio-a"), page.inner_text("#arena-audio-b")
        assert f"A: {row['model_a']}" in label_a and "1 vote" in label_a and "TrueSkill" not in label_a
        assert f"B: {row['model_b']}" in label_b and row["model_a"] not in label_b
        page.wait_for_timeout(500)
        assert page.evaluate("() => window.__playing.paused"), "the reply that was playing still plays"
        assert page.evaluate("() => [...document.querySelectorAll('audio')].every((a) => a.paused)")
        # voted: the vote row leaves the phone's screen, Next is on the first screen, no Skip
        page.evaluate("() => window.scrollTo(0, 0)")
        assert _in_viewport(page, "#arena-next") and page.inner_text("#arena-next").strip() == "Next battle"
        assert not page.locator("#arena-skip").is_visible()
        assert not _in_viewport(page, "#arena-vote-a")
    finally:
        ctx.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_skip_gives_a_new_battle_without_a_vote_or_a_refusal(app, browser):
    ctx, page = _page(browser, app, PHONE)
    try:
        first = _start(page)
        page.click("#arena-skip")
        page.wait_for_function("(b) => (document.querySelector('.arena-meter')?.dataset.battle || b) !== b",
                               arg=first)
        second = page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")
        assert page.locator("#arena-vote-a").is_disabled()          # a new battle: listen again
        skipped = _db(app, "SELECT voted, skipped_at FROM arena_battles WHERE id=?", (first,))[0]
        assert skipped["voted"] == 0 and skipped["skipped_at"] is not None
        assert _db(app, "SELECT id FROM arena_votes WHERE battle_id=?", (first,)) == []
        assert _db(app, "SELECT id FROM arena_refused_votes WHERE battle_id=?", (first,)) == []
        assert _db(app, "SELECT skipped_at FROM arena_battles WHERE id=?", (second,))[0]["skipped_at"] is None
    finally:
        ctx.close()
    # on a desktop, `n` skips the open battle the same way
    ctx, page = _page(browser, app, DESKTOP)
    try:
        first = _start(page)
        page.keyboard.press("n")
        page.wait_for_function("(b) => (document.querySelector('.arena-meter')?.dataset.battle || b) !== b",
                               arg=first)
        assert _db(app, "SELECT skipped_at FROM arena_battles WHERE id=?", (first,))[0]["skipped_at"] is not None
        assert _db(app, "SELECT id FROM arena_votes WHERE battle_id=?", (first,)) == []
        assert _db(app, "SELECT id FROM arena_refused_votes WHERE battle_id=?", (first,)) == []
    finally:
        ctx.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_keyboard_hints_only_where_there_is_a_keyboard(app, browser):
    after = "() => getComputedStyle(document.getElementById('arena-next'), '::after').content"
    ctx, page = _page(browser, app, PHONE)
    try:
        assert not page.locator("#arena-keys").is_visible()
        assert page.evaluate(after) in ("none", "normal")
        assert "(n)" not in page.inner_text("#arena-next")
    finally:
        ctx.close()
    ctx, page = _page(browser, app, DESKTOP)
    try:
        assert page.locator("#arena-keys").is_visible()
        assert "skip / next battle" in page.inner_text("#arena-keys")
        assert page.evaluate(after) == '"(n)"'
    finally:
        ctx.close()


def test_skip_route_closes_the_battle_and_a_later_vote_is_refused(app):
    import httpx

    with httpx.Client(base_url=app.url, timeout=30) as http:
        b = http.post("/api/arena/battle", json={}).json()
        other = http.post("/api/arena/battle", json={}).json()            # another session
        r = http.post("/api/arena/skip", json={"battle_id": b["battle_id"], "session": other["session"]})
        assert r.status_code == 403 and r.json()["error"] == "wrong_session"
        r = http.post("/api/arena/skip", json={"battle_id": b["battle_id"], "session": "forged"})
        assert r.status_code == 403 and r.json()["error"] == "bad_session"
        r = http.post("/api/arena/skip", json={"battle_id": b["battle_id"]})
        assert r.status_code == 422
        r = http.post("/api/arena/skip", json={"battle_id": b["battle_id"], "session": b["session"]})
        assert r.status_code == 200 and r.json() == {"battle_id": b["battle_id"], "skipped": True}
        assert _db(app, "SELECT id FROM arena_refused_votes WHERE battle_id=?", (b["battle_id"],)) == []
        r = http.post("/api/arena/vote", json={"battle_id": b["battle_id"], "session": b["session"],
                                               "overall": "A"})
        assert r.status_code == 409 and r.json()["error"] == "skipped"
        r = http.post("/api/arena/skip", json={"battle_id": "nope", "session": b["session"]})
        assert r.status_code == 404 and r.json()["error"] == "unknown_battle"


def test_revealed_player_names_are_inert_text():
    from types import SimpleNamespace

    from arena.ui.arena_tab import revealed_clip_html

    side = SimpleNamespace(model='evil<img src="http://x/y.gif">"', votes=1,
                           rating=SimpleNamespace(mu=25.0, sigma=8.0))
    out = revealed_clip_html("A", side, "/api/arena/audio/b/A", True)
    assert "<img" not in out and "&lt;img src=&quot;http://x/y.gif&quot;&gt;&quot;" in out
    assert "A: evil" in out and "1 vote · rank on the Arena leaderboard<" in out and "25.0" not in out


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_tab_is_on_the_phones_tab_bar(browser, tmp_path):
    """The production page (app.py's tabs): at 390 px every public tab is shown, none folded into a "⋯" menu."""
    from app import TABS
    from tests.support.processes import ServerProcess, free_port

    seed(tmp_path, MODELS, n_scripts=1)
    port = free_port()
    proc = ServerProcess(["-m", "tests.support.space_app", "--port", str(port), "--data-dir", str(tmp_path)],
                         tmp_path / "app.log", {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo",
                                                "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"},
                         stop_timeout=30)
    proc.start(f"http://127.0.0.1:{port}/api/arena/health", 180)
    try:
        ctx = browser.new_context(**PHONE)
        page = ctx.new_page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#arena-next", state="visible", timeout=60_000)
        for tab in TABS:
            selector = f"[role='tab'][data-tab-id='{tab.id}']"
            if tab.operator_only:           # hidden from the public (the Moderation tab): not on its tab bar
                assert not page.locator(selector).is_visible(), tab.label
                continue
            assert _in_viewport(page, selector), tab.label
        assert not page.locator("button[aria-label='More tabs']").is_visible()
        assert _in_viewport(page, "#arena-next")          # under the full page header, too
        ctx.close()
    finally:
        proc.stop()
