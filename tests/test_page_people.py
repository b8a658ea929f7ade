"""Issue 24, a page for people: the production page (app.py's build_app, tests/support/space_app.py) in Debian's
chromium at 1366×800 and 390×844 (touch), over a seeded data dir (tests/support/page_fixtures.py: three espeak-ng
"models", a few votes, scorer results on the served benchmark).

What each test shows (each was seen to fail on the page before issue 24): every tab opens from its own `?tab=`
link and keeps it; the README's `gradio_client` snippet runs and the API page lists only the named endpoints; on a
phone no fixed element covers a player scrolled into view, and the vote ends with its confirmation and "Next
battle" on screen; the two aspects are in view, answerable before or right after the overall vote, and their share
is on the health view; the countdown tells the truth for "play all in order", says each thing once and goes with
the vote; the arena board never says "no votes" beside votes and a provisional model says what it needs; the
benchmark board's headers break between words only, no column is clipped, the table starts on the first screen
and its CSV holds numbers; Browse opens on a playable reply and survives a quick collection switch, samples read
for people; Submit has no key box without keys and no grey filler; axe-core finds no serious or critical
violation; players are named, the countdown announced, the vote buttons readable.

One started Space and one browser for the module; every test opens its own context and page (so the fixtures
move onto a shared one as they are). `PAGE_APP_ROOT=/path/to/another/checkout` serves that checkout's app
instead (how each test was seen to fail on the code before issue 24).
"""
from __future__ import annotations

import re

from pathlib import Path

import pytest

from leaderboard.plots import NO_VOCAL_STATE_VOTES
from tests.support.browser import wait_for_playable, wait_for_vote
from tests.support.page_fixtures import DESKTOP, PageSpace, click_or_explain, open_page, seed_page

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
MODULE_DATABASE_FIXTURES = ("space",)   # the running app writes to the module's database (tests/conftest.py)


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    data = tmp_path_factory.mktemp("page")
    seed_page(data)
    app = PageSpace(data, {"EMPATHY_ARENA_SECRET_KEY": ""}).start()   # no key storage: Submit shows why
    yield app
    app.stop()


@pytest.fixture(scope="module")
def browser(chromium):
    return chromium


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
            page.traffic.settle(streams=True)       # the Submit tab's 3 s timer runs on every page
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

    from arena.services.service import ArenaService
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


# ------------------------------------------------------------------------------------------------ the arena
PLAYERS = ("#arena-audio-user", "#arena-audio-a", "#arena-audio-b")

# The points of an element's box that are on screen and show something else on top (whatever covers it: a fixed
# bar, a sticky header, a toast), as "tag#id.class" of the element hit.
COVERED_JS = """(sel) => {
  const el = document.querySelector(sel), r = el.getBoundingClientRect(), out = [];
  for (const fx of [0.05, 0.5, 0.95]) for (const fy of [0.1, 0.5, 0.9]) {
    const x = r.left + fx * r.width, y = r.top + fy * r.height;
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
    const hit = document.elementFromPoint(x, y);
    if (hit && !el.contains(hit)) out.push(hit.tagName + '#' + (hit.closest('[id]')?.id || '') + '.' + hit.className);
  }
  return out;
}"""
IN_VIEW_JS = """(sel) => {
  const e = document.querySelector(sel);
  if (!e || !e.getClientRects().length) return false;
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
}"""


def _db(space, sql: str, params=()) -> list[dict]:
    from eval_backend.store import Store
    return [dict(r) for r in Store(space.data_dir).query(sql, params)]


def _start_battle(page) -> str:
    old = page.evaluate("() => document.querySelector('.arena-meter')?.dataset.battle || ''")
    click_or_explain(page.locator("#arena-skip, #arena-next").filter(visible=True).first)
    page.wait_for_function("(old) => (document.querySelector('.arena-meter')?.dataset.battle || old) !== old", arg=old)
    page.wait_for_function("() => [...document.querySelectorAll('#arena-players audio')].length === 3 && "
                           "[...document.querySelectorAll('#arena-players audio')].every(a => a.currentSrc && a.duration > 0)")
    return page.evaluate("() => document.querySelector('.arena-meter').dataset.battle")


def _listen_fast(page) -> None:
    page.evaluate("() => { for (const a of document.querySelectorAll('#arena-players audio')) { a.playbackRate = 2; a.play(); } }")
    wait_for_vote(page, 60_000)


