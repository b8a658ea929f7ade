"""The arena tab in a real browser (Debian chromium via Playwright) against a real app process.

Seeded data dir (two models, espeak-ng replies), default listening rule (each clip's
first 3 s, up to 2x speed): the vote is locked before the clips were heard (buttons
disabled, a vote key says why, a forced click answered "not yet" by the server and
not logged as a refusal), possible after playing them; the reveal names both models
and the vote row is in SQLite with both axes. Playing the clips together and at 2x
unlocks the vote as soon as they are covered, and that vote is accepted; the page's
rule and the server's agree on every number; an API client that never fetched the
audio is refused.
"""
from __future__ import annotations


import json

import pytest
import requests

from eval_backend.store import Store

from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import new_page, wait_for_vote


MODELS = ("warm-model", "flat-model")

MODULE_DATABASE_FIXTURES = ("app",)   # the running app writes to the module's database (tests/conftest.py)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("arena_ui")
    seed(data, MODELS, n_scripts=1)
    proc = AppProcess(data).start()       # default settings: 3 s minimum listening per clip
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def page(app, chromium):
    return new_page(chromium, 30_000)


def _votes(app) -> list[dict]:
    return [dict(r) for r in Store(app.data_dir).query("SELECT * FROM arena_votes ORDER BY id")]


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_pause_event_arriving_after_play_all_restarted_the_clip_does_not_stop_it(app, chromium):
    """"Play all" pauses every clip and restarts the first; a pause event dispatched after that restart (the pause of
    a clip that was playing, late on a loaded machine) is not the voter's: A and B must still play."""
    page = new_page(chromium, 30_000)
    try:
        page.goto(app.url + "/")
        page.click("#arena-next")
        page.wait_for_function("() => document.querySelectorAll('audio').length === 3 && "
                               "[...document.querySelectorAll('audio')].every(a => a.currentSrc && a.duration > 0)")
        page.keyboard.press("p")
        page.wait_for_function("() => { const a = document.querySelector('#arena-audio-user audio');"
                               " return a && !a.paused && a.currentTime > 0.2; }")
        page.evaluate("() => document.querySelector('#arena-audio-user audio').dispatchEvent(new Event('pause'))")
        assert page.evaluate("() => window.__arenaListen.current") == "user"
        page.wait_for_function("() => window.__arenaListen.order.includes('B')", timeout=60_000)
    finally:
        page.context.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_vote_needs_listening_then_reveals_and_is_stored(app, page):
    page.goto(app.url + "/")
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle")
    battle_id = page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")
    # three clips loaded, no model name anywhere in the page before the vote
    page.wait_for_function("() => document.querySelectorAll('audio').length === 3 && "
                           "[...document.querySelectorAll('audio')].every(a => a.currentSrc && a.duration > 0)")
    html = page.content()
    assert not any(m in html for m in MODELS)

    # before listening: buttons disabled, the shortcut votes nothing and says why
    for slot in ("a", "b", "tie", "bad"):
        assert page.locator(f"#arena-vote-{slot}").is_disabled()
    page.keyboard.press("1")
    page.wait_for_function("() => document.querySelector('.arena-meter-hint')?.innerText.startsWith('Not yet')")
    assert "Vote in" not in page.inner_text(".arena-meter-hint")      # the countdown beside it says how long
    page.wait_for_timeout(500)
    assert _votes(app) == []
    # forcing the button open in the page does not help: the server answers "not yet", an honest early vote,
    # which is not an integrity refusal
    page.evaluate("() => { const b = document.getElementById('arena-vote-a'); b.disabled = false; b.click(); }")
    page.click("#arena-send")             # no aspect answered: the vote waits for Send (issue 24)
    page.wait_for_function("() => document.querySelector('#arena-message')?.innerText.includes('Not yet')")
    assert _votes(app) == []
    refused = Store(app.data_dir).query("SELECT reason FROM arena_refused_votes WHERE battle_id=?", (battle_id,))
    assert [tuple(r) for r in refused] == []

    # listen: user, then A, then B ("p" = play all in order); the meter unlocks the buttons
    page.keyboard.press("p")
    wait_for_vote(page, 60_000, button="b")
    assert "All clips heard" in page.inner_text(".arena-meter")
    page.wait_for_function("() => !document.querySelector('#arena-message')?.innerText.includes('Not yet')")

    # both optional axes (in view, issue 24) and a reason, then vote "B better" with the keyboard
    page.get_by_text("Say why (optional)").click()
    page.locator("#arena-said label", has_text="B").click()
    page.locator("#arena-sounded label", has_text="Tie").click()
    page.fill("#arena-reason textarea", "B sounded concerned, A was flat")
    page.evaluate("() => document.activeElement.blur()")   # keys are ignored while typing in a box
    page.keyboard.press("2")
    page.wait_for_selector("#arena-reveal", state="visible")
    reveal = page.inner_text("#arena-reveal")
    assert "✅" in page.inner_text("#arena-message")

    rows = _votes(app)
    assert len(rows) == 1
    row = rows[0]
    assert (row["battle_id"], row["slot"], row["winner"]) == (battle_id, "B", row["model_b"])
    assert (row["said"], row["sounded"], row["reason"]) == ("B", "tie", "B sounded concerned, A was flat")
    assert row["first_heard"] == "A"                      # "play all" played A before B
    assert row["session_id"] and row["ip_hash"] and row["ip_hash"] != "127.0.0.1"
    assert reveal.index(f"A: {row['model_a']}") < reveal.index(f"B: {row['model_b']}")
    assert {row["model_a"], row["model_b"]} == set(MODELS)

    # after the vote: locked, and a next battle on offer
    for slot in ("a", "b", "tie", "bad"):
        assert page.locator(f"#arena-vote-{slot}").is_disabled()
    assert page.locator("#arena-next").is_visible()
    page.keyboard.press("n")
    page.wait_for_function(f"() => (document.querySelector('.arena-meter')?.dataset.battle || '{battle_id}') "
                           f"!== '{battle_id}'")
    assert page.locator("#arena-vote-a").is_disabled()
    assert not page.locator("#arena-reveal").is_visible()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_leaderboard_tab_shows_the_vote(app, page):
    page.goto(app.url + "/")
    page.get_by_role("tab", name="Arena leaderboard").click()
    page.wait_for_function("() => document.querySelector('#arena-board-table')?.innerText.includes('provisional')")
    table = page.inner_text("#arena-board-table")
    for m in MODELS:
        assert m in table
    assert "decisive votes" in page.inner_text("#arena-board-bias")
    assert "Slot:" in page.inner_text("#arena-board-bias")          # slot A reported apart from heard-first



