"""Readable tables and plots that fit (issue 15): what the page shows, built from real scorer results.

Headers are human names (never an internal id), cells are short (≤ 60 characters, reasons as numbered notes),
a filter that matches nothing says so in a row, shares read as percentages, counts tick in whole numbers, the
health chart's window follows the data and the vote CSV carries readable UTC times that re-import exactly.
"""
from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from eval_backend.scoring.labels import METRIC_LABELS, looks_like_id, metric_label
from eval_backend.scoring.registry import METRICS
from leaderboard import results_table as rt
from tests.support.results_fixtures import scored_results

LIMIT = rt.MAX_CELL


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    _, d = scored_results(tmp_path_factory.mktemp("readable"))
    return d


def _internal_ids() -> set[str]:
    from eval_backend.scoring.results import load_metric_modules
    load_metric_modules()
    return set(METRICS) | {c for c, _, _ in rt.PAPER_COLUMNS.values()} | {f"{m}{rt.CI_SUFFIX}" for m in METRICS}


def _page(df, groups, state) -> tuple[pd.DataFrame, pd.DataFrame, rt.Notes]:
    measured, paper = rt.sections(rt.apply_filters(df, groups, state))
    notes = rt.Notes()
    return rt.readable(measured, notes), rt.readable(paper, notes), notes


def _check_readable(frame: pd.DataFrame, ids: set[str]) -> None:
    for h in frame.columns:
        assert h not in ids and not looks_like_id(h), f"header {h!r} is an internal id"
    long = [(c, v) for c in frame.columns for v in frame[c] if len(str(v)) > LIMIT]
    assert not long, long[:3]
    assert frame.columns.is_unique


def many_not_computed_doc(model: str) -> dict:
    """A result in which every registered metric failed, with the long reasons real failures carry."""
    ids = _internal_ids()
    metrics = {}
    for i, name in enumerate(sorted(m for m in ids if m in METRICS)):
        why = ["not computed: no judge configured", "not computed: error: RuntimeError: " + "x" * 300,
               f"not computed: emotion2vec configured at /very/long/{'p' * 80} but funasr is not installed",
               "not computed: no stored replies for task conversation"][i % 4]
        metrics[name] = {"family": METRICS[name].family, "value": None, "reason": why, "ci95": None}
    reason = "not computed: " + "; ".join(f"{n} not computed: no judge configured" for n in sorted(METRICS)[:6])
    return {"manifest": {"model": model, "benchmark": {"name": "demo", "version": "1", "hash": "h"},
                         "timestamp": "2026-11-23T00:00:00Z"},
            "metrics": metrics,
            "boards": {"LB1": {"value": None, "reason": reason}, "LB2": {"value": 3.1, "source": "audio.dnsmos_ovrl"},
                       "LB3": {"value": None, "reason": reason}, "selection": {"value": None, "reason": reason}}}


def test_headers_are_names_and_cells_are_short_on_scored_results_and_the_papers_rows(docs):
    ids = _internal_ids()
    df, groups = rt.build_table(docs, {}, rt.load_reported())
    for state in (rt.FilterState(), rt.FilterState(all_columns=True),
                  rt.FilterState(groups=rt.GROUPS, intervals=True)):
        measured, paper, notes = _page(df, groups, state)
        _check_readable(measured, ids)
        _check_readable(paper, ids)
        assert "Understanding accuracy" in measured.columns or not state.groups and not state.all_columns
    # the default view: the headline columns (boards and their intervals), not every metric
    measured, _, notes = _page(df, groups, rt.FilterState())
    assert list(measured.columns) == ["Rank", "Model", "Type"] + [
        h for b in rt.BOARDS for h in (rt.BOARD_LABELS[b], f"{rt.BOARD_SHORT[b]} 95% CI")]
    # a not-computed board is "— [n]" and note n says why, in plain words (no "not computed:" stutter)
    good = measured.set_index("Model").loc["good"]
    cell = good[rt.BOARD_LABELS["LB3"]]
    assert cell.startswith("— [") and good[rt.BOARD_LABELS["LB1"]] == "1.000"
    n = int(cell[3:-1])
    text = {v: k for k, v in notes.numbers.items()}[n]
    assert "judge" in text and "not computed" not in text and "l3." not in text
    assert f"[{n}] " in notes.markdown()
    # the header tooltips and the legend know every header's id
    tips = rt.header_ids()
    assert tips["ASR word error rate"] == "l1.asr_wer" and tips[rt.BOARD_LABELS["LB1"]] == "LB1"