def _answer(page, radio: str, label: str) -> None:
    page.locator(f"#{radio} label", has_text=label).first.click()


def test_phone_no_fixed_element_covers_a_player_and_the_vote_ends_with_its_confirmation_and_next_on_screen(
        space, browser):
    from tests.support.page_fixtures import PHONE
    ctx, page = open_page(browser, space.url + "/", PHONE)
    try:
        _start_battle(page)
        for sel in PLAYERS:
            for block in ("start", "center", "end", "nearest"):
                page.evaluate("() => window.scrollTo(0, 0)")
                page.evaluate("([s, b]) => document.querySelector(s).scrollIntoView({block: b})", [sel, block])
                assert page.evaluate(COVERED_JS, sel) == [], (sel, block)
            page.evaluate("() => window.scrollTo(0, 0)")
            page.locator(sel).scroll_into_view_if_needed()           # what a tap or Playwright's click does
            assert page.evaluate(COVERED_JS, sel) == [], (sel, "if needed")
        _listen_fast(page)
        page.evaluate("() => document.querySelector('#arena-audio-b').scrollIntoView({block: 'end'})")
        page.locator("#arena-vote-b").click()                        # from the bar, scrolled down to reply B
        page.locator("#arena-send").click()                          # no aspect answered: send it as it is
        page.wait_for_selector("#arena-reveal", state="visible")
        page.wait_for_function("() => (document.getElementById('arena-message')?.innerText || '')"
                               ".includes('Vote recorded')")
        page.wait_for_function(IN_VIEW_JS, arg="#arena-next", timeout=10_000)
        assert page.evaluate(IN_VIEW_JS, "#arena-message") and page.evaluate(IN_VIEW_JS, "#arena-next")
        assert page.inner_text("#arena-next").strip().startswith("Next battle")
    finally:
        ctx.close()


def test_the_two_aspects_are_in_view_answerable_before_or_right_after_the_vote_and_counted_on_health(
        space, browser):
    from tests.support.page_fixtures import MODELS
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        # before the overall vote: both questions shown without opening anything; the vote goes at once
        first = _start_battle(page)
        assert page.locator("#arena-said").is_visible() and page.locator("#arena-sounded").is_visible()
        assert "What was said" in page.inner_text("#arena-said") and "How it sounded" in page.inner_text("#arena-sounded")
        _answer(page, "arena-said", "A")
        _answer(page, "arena-sounded", "B")
        _listen_fast(page)
        page.click("#arena-vote-b")
        page.wait_for_selector("#arena-reveal", state="visible")
        row = _db(space, "SELECT slot, said, sounded FROM arena_votes WHERE battle_id=?", (first,))[0]
        assert (row["slot"], row["said"], row["sounded"]) == ("B", "A", "B")
        shown = page.inner_text("#arena-players") + page.inner_text("#arena-reveal")
        assert "TrueSkill" not in shown and "±" not in shown and "μ" not in shown   # the board hides them

        # right after the overall vote: it waits, names hidden, until both aspects are answered
        second = _start_battle(page)
        _listen_fast(page)
        page.click("#arena-vote-a")
        page.wait_for_selector("#arena-send", state="visible")
        assert "not sent yet" in page.inner_text("#arena-axes")
        assert not any(m in page.inner_text("body") for m in MODELS)
        assert _db(space, "SELECT id FROM arena_votes WHERE battle_id=?", (second,)) == []
        _answer(page, "arena-said", "Tie")
        _answer(page, "arena-sounded", "A")
        page.wait_for_selector("#arena-reveal", state="visible")
        row = _db(space, "SELECT slot, said, sounded FROM arena_votes WHERE battle_id=?", (second,))[0]
        assert (row["slot"], row["said"], row["sounded"]) == ("A", "tie", "A")
    finally:
        ctx.close()

    from arena.tables.storage import aspect_counts
    from eval_backend.store import Store
    counts = aspect_counts(Store(space.data_dir))
    ctx, page = open_page(browser, space.url + "/?tab=health", DESKTOP)
    try:
        page.wait_for_function("() => (document.getElementById('health-aspects')?.innerText || '').includes('votes)')")
        text = page.inner_text("#health-aspects")
        said, sounded = (f"{100 * counts[k] / counts['votes']:.0f}%" for k in ("said", "sounded"))
        assert f"all votes: {said} carry what was said, {sounded} how it sounded (of {counts['votes']} votes)" in text
    finally:
        ctx.close()


