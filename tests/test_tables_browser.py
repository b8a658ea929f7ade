"""Issue 15 in a real browser (Debian chromium via Playwright): the leaderboard tabs of app.py's page
(tests/support/tables_app.py: build_blocks with the Arena leaderboard, Benchmark leaderboard and Integrity
health tabs) over real scorer results and imported arena votes.

1. every plot's text (titles, axis and tick labels, legends, point labels such as "cascade-cue") lies within
   its figure at 1440×900 and at 390×844;
2. a shared link with ?tab= opens that tab with its filters; choosing a tab writes ?tab= into the address;
3. headers carry their id as a tooltip, "— [n]" cells their note; a search that matches nothing shows a row
   saying so;
4. a row click fills the model page and scrolls it into view.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import ServerProcess, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parent.parent
SIZES = ((1440, 900), (390, 844))
TAB_NAMES = {"bench-board": "Benchmark leaderboard", "arena-board": "Arena leaderboard", "health": "Integrity health"}
PLOTS = {"bench-board": ("bench-radar", "bench-scatter"),
         "arena-board": ("arena-board-intervals", "arena-board-states", "arena-board-winrate", "arena-board-counts",
                         "arena-board-history"),
         "health": ("health-plot",)}
MODULE_DATABASE_FIXTURES = ("app",)

# Every non-empty SVG text of a plot, with how far it reaches outside its figure (the plot's main svg) on
# each side; a text plotly clips (a title running off a phone's screen, a point label cut at the axes) reaches out.
OUTSIDE_JS = """(id) => {
  const plot = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!plot) return null;
  const box = plot.querySelector('.main-svg').getBoundingClientRect();
  const texts = [];
  for (const t of plot.querySelectorAll('svg text')) {
    const r = t.getBoundingClientRect(), s = (t.textContent || '').trim();
    if (!s || !r.width) continue;
    texts.push({text: s, out: Math.max(box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom)});
  }
  return {width: box.width, texts};
}"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from tests.support.tables_app import seed_tables

    root = tmp_path_factory.mktemp("tables")
    data = seed_tables(root)
    port = free_port()
    proc = ServerProcess(["-m", "tests.support.tables_app", "--port", str(port), "--data-dir", str(data)],
                         root / "app.log", {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"},
                         stop_timeout=30)
    try:
        proc.start(f"http://127.0.0.1:{port}/", 180)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser(chromium):
    return chromium


def _page(browser, size=(1440, 900)):
    pg = browser.new_page(viewport={"width": size[0], "height": size[1]})
    pg.set_default_timeout(60_000)
    return pg


def _wait_text(pg, elem_id: str, needle: str) -> None:
    pg.wait_for_function("([id, s]) => (document.getElementById(id)?.innerText || '').includes(s)",
                         arg=[elem_id, needle])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}px")
def test_plot_titles_and_labels_lie_within_their_figures(app, browser, size):
    pg = _page(browser)                               # every tab button is shown at 1440 px
    try:
        for tab, plots in PLOTS.items():
            pg.set_viewport_size({"width": 1440, "height": 900})
            pg.goto(app, wait_until="load")
            pg.get_by_role("tab", name=TAB_NAMES[tab]).click()
            pg.set_viewport_size({"width": size[0], "height": size[1]})     # plotly re-lays out to the width
            for pid in plots:
                pg.wait_for_function("(id) => document.querySelector('#' + id + ' .js-plotly-plot .main-svg')", arg=pid,
                                     timeout=120_000)
            pg.wait_for_timeout(800)                  # plotly's automargin settles in a second pass
            for pid in plots:
                got = pg.evaluate(OUTSIDE_JS, pid)
                assert got and len(got["texts"]) >= 3, (pid, got)
                assert got["width"] <= size[0]
                outside = [(t["text"], round(t["out"])) for t in got["texts"] if t["out"] > 1]
                assert not outside, f"{pid} at {size[0]} px: text outside the figure {outside}"
            if tab == "bench-board":      # the scatter's point labels are there (and, above, within the figure)
                labels = [t["text"] for t in pg.evaluate(OUTSIDE_JS, "bench-scatter")["texts"]]
                assert {"cascade-cue", "good", "half"} <= set(labels), labels
    finally:
        pg.close()