def test_a_result_full_of_not_computed_cells_stays_narrow_and_speaks_plainly():
    docs = {"broken": many_not_computed_doc("broken"), "x" * 64: many_not_computed_doc("x" * 64)}
    df, groups = rt.build_table(docs, {})
    measured, _, notes = _page(df, groups, rt.FilterState(all_columns=True))
    _check_readable(measured, _internal_ids())
    assert len(measured.columns) > 40                       # every metric and interval column is there
    cells = {v for c in measured.columns for v in measured[c]}
    assert not any("not computed" in str(v) for v in cells)
    assert any(str(v).startswith("— [") for v in cells)
    lb2 = measured[rt.BOARD_LABELS["LB2"]].iloc[0]          # filled from DNSMOS by an older scorer: not shown
    assert lb2.startswith("— [")
    for text in notes.numbers:
        assert len(text) <= rt.MAX_NOTE and "rescore" not in text and "/very/long" not in text
        assert "RuntimeError" not in text                    # an exception's text is for the operator's log
        assert not any(m in text for m in METRIC_LABELS if looks_like_id(m)), text
    # the long model name is shortened in its cell (the row click reads the full name from the page's state)
    assert max(len(v) for v in measured["Model"]) <= LIMIT


def test_a_filter_that_matches_nothing_says_so_in_a_row(docs):
    df, groups = rt.build_table(docs, {}, rt.load_reported())
    measured, paper, _ = _page(df, groups, rt.FilterState(search="no-such-model-zzz"))
    assert len(measured) == 1 and measured.iloc[0]["Model"] == rt.NO_RESULTS
    assert list(measured.columns)[:3] == ["Rank", "Model", "Type"]
    assert len(paper) == 1 and paper.iloc[0]["Model"] == rt.NO_RESULTS


def test_the_url_carries_all_columns_and_unknown_metrics_get_a_name():
    st = rt.FilterState(all_columns=True, groups=("Selection",))
    assert rt.state_from_query(rt.state_to_query(st)) == st and rt.state_to_query(st)["all"] == "1"
    assert metric_label("x.speech_rate") == "Speech rate (x)" and not looks_like_id(metric_label("x.speech_rate"))
    assert metric_label("l1.asr_wer") == "ASR word error rate"


def test_model_page_and_agreement_tables_read_plainly(docs):
    import types

    from leaderboard.bench_tab import metric_agreement_frame
    from leaderboard.model_page import breakdown_frame, other_breakdowns, placeholder

    frame = other_breakdowns(docs["half"])
    assert "Understanding accuracy" in frame.columns and not any(looks_like_id(c) for c in frame.columns)
    assert len(breakdown_frame(docs["half"], "attribute")) == 0
    empty = placeholder("attribute", "choose a model above")
    assert list(empty.columns) == ["attribute", "note"] and len(empty) == 1     # real headers, never "1 2 3"
    none = metric_agreement_frame(types.SimpleNamespace(arena=None), docs)
    assert all(len(str(v)) <= LIMIT for v in none.iloc[0])