def test_the_countdown_tells_the_truth_for_play_all_says_each_thing_once_and_goes_after_the_vote(space, browser):
    import re
    import time

    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        for _ in range(12):          # a battle whose reply A outlasts the 3 s asked: "play all" plays it to its end
            _start_battle(page)
            if page.evaluate("() => document.querySelector('#arena-audio-a audio').duration") >= 4.0:
                break
        else:
            raise AssertionError("no battle with a reply A of 4 s or more in the seeded data")
        page.keyboard.press("1")                           # too early: said once, not the countdown twice
        page.wait_for_function("() => /not yet/i.test(document.querySelector('.arena-meter')?.innerText || '')")
        meter = page.inner_text(".arena-meter-status") + " " + page.inner_text(".arena-meter-hint")
        assert len(re.findall(r"Vote in (about )?\d+ s|\d+ s of listening left", meter)) == 1, meter
        assert meter.count("still to hear") == 1, meter

        durations = page.evaluate("() => ['user', 'a', 'b'].map((k) => "
                                  "document.querySelector('#arena-audio-' + k + ' audio').duration)")
        page.keyboard.press("p")                           # play all in order: the user, A to its end, then B
        page.wait_for_function("() => /Vote in about \\d+ s/.test(document.querySelector('.arena-meter-status')"
                               "?.innerText || '')", polling=50)
        t0 = time.monotonic()
        promised = int(re.search(r"Vote in about (\d+) s", page.inner_text(".arena-meter-status")).group(1))
        truth = durations[0] + durations[1] + min(3.0, durations[2])
        assert abs(promised - truth) <= 1.0, (promised, durations)
        page.wait_for_function("() => (document.querySelector('.arena-meter-status')?.innerText || '')"
                               ".startsWith('All clips heard')", polling=50, timeout=60_000)
        took = time.monotonic() - t0
        assert promised - 2.0 <= took <= promised + 2.0, (promised, took)
        assert not page.evaluate("() => /not yet/i.test(document.querySelector('.arena-meter')?.innerText || '')")

        _answer(page, "arena-said", "A")
        _answer(page, "arena-sounded", "A")
        wait_for_vote(page)
        page.click("#arena-vote-a")
        page.wait_for_selector("#arena-reveal", state="visible")
        page.wait_for_function("() => !(document.querySelector('.arena-meter')?.innerText || '').trim()")
        assert not page.locator(".arena-meter-status").filter(visible=True).count()
    finally:
        ctx.close()


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text.lower())


def test_the_arena_board_never_says_no_votes_beside_votes_and_a_provisional_model_says_what_it_needs(
        space, browser):
    from arena.services.service import ArenaService
    from eval_backend.store import Store

    service = ArenaService(Store(space.data_dir))
    floor = service.settings.provisional_votes
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        page.get_by_role("tab", name="Arena leaderboard").click()
        page.wait_for_function("() => (document.getElementById('arena-board-table')?.innerText || '').includes('-model')")
        axes = [t.strip() for t in page.locator("#arena-board-axis label").all_inner_texts()]
        assert len(axes) >= 3
        for label, axis in zip(axes, ("overall", "said", "sounded", "speaker", "paralinguistic", "environment")):
            page.locator("#arena-board-axis label", has_text=label).first.click()
            page.traffic.settle(streams=True)
            panel = page.locator("[role=tabpanel]").filter(visible=True).first
            text = panel.inner_text() + " ".join(panel.locator("svg text").all_text_contents())
            rows = {r["model"]: r for r in service.ratings_table(axis)}
            with_votes = [m for m, r in rows.items() if r["votes"]]
            if with_votes:
                # the heat map's own note is true when none of the axis's votes is on an utterance with a vocal
                # state (the seeded battles are drawn at random): allowed then, and only then
                said = _compact(text)        # plotly wraps the note into lines whose words run together
                if not service.attribute_grid(axis):
                    said = said.replace(_compact(NO_VOCAL_STATE_VOTES), "")
                assert "novotes" not in said, (label, text[:2000])
            table = page.inner_text("#arena-board-table")
            for m in with_votes:
                r = rows[m]
                assert m in table, (label, m)
                if r["provisional"]:
                    assert f"{r['bt_votes']} of {floor} rated votes, {floor - r['bt_votes']} more to be ranked" in table
    finally:
        ctx.close()