def test_a_shared_link_opens_its_tab_with_its_filters_and_a_tab_choice_is_linkable(app, browser):
    pg = _page(browser)
    try:
        pg.goto(f"{app}?tab=bench-board&q=cascade", wait_until="load")
        _wait_text(pg, "bench-table", "cascade-cue")
        assert pg.locator("button[role=tab][aria-selected=true]").inner_text().strip() == "Benchmark leaderboard"
        assert "good" not in pg.inner_text("#bench-table").split()
        # a filter change keeps the link pointing at this tab
        pg.locator("#bench-sort label", has_text="LB3").click()
        pg.wait_for_function("() => location.search.includes('sort=LB3')")
        assert "tab=bench-board" in pg.url and "q=cascade" in pg.url
        pg.get_by_role("tab", name="Integrity health").click()
        pg.wait_for_function("() => location.search.includes('tab=health')")
        pg.goto(pg.url, wait_until="load")             # the link as shared: opens on the health tab
        pg.wait_for_function("() => document.querySelector('button[role=tab][aria-selected=true]')"
                             "?.innerText.trim() === 'Integrity health'")
    finally:
        pg.close()


def test_headers_and_notes_have_tooltips_and_an_empty_search_says_so(app, browser):
    pg = _page(browser)
    try:
        pg.goto(f"{app}?groups=0", wait_until="load")
        pg.get_by_role("tab", name="Benchmark leaderboard").click()
        _wait_text(pg, "bench-table", "cascade-cue")
        pg.wait_for_function("() => [...document.querySelectorAll('#bench-table th')].some(t => t.title === 'l1.understanding_acc')")
        heads = pg.evaluate("() => [...document.querySelectorAll('#bench-table th')].map(t => [t.innerText.trim(), t.title])")
        assert ["Understanding accuracy", "l1.understanding_acc"] in heads
        assert not any(h.startswith(("l1.", "l2.", "l3.", "sel.", "audio.")) for h, _ in heads), heads
        notes = pg.inner_text("#bench-notes")
        assert "[1] " in notes and "not computed" not in notes
        titled = pg.evaluate("() => [...document.querySelectorAll('#bench-table .body-cell')]"
                             ".filter(c => /^— \\[\\d+\\]$/.test(c.textContent.trim())).map(c => [c.textContent.trim(), c.title])")
        assert titled and all(t for _, t in titled), titled
        widest = pg.evaluate("() => Math.max(...[...document.querySelectorAll('#bench-table .body-cell')]"
                             ".map(c => c.textContent.trim().length))")
        assert widest <= 60
        pg.locator("#bench-search").locator("input, textarea").first.fill("no-such-model-zzz")
        pg.locator("#bench-search").locator("input, textarea").first.press("Enter")
        _wait_text(pg, "bench-table", "no model matches these filters")
        _wait_text(pg, "bench-reported", "no reported row matches these filters")
    finally:
        pg.close()


def test_a_row_click_brings_the_filled_model_page_into_view(app, browser):
    pg = _page(browser)
    try:
        pg.goto(app, wait_until="load")
        pg.get_by_role("tab", name="Benchmark leaderboard").click()
        _wait_text(pg, "bench-table", "cascade-cue")
        top = pg.evaluate("() => document.getElementById('model-page').getBoundingClientRect().top")
        assert top > 900                                    # below the first screen before the click
        pg.locator("#bench-table").get_by_text("cascade-cue", exact=True).filter(visible=True).first.click()
        _wait_text(pg, "model-page-head", "cascade-cue")
        pg.wait_for_function("() => { const r = document.getElementById('model-page').getBoundingClientRect();"
                             " return r.top >= -5 && r.top < window.innerHeight / 2; }", timeout=10_000)
        assert pg.evaluate("() => window.scrollY") > 0
    finally:
        pg.close()