def test_health_table_shows_shares_as_percentages():
    from leaderboard.health_tab import health_frame

    rows = [{"start_utc": "2026-11-23 17:00", "served": 4, "accepted": 2, "refused": 1, "attempts": 3,
             "refused_by_reason": {"too_fast": 1}, "counted_share": 2 / 3},
            {"start_utc": "2026-11-23 18:00", "served": 1, "accepted": 0, "refused": 0, "attempts": 0,
             "refused_by_reason": {}, "counted_share": None}]
    f = health_frame(rows)
    assert list(f["counted share"]) == ["67%", "—"]
    assert health_frame([]).iloc[0]["hour (UTC)"].startswith("no battle")


def test_health_chart_window_follows_the_data_and_counts_tick_in_whole_numbers():
    from arena.services.health import health_figure

    hour = 3600.0
    rows = [{"start": i * hour, "start_utc": f"h{i}", "served": 0, "accepted": 0, "refused": 0, "attempts": 0,
             "refused_by_reason": {}, "counted_share": None} for i in range(7 * 24)]
    rows[-1].update(served=3, accepted=2, refused=1, attempts=3, refused_by_reason={"too_fast": 1},
                    counted_share=2 / 3)
    fig = health_figure(rows, 0.5)
    assert list(fig.data[0].x) == ["h167"]                  # one hour of data fills the chart, not 7 days of gaps
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.tickformat == "d"
    assert fig.layout.yaxis2.tickformat == ".0%"


def test_plots_use_whole_number_ticks_for_counts_and_percent_for_shares():
    from leaderboard import plots

    hist = plots.rating_history_chart({"a": ([1, 2, 3], [25.0, 26.0, 27.0], [8.0, 7.0, 6.0])})
    assert hist.layout.xaxis.dtick == 1 and hist.layout.xaxis.tickformat == "d"
    counts = plots.battle_count_heatmap(["a", "b"], [[None, 3], [3, None]])
    assert counts.data[0].colorbar.dtick == 1
    wins = plots.win_rate_heatmap(["a", "b"], [[None, 2 / 3], [1 / 3, None]])
    assert wins.data[0].text[0][1] == "67%" and wins.data[0].colorbar.tickformat == ".0%"
    text, n = plots.wrap_title("Battles the row model won against the column model (ties = ½)")
    assert n > 1 and all(len(line) <= plots.TITLE_CHARS for line in text.split("<br>"))


def test_vote_csv_has_iso_utc_times_and_reimports_exactly():
    from arena.tables.storage import VoteRow
    from arena.core.votes_io import UNIX_COLUMN, format_votes, parse

    votes = [VoteRow(1, "a", "b", "a", "A", None, None, None, "A", None, None, "h", "r1", 1767261600.123456, "live"),
             VoteRow(2, "b", "a", "tie", "tie", None, None, None, None, None, None, "h", "r2", 1767265200.0, "live")]
    text = format_votes(votes, "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["created_at"] == "2026-01-01T10:00:00.123Z" and rows[1]["created_at"] == "2026-01-01T11:00:00.000Z"
    assert float(rows[0][UNIX_COLUMN]) == 1767261600.123456
    back = parse("votes.csv", text, default_time=0.0)
    assert [r["created_at"] for r in back] == [v.created_at for v in votes]
    # a CSV edited by hand without the exact column still imports from the ISO time
    no_unix = "model_a,model_b,winner,created_at\na,b,a,2026-01-01T10:00:00.000Z\n"
    assert parse("v.csv", no_unix, default_time=0.0)[0]["created_at"] == 1767261600.0
    assert '"created_at": 1767261600.123456' in format_votes(votes, "jsonl")     # the JSONL keeps epoch seconds


def test_a_tab_parameter_selects_that_tab_on_load():
    """The page's own script picks the tab whose id the link names (the browser test opens ?tab= links), and
    every tab has an id such a link can name."""
    import re

    from app import TAB_OPEN_JS, TABS

    assert "data-tab-id" in TAB_OPEN_JS and "get('tab')" in TAB_OPEN_JS
    assert all(re.fullmatch(r"[a-z0-9-]{1,32}", t.id) for t in TABS)