# ------------------------------------------------------------------------------------------------ benchmark board
# Words of a table's header cells that the browser laid out on more than one line ("Ran k", "Selecti on").
BROKEN_WORDS_JS = """(id) => {
  const out = [];
  for (const th of document.querySelectorAll('#' + id + ' th')) {
    if (!th.getClientRects().length) continue;
    const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const re = /\\S+/g;
      let m;
      while ((m = re.exec(n.data))) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
    }
  }
  return out;
}"""
# After scrolling the table sideways as far as it goes: header cells cut off by whatever clips them (their own
# content overflowing them, or lying past the clipping box's edge).
CLIPPED_JS = """(id) => {
  const root = document.getElementById(id);
  for (const e of [root, ...root.querySelectorAll('*')]) {
    const o = getComputedStyle(e).overflowX;
    if ((o === 'auto' || o === 'scroll') && e.scrollWidth > e.clientWidth) e.scrollLeft = e.scrollWidth;
  }
  const out = [];
  for (const th of root.querySelectorAll('th')) {
    if (!th.getClientRects().length) continue;
    let clip = th.parentElement;
    while (clip && clip !== document.body && getComputedStyle(clip).overflowX === 'visible') clip = clip.parentElement;
    const edge = clip && clip !== document.body ? clip.getBoundingClientRect().right : innerWidth;
    const r = th.getBoundingClientRect();
    if (th.scrollWidth > th.clientWidth + 1 || r.right > Math.min(edge, innerWidth) + 1)
      out.push([th.innerText.trim(), Math.round(r.right), Math.round(edge)]);
  }
  return out;
}"""


def _open_bench(browser, space, device):
    ctx, page = open_page(browser, space.url + "/", device)
    page.get_by_role("tab", name="Benchmark leaderboard").click()
    page.wait_for_function("() => (document.getElementById('bench-table')?.innerText || '').includes('-model') && "
                           "(document.getElementById('bench-reported')?.innerText || '').includes('reported')")
    page.traffic.settle(streams=True)
    return ctx, page


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_benchmark_headers_never_break_inside_a_word_and_no_column_is_clipped(space, browser, device):
    from tests.support.page_fixtures import DEVICES
    ctx, page = _open_bench(browser, space, DEVICES[device])
    try:
        for table in ("bench-table", "bench-reported"):
            page.locator(f"#{table}").scroll_into_view_if_needed()
            assert page.evaluate(CLIPPED_JS, table) == [], table
            assert page.evaluate(BROKEN_WORDS_JS, table) == [], table
    finally:
        ctx.close()


def test_benchmark_table_starts_above_the_fold_and_its_csv_holds_numbers(space, browser):
    import csv

    from leaderboard.results_table import INFO_COLUMNS
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        page.get_by_role("tab", name="Benchmark leaderboard").click()
        page.wait_for_function("() => (document.getElementById('bench-table')?.innerText || '').includes('-model')")
        first_row = page.evaluate("""() => {
          const cells = [...document.querySelectorAll('#bench-table td, #bench-table .body-cell')]
            .filter((c) => /-model/.test(c.textContent));
          return cells.length ? cells[0].getBoundingClientRect().bottom : null;
        }""")
        assert first_row is not None and first_row <= 800, first_row     # header and first row on screen
        with page.expect_download() as got:
            page.click("#bench-csv")
        with open(got.value.path(), newline="") as f:
            rows = list(csv.DictReader(f))
        assert rows and "notes" in rows[0]
        for row in rows:
            for col, value in row.items():
                if col in INFO_COLUMNS or col == "notes" or value == "":
                    continue
                float(value)                                 # a number column holds a number, or nothing
            if row["source"] == "measured here":           # no audio judge here: LB2 is not computed
                assert row["LB2"] == "" and "LB2: not computed" in row["notes"], row
    finally:
        ctx.close()