@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_leaderboard_all_columns_toggle_and_an_axis_without_votes(app, page):
    """The headline columns are Bradley–Terry's; TrueSkill appears under 'All columns'; an axis nobody voted on
    says so instead of showing bare headers. (Runs after the vote above: two provisional models.)"""
    page.goto(app.url + "/")
    page.get_by_role("tab", name="Arena leaderboard").click()
    page.wait_for_function("() => document.querySelector('#arena-board-table')?.innerText.includes('too few votes')")
    table = page.inner_text("#arena-board-table")
    assert "BT 95% interval" in table and "μ−3σ" not in table
    page.locator("#arena-board-all label").click()
    page.wait_for_function("() => document.querySelector('#arena-board-table')?.innerText.includes('μ−3σ')")
    page.locator("#arena-board-axis label", has_text="User's voice: environment").click()
    page.wait_for_function("() => document.querySelector('#arena-board-table')?.innerText"
                           ".includes('no votes on this axis yet')")
    for m in MODELS:
        assert m not in page.inner_text("#arena-board-table")

# ---------------------------------------------------------------- the board's pure parts (no browser)
def _row(model, mu, sigma, wins, losses, ties, votes, bt=None, lo=None, hi=None, rank=None, provisional=True):
    nan = float("nan")
    return {"model": model, "mu": mu, "sigma": sigma, "conservative": mu - 3 * sigma,
            "bt": nan if bt is None else bt, "bt_low": nan if lo is None else lo, "bt_high": nan if hi is None else hi,
            "bt_rank": rank, "votes": votes, "wins": wins, "losses": losses, "ties": ties, "both_bad": 0,
            "provisional": provisional, "paused": False}


