"""The arena board's style control and vocal states in a real browser (Debian chromium) against a real app process:
the style-controlled rank beside the plain one, the covariates' effects in words, the vocal-state picker that
re-ranks the table, and the models x vocal states heat map with its provisional cells greyed and labelled.

The vote log is imported (arena/core/votes_io.py, tests/support/vote_logs.py): 'ear' hears sadness and misses whispers,
the other two differ only in length, and length sways votes; one vocal state ('breathless') has too few votes."""
from __future__ import annotations

import csv

import pytest

from arena.services.service import ArenaService
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import new_page
from tests.support.vote_logs import vocal_state_log

MODULE_DATABASE_FIXTURES = ("app",)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("style_board")
    seed(data, ("warm-model", "flat-model"), n_scripts=1)
    votes = vocal_state_log(data / "votes.csv", hears=0.9)
    with votes.open("a", newline="") as f:
        csv.writer(f).writerows(["ear", "flat", "ear", "breathless", 3, 4, 1_767_001_000 + k] for k in range(6))
    assert ArenaService(Store(data)).import_votes(votes) == 306
    proc = AppProcess(data).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def page(app, chromium):
    return new_page(chromium, 60_000)


def _table_rows(page) -> list[list[str]]:
    return page.evaluate("() => [...document.querySelectorAll('#arena-board-table .virtual-row')]"
                         ".map(r => [...r.querySelectorAll('.body-cell')].map(c => c.innerText.trim()))")


def _headers(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('#arena-board-table th.header-cell')]"
                         ".map(th => th.innerText.trim())")


def _pick(page, label: str) -> None:
    page.locator("#arena-board-attribute input").click()
    page.get_by_role("option", name=label, exact=True).click()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_style_rank_effects_vocal_states_and_the_heat_map(app, page):
    page.goto(app.url + "/")
    page.get_by_role("tab", name="Arena leaderboard").click()
    page.wait_for_function("() => (document.querySelector('#arena-board-style')?.innerText || '').includes('twice')")
    headers = _headers(page)
    assert headers.index("rank, all else equal") == headers.index("rank") + 1     # beside the plain rank
    rows = _table_rows(page)
    style = [r[headers.index("rank, all else equal")] for r in rows]
    assert len(rows) == 3 and all(s.isdigit() for s in style)
    text = page.inner_text("#arena-board-style")
    assert "when one reply is twice as long as the other, it wins" in text and "fitted on 306 battles" in text
    assert "Loudness: not estimated (not measured in these battles)" in text

    # the vocal-state picker re-ranks the table on that state's battles only
    model = headers.index("model")
    _pick(page, "sad (paralinguistic: emotion)")
    page.wait_for_function("() => (document.querySelector('#arena-board-style')?.innerText || '').includes('sad')")
    assert _table_rows(page)[0][model] == "ear"
    _pick(page, "whisper (paralinguistic: volume)")
    page.wait_for_function("() => (document.querySelector('#arena-board-style')?.innerText || '').includes('whisper')")
    assert _table_rows(page)[-1][model] == "ear"
    _pick(page, "breathless (paralinguistic: physiological)")
    page.wait_for_function("() => (document.querySelector('#arena-board-table')?.innerText || '')"
                           ".includes('too few votes')")
    assert {r[model] for r in _table_rows(page)} == {"ear", "flat"}

    # the heat map: one row per model, one column per vocal state; breathless cells grey and labelled
    plot = page.locator("#arena-board-states")
    plot.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelectorAll('#arena-board-states .heatmaplayer').length > 0")
    labels = page.evaluate("() => [...document.querySelectorAll('#arena-board-states text')].map(t => t.textContent)")
    assert "too few votes (6)" in labels and "breathless" in labels and "sad" in labels and "whisper" in labels
    bg = page.evaluate("() => document.querySelector('#arena-board-states .bg')?.getAttribute('style') || ''")
    assert "217, 217, 217" in bg                          # the grey a provisional (empty) cell shows


# ---------------------------------------------------------------- the views' pure parts (no browser)
def test_style_columns_effects_and_heat_map_from_rows():
    import pandas as pd

    from arena.core import raters
    from leaderboard import arena_style_views as views

    rows = [raters.RatingRow("a", 25, 1, votes=80, scores={"bt": raters.Score(1010, 990, 1030, 1, False, 80),
                                                           "style_bt": raters.Score(995, 975, 1015, 2, False, 80)}),
            raters.RatingRow("b", 24, 1, votes=12, scores={"bt": raters.Score(votes=12),
                                                           "style_bt": raters.Score(votes=12)})]
    table = pd.DataFrame([{"rank": 1, "model": "a", "BT 95% interval": "990 – 1030"},
                          {"rank": "—", "model": "b", "BT 95% interval": "too few votes"}])
    out = views.with_style_columns(table, rows, 30)
    assert list(out.columns) == ["rank", views.STYLE_RANK, "model", "BT 95% interval", views.STYLE_SCORE]
    assert out[views.STYLE_RANK].tolist() == [2, "—"]
    assert out[views.STYLE_SCORE].tolist() == ["995 (975 – 1015)", "too few votes (12 of 30)"]
    assert views.with_style_columns(table.iloc[:1], rows, 30).equals(table.iloc[:1])     # "no votes" line kept
    assert "not estimated yet" in views.effects_markdown({"battles": 0, "effects": {}})
    md = views.effects_markdown({"battles": 40, "rounds": 10, "effects": {
        "duration": {"coef": 0.3, "low": 0.1, "high": 0.5}, "latency": {"coef": None,
                                                                     "not_fitted": "the difference between the two "
                                                                                   "heard clips never varied"}}})
    assert "fitted on 40 battles" in md and "twice as long" in md
    assert "no battle here made its voter wait longer for one reply than for the other" in md
    assert "**\\<b\\>x\\<\\/b\\>**" in views.attribute_note("<b>x</b>")        # an imported name stays text
    choices = views.attribute_choices(["neutral", "sad", "made-up"])
    assert choices == [("Every battle", ""), ("neutral (plainly spoken)", "neutral"),
                       ("sad (paralinguistic: emotion)", "sad"), ("made-up", "made-up")]
    grid = {"sad": {"a": raters.Score(1050, 1020, 1080, 1, False, 40), "b": raters.Score(votes=4)},
            "whisper": {"a": raters.Score(950, 920, 980, 1, False, 35)}}
    fig = views.heat_map(grid, 30)
    heat = fig.data[0]
    assert list(heat.y) == ["a", "b"] and list(heat.x) == ["sad", "whisper"]
    assert list(heat.text[1]) == ["too few votes (4)", ""] and list(heat.z[0]) == [1050.0, 950.0]
    assert "b, whisper: no votes" in heat.customdata[1][1]