# ------------------------------------------------------------------------------------------------ browse, submit
ERROR_TOASTS = "() => [...document.querySelectorAll('.toast-body, [data-testid=\"toast-body\"]')].map(t => t.innerText)"
RAW_REQUEST_ID = r"\b(conversation|context|tone|asr|mcq_understanding|mcq_reasoning|selection)/[^/\s]+/[^/\s]+"


def test_browse_opens_on_a_playable_reply_survives_a_quick_collection_switch_and_samples_read_for_people(
        space, browser):
    import re
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        page.get_by_role("tab", name="Browse benchmark").click()
        collections = page.locator("[role=tabpanel]").filter(visible=True).first.locator("label", has=page.locator(
            "input[type=radio]"))
        collections.first.wait_for()
        names = [t.strip() for t in collections.all_inner_texts()]
        assert len(names) >= 3
        for name in names[1:] + names[:1]:                 # switch at once, while the tab's load is still running
            collections.filter(has_text=name).first.click()
        page.traffic.settle(streams=True)
        assert not [t for t in page.evaluate(ERROR_TOASTS) if "not in the list of choices" in t or "Error" in t]
        wait_for_playable(page, "#browse-reply-audio audio")
        empty = page.evaluate("() => [...document.querySelectorAll('[role=tabpanel] audio')]"
                              ".filter(a => a.getClientRects().length && !a.getAttribute('src')).length")
        assert empty == 0                                   # no empty, disabled player on show
        request = page.inner_text("#browse-request")
        assert not re.search(RAW_REQUEST_ID, request), request
    finally:
        ctx.close()
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        page.get_by_role("tab", name="Benchmark leaderboard").click()
        page.wait_for_function("() => (document.getElementById('bench-table')?.innerText || '').includes('-model')")
        page.locator("#bench-table").get_by_text("warm-model", exact=True).filter(visible=True).first.click()
        page.wait_for_function("() => (document.getElementById('model-page-sample-0')?.innerText || '').includes('“')")
        samples = " ".join(page.locator("[id^=model-page-sample-]").all_inner_texts())
        assert not re.search(RAW_REQUEST_ID, samples), samples
        assert "Conversation: “" in samples or "another situation: “" in samples, samples
    finally:
        ctx.close()


# Large parts of a box coloured unlike the page with nothing drawn on them (Gradio's grey group background under columns of
# unequal height): sampled every 16 px, the points where the box itself is the top element.
FILLER_JS = """() => {
  const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.getClientRects().length);
  const effective = (e) => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor;
    if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; } return 'rgb(255, 255, 255)'; };
  const page = effective(panel), out = [];
  for (const e of panel.querySelectorAll('div, section, form, fieldset')) {
    if (!e.getClientRects().length) continue;
    const bg = getComputedStyle(e).backgroundColor;
    if (bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent' || bg === page) continue;
    const r = e.getBoundingClientRect();
    let bare = 0;
    for (let x = r.left + 8; x < r.right; x += 16) for (let y = r.top + 8; y < r.bottom; y += 16) {
      if (y < 0 || y >= innerHeight || x < 0 || x >= innerWidth) continue;
      if (document.elementFromPoint(x, y) === e) bare++;
    }
    if (bare >= 40) out.push([e.id || e.className, bare]);
  }
  return out;
}"""


def test_submit_has_no_key_box_when_keys_are_not_accepted_and_no_grey_filler(space, browser):
    ctx, page = open_page(browser, space.url + "/", DESKTOP)
    try:
        page.get_by_role("tab", name="Submit").click()
        page.locator("#submit-key-note").wait_for(state="visible")       # the Space has no key storage set up
        shown = page.inner_text("#submit-key-note")                     # the reason, and no key box at all
        assert not page.locator("#submit-api-key").is_visible()
        assert "not accepted on this Space" in shown and "encrypted storage" in shown
        assert "stored encrypted, deleted" not in shown
        labels = page.locator("[role=tabpanel] label").filter(visible=True).all_inner_texts()
        assert not [t for t in labels if "API key" in t], labels
        page.wait_for_function("() => (document.getElementById('submit-identity')?.innerText || '').trim()")
        page.set_viewport_size({"width": 1366, "height": page.evaluate("() => document.body.scrollHeight")})
        page.traffic.settle(streams=True)      # Gradio's progress bar over a box whose event still runs is not filler
        page.wait_for_function("() => ![...document.querySelectorAll('.eta-bar')].some((e) => e.getClientRects().length)")
        assert page.evaluate(FILLER_JS) == []
    finally:
        ctx.close()