def test_board_rows_win_rate_interval_and_provisional():
    from leaderboard.arena_leaderboard_tab import board_rows

    df = board_rows([_row("x", 27.0, 2.0, 6, 2, 2, 10, 1040.0, 1010.0, 1070.0, 1, provisional=False),
                     _row("y", 23.0, 2.0, 0, 0, 0, 3)], provisional_votes=300)
    x, y = df.iloc[0], df.iloc[1]
    assert x["win rate"] == "70.0%"                   # (6 + 1) / 10
    assert x["BT 95% interval"] == "1010 – 1070" and x["rank"] == 1
    assert y["status"] == "provisional: 0 of 300 rated votes, 300 more to be ranked"
    assert y["win rate"] == "—" and y["BT 95% interval"].startswith("too few votes")   # no number, no zero
    assert y["rank"] == "—"


def test_plots_keep_missing_cells_missing():
    import math

    from leaderboard import plots

    fig = plots.win_rate_heatmap(["a", "b"], [[None, 0.75], [0.25, None]])
    z = fig.data[0].z
    assert math.isnan(z[0][0]) and z[0][1] == 0.75
    chart = plots.interval_chart(["a", "b"], [1010.0, 990.0], [1000.0, 980.0], [1020.0, 1000.0])
    assert list(chart.data[0].y) == ["b", "a"]       # best on top (plotly draws bottom-up)
    with pytest.raises(ValueError):
        plots.matrix_heatmap(["a"], [[1, 2]], "bad")


def test_board_cache_recomputes_only_on_new_votes():
    from leaderboard.arena_leaderboard_tab import BoardCache

    calls, version, now = [], [1], [0.0]
    cache = BoardCache(lambda axis: calls.append(axis) or (axis, len(calls)), lambda: version[0],
                       min_age_s=10, clock=lambda: now[0])
    assert cache.get("overall") == ("overall", 1)
    now[0] = 50
    assert cache.get("overall") == ("overall", 1)     # same vote log: cached
    version[0] = 2
    assert cache.get("overall") == ("overall", 2)     # new votes, entry older than 10 s: recomputed
    version[0] = 3
    now[0] = 55
    assert cache.get("overall") == ("overall", 2)     # new votes within 10 s: still cached


def _fresh_battle(page, app) -> tuple[str, dict]:
    """Load the page, start a battle, wait until its three clips are loaded; (battle id, the rule's numbers)."""
    page.goto(app.url + "/")
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle")
    page.wait_for_function("() => document.querySelectorAll('audio').length === 3 && "
                           "[...document.querySelectorAll('audio')].every(a => a.currentSrc && a.duration > 0)")
    battle_id = page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")
    rule = page.evaluate("() => JSON.parse(document.querySelector('.arena-meter').dataset.listen)")
    return battle_id, rule


# Watches the page every 50 ms for the contradiction: the meter says every clip was heard while the
# message under it says the vote is too early.
WATCH_JS = """() => {
  window.__contradictions = [];
  setInterval(() => {
    const meter = document.querySelector('.arena-meter')?.innerText || '';
    const msg = document.querySelector('#arena-message')?.innerText || '';
    if (meter.includes('All clips heard') && /not yet|listen/i.test(msg)) window.__contradictions.push(msg);
  }, 50);
}"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_clips_played_together_at_2x_unlock_early_and_that_vote_counts(app, page):
    import time

    battle_id, rule = _fresh_battle(page, app)
    need = {c: v["need_s"] for c, v in rule["clips"].items()}
    assert set(need) == {"user", "A", "B"} and rule["max_rate"] == 2.0 and sum(need.values()) > 6
    page.evaluate(WATCH_JS)
    # the page caps the playback rate at the rule's maximum
    page.evaluate("() => { document.querySelector('#arena-audio-a audio').playbackRate = 4; }")
    page.wait_for_function("() => document.querySelector('#arena-audio-a audio').playbackRate === 2")
    # every clip at 2x, all at once; reply B started first
    t0 = time.monotonic()
    page.evaluate("""() => {
      const [u, a, b] = ['user', 'a', 'b'].map((k) => document.querySelector('#arena-audio-' + k + ' audio'));
      for (const x of [u, a, b]) x.playbackRate = 2;
      b.addEventListener('playing', () => { a.play(); u.play(); }, {once: true});
      b.play();
    }""")
    # the moment the countdown ends, vote with the keyboard
    wait_for_vote(page, 60_000, polling=20)
    unlocked_after = time.monotonic() - t0
    page.keyboard.press("1")
    page.wait_for_selector("#arena-send", state="visible")       # no aspect answered: Enter sends it as it is
    page.keyboard.press("Enter")
    page.wait_for_selector("#arena-reveal", state="visible")
    assert "✅" in page.inner_text("#arena-message")
    assert page.evaluate("() => window.__contradictions") == []
    # listening together at 2x counted: unlocked well before the clips' listening time end to end at 1x
    assert unlocked_after < sum(need.values()) - 2, unlocked_after
    store = Store(app.data_dir)
    rows = [dict(r) for r in store.query("SELECT * FROM arena_votes WHERE battle_id=?", (battle_id,))]
    assert len(rows) == 1 and rows[0]["slot"] == "A" and rows[0]["first_heard"] == "B"
    assert store.query("SELECT reason FROM arena_refused_votes WHERE battle_id=?", (battle_id,)) == []


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_page_and_server_apply_the_same_rule_to_the_same_numbers(app, page):
    """The page's `arenaRemaining` and listening.remaining on the same (need, played, tolerance) triples,
    including the boundary (played exactly need - tolerance, at the page's 1 ms rounding)."""
    import random

    from arena.core.listening import ListenRule, remaining

    _fresh_battle(page, app)
    rng = random.Random(11)
    cases = []
    for _ in range(3000):
        need = rng.choice([round(rng.uniform(0, 12), 3), rng.uniform(0, 12)])   # clip lengths are not rounded
        tol = rng.choice([0.0, 0.05, 0.1, 0.25])
        played = rng.choice([round(need - tol, 3), round(need - tol - 0.001, 3), round(need - tol + 0.001, 3),
                             round(rng.uniform(0, need + 1), 3), 0.0, need])
        cases.append([need, max(0.0, played), tol])
    page_says = page.evaluate("(cases) => cases.map(([n, p, t]) => window.__arenaRemaining(n, p, t))", cases)
    server_says = [remaining(ListenRule(tolerance_s=t), n, p) for n, p, t in cases]
    assert page_says == server_says
    assert 0 < sum(r == 0 for r in server_says) < len(cases)      # both outcomes exercised


def test_api_clients_must_fetch_the_audio_and_early_votes_are_not_refusals(app):
    """Over HTTP: a vote on audio never fetched is an integrity refusal; a client that fetched the clips and
    votes before covering them is told "not yet" (425, what is left), not logged; claiming more listening
    than the time since the fetch allows is refused; the honest vote after listening counts."""
    import time

    import httpx

    with httpx.Client(base_url=app.url, timeout=30) as http:
        def refusals(battle_id):
            return [r[0] for r in Store(app.data_dir).query(
                "SELECT reason FROM arena_refused_votes WHERE battle_id=? ORDER BY id", (battle_id,))]

        b = http.post("/api/arena/battle", json={}).json()
        need = {c: v["need_s"] for c, v in b["listening"]["clips"].items()}
        assert need == b["min_listen_s"]
        full = {"played_s": need, "order": ["user", "B", "A"]}
        vote = {"battle_id": b["battle_id"], "session": b["session"], "overall": "B"}
        time.sleep(max(need.values()) + 0.2)          # long enough to have listened, had it fetched anything
        r = http.post("/api/arena/vote", json={**vote, "listen": full})
        assert r.status_code == 403 and r.json()["error"] == "impossible" and "never fetched" in r.json()["message"]
        assert refusals(b["battle_id"]) == ["impossible"]

        for clip, url in b["audio"].items():
            assert http.get(url).status_code == 200
        r = http.post("/api/arena/vote", json=vote)                       # no listening reported
        assert r.status_code == 425 and r.json()["error"] == "not_yet", r.text
        assert r.json()["remaining_s"] == pytest.approx(need, abs=1e-3)
        begun = {"played_s": {c: 0.05 for c in need}, "order": ["user"]}     # just started: possible, early
        r = http.post("/api/arena/vote", json={**vote, "listen": begun})
        assert r.status_code == 425, r.text
        assert r.json()["remaining_s"] == pytest.approx({c: n - 0.05 for c, n in need.items()}, abs=1e-3)
        r = http.post("/api/arena/vote", json={**vote, "listen": full})   # 3 s heard in a few ms: impossible
        assert r.status_code == 403 and r.json()["error"] == "impossible" and "fetched" in r.json()["message"]
        bad = http.post("/api/arena/vote", json={**vote, "listen": {"played_s": {"C": 1}}})
        assert bad.status_code == 422 and bad.json()["error"] == "bad_value"
        assert refusals(b["battle_id"]) == ["impossible", "impossible", "bad_value"]   # not_yet: never logged

        time.sleep(max(need.values()) / 2 + 0.3)     # at 2x, every clip could have been heard by now
        r = http.post("/api/arena/vote", json={**vote, "listen": full})
        assert r.status_code == 200, r.text
        row = Store(app.data_dir).query("SELECT slot, first_heard FROM arena_votes WHERE battle_id=?",
                                        (b["battle_id"],))
        assert [tuple(x) for x in row] == [("B", "B")]


def _unlock_event(app) -> int:
    """The fn index of the meter's unlock (its `submit` event), from the app's own config."""
    config = requests.get(app.url + "/config", timeout=30).json()
    meter = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "arena-meter")
    found = [d["id"] for d in config["dependencies"] if [meter, "submit"] in [list(t) for t in d["targets"]]]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_refused_unlock_request_is_sent_again_and_the_vote_counts(app, page):
    """The unlock is one event the page sends once every clip is heard; if its request is refused (the join
    budget is per address, shared behind a NAT: the guard's 429), the page asks again while the vote stays locked."""
    unlock = _unlock_event(app)
    refused: list[dict] = []

    def refuse_the_first_unlock(route) -> None:
        body = json.loads(route.request.post_data or "{}")
        if body.get("fn_index") == unlock and not refused:
            refused.append(body)
            route.fulfill(status=429, content_type="application/json", headers={"Retry-After": "1"},
                          body=json.dumps({"error": "rate_limited", "detail": "too many requests"}))
        else:
            route.continue_()

    page.route("**/gradio_api/queue/join*", refuse_the_first_unlock)
    try:
        battle_id, _ = _fresh_battle(page, app)
        page.evaluate("""() => ['user', 'a', 'b'].forEach((k) => {
            const x = document.querySelector('#arena-audio-' + k + ' audio'); x.playbackRate = 2; x.play(); })""")
        wait_for_vote(page, 60_000)
        assert len(refused) == 1, refused
        page.keyboard.press("1")
        page.wait_for_selector("#arena-send", state="visible")
        page.keyboard.press("Enter")
        page.wait_for_selector("#arena-reveal", state="visible")
        assert "✅" in page.inner_text("#arena-message")
        assert len(Store(app.data_dir).query("SELECT id FROM arena_votes WHERE battle_id=?", (battle_id,))) == 1
    finally:
        page.unroute("**/gradio_api/queue/join*")