# ------------------------------------------------------------------------------------------------ accessibility
AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ' :: ' +
                 (n.failureSummary || '').split('\\n').slice(0, 2).join(' ').slice(0, 200))}));
}"""


def axe_violations(page) -> list[dict]:
    """axe-core (npm, tests/axe: installed by scripts/setup.sh --test) run on the page as it is now: its serious
    and critical violations."""
    page.add_script_tag(path=str(AXE))
    return page.evaluate(AXE_RUN)


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_axe_finds_no_serious_or_critical_violation_on_any_tab_with_a_battle_open_and_after_a_vote(
        space, browser, device):
    from tests.support.page_fixtures import DEVICES
    assert AXE.is_file(), "axe-core is missing: run `bash scripts/setup.sh --test` (npm ci --prefix tests/axe)"
    found = {}
    ctx, page = open_page(browser, space.url + "/", DEVICES[device])
    try:                    # each tab in turn on one page, as a visitor goes (a fresh page a tab: the link test's)
        for tab in public_tabs():
            page.get_by_role("tab", name=tab.label, exact=True).click()
            page.wait_for_function(f"(label) => ({SELECTED_TAB})() === label", arg=tab.label)
            page.traffic.settle(streams=True)
            found[tab.id] = axe_violations(page)
    finally:
        ctx.close()
    assert set(found) == {t.id for t in public_tabs()}
    assert {k: v for k, v in found.items() if v} == {}
    ctx, page = open_page(browser, space.url + "/", DEVICES[device])
    try:
        _start_battle(page)
        page.traffic.settle(streams=True)
        found["battle open"] = axe_violations(page)
        _listen_fast(page)
        _answer(page, "arena-said", "A")
        _answer(page, "arena-sounded", "Tie")
        page.click("#arena-vote-b")
        page.wait_for_selector("#arena-reveal", state="visible")
        page.traffic.settle(streams=True)
        found["after a vote"] = axe_violations(page)
    finally:
        ctx.close()
    assert {k: v for k, v in found.items() if v} == {}


def test_players_are_named_the_countdown_is_announced_and_vote_buttons_have_contrast(space, browser):
    """What axe cannot see in one snapshot: the names of the three players, a live region that says when the
    vote unlocks, and the colours of the vote buttons both locked and unlocked (axe skips disabled controls)."""
    from tests.support.page_fixtures import PHONE
    contrast = """async (sel) => {
      await Promise.all(document.querySelector(sel).getAnimations({subtree: true}).map((a) => a.finished));
      const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
      const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                                   return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
      const el = document.querySelector(sel), cs = getComputedStyle(el);
      let bg = cs.backgroundColor, e = el;
      while (rgb(bg).length === 4 && rgb(bg)[3] === 0 && e.parentElement) { e = e.parentElement; bg = getComputedStyle(e).backgroundColor; }
      let op = 1; for (let x = el; x; x = x.parentElement) op *= Number(getComputedStyle(x).opacity);
      const fg = rgb(cs.color).slice(0, 3).map((v, i) => op * v + (1 - op) * rgb(bg)[i]);
      const [a, b] = [lum(fg), lum(rgb(bg).slice(0, 3))].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    }"""
    ctx, page = open_page(browser, space.url + "/", PHONE)
    try:
        assert page.evaluate(contrast, "#arena-next") >= 4.5                 # a primary button
        _start_battle(page)
        names = page.evaluate("() => [...document.querySelectorAll('#arena-players audio')]"
                              ".map((a) => a.getAttribute('aria-label'))")
        assert names == ["The user says", "Reply A", "Reply B"]
        for sel in ("#arena-vote-a", "#arena-vote-tie"):
            assert page.locator(sel).is_disabled()
            assert page.evaluate(contrast, sel) >= 4.5, sel
        live = "() => [...document.querySelectorAll('.arena-meter [aria-live]')].map((e) => e.textContent).join(' | ')"
        assert "unlocks after about" in page.evaluate(live)
        _listen_fast(page)
        page.wait_for_function(f"() => ({live})().includes('you can vote')")
        for sel in ("#arena-vote-a", "#arena-vote-tie"):
            assert page.evaluate(contrast, sel) >= 4.5, sel
    finally:
        ctx.close()
