"""The benchmark leaderboard table from real scorer documents (scored on a small saved benchmark in a real
store) and the paper's reported rows: values, reasons, units, filters, sort presets, URL state, agreement."""
from __future__ import annotations


import pytest

from eval_backend.store import Reply, Store
from leaderboard import agreement
from tests.support.results_fixtures import METRICS, scored_results  # noqa: F401
from leaderboard import results_table as rt



@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The mini benchmark scored for "good" and "half" (tests/support/results_fixtures.py, shared with the
    readable-tables tests)."""
    return scored_results(tmp_path_factory.mktemp("table"))


def test_measured_rows_carry_values_reasons_and_intervals(scored):
    store, _ = scored
    docs = rt.latest_per_model(rt.load_result_docs(store.root / "results"))
    assert set(docs) == {"good", "half"}
    infos = {"good": rt.ModelInfo("endpoint", audio_output=True, open_weights=True, organisation="Lab A"),
             "half": rt.ModelInfo("baseline", audio_output=False, open_weights=True)}
    df, groups = rt.build_table(docs, infos)
    good = df.set_index("model").loc["good"]
    half = df.set_index("model").loc["half"]
    assert good["LB1"] == 1.0 and half["LB1"] == pytest.approx(0.5)
    assert half["l1.understanding_acc"] == 0.5 and half["l2.reasoning_acc"] == 0.5
    # no judge configured: LB3 and C1 say why, never 0
    assert str(good["LB3"]).startswith("not computed: ") and str(good["l3.judge.c1"]).startswith("not computed")
    assert half["l1.understanding_acc 95% CI"].startswith("[")
    assert half["selection 95% CI"] == half["sel.final 95% CI"]   # a one-metric board carries its interval
    assert good["type"] == "endpoint" and good["audio output"] == "yes" and half["audio output"] == "no"
    assert "l1.understanding_acc" in groups["Level 1: understanding"]
    assert "sel.final" in groups["Selection"]


def test_reported_rows_are_converted_and_marked(scored):
    store, docs = scored
    reported = rt.load_reported()
    assert "not reproduced" in reported["source"]
    df, groups = rt.build_table(docs, {}, reported)
    rep = df[df["type"] == "reported"].set_index("model")
    assert len(rep) == len(reported["rows"]) and set(rep["source"]) == {rt.REPORTED_SOURCE}
    raw = {r["model"]: r for r in reported["rows"]}["DeSTA2.5-Audio"]
    row = rep.loc["DeSTA2.5-Audio"]
    assert row["l1.understanding_acc"] == pytest.approx(raw["understanding_acc"] / 100)   # percent -> 0-1
    assert row["l3.judge.c1"] == raw["judge_c1_context_fit"]                              # 1-5 stays
    assert row["LB1"] == pytest.approx((raw["understanding_acc"] + raw["reasoning_acc"]) / 200, abs=1e-4)
    assert row["LB3"] == pytest.approx((raw["judge_c1_context_fit"] + raw["judge_c4_speech_info_relevance"]) / 2)
    assert row["LB2"].startswith("not computed")          # the paper has no VES for this model
    assert row["l3.bertscore (paper, rescaled)"] == pytest.approx(raw["text_bertscore"] / 100)
    measured = df[df["model"] == "good"].iloc[0]
    assert measured["l3.bertscore (paper, rescaled)"].startswith("not computed")
    assert "audio.nisqa (paper)" in groups["Level 3: conversation (audio)"]


def test_filters_sort_presets_and_columns(scored):
    _, docs = scored
    infos = {"good": rt.ModelInfo("endpoint", audio_output=True, open_weights=False),
             "half": rt.ModelInfo("baseline", audio_output=False, open_weights=True)}
    df, groups = rt.build_table(docs, infos, rt.load_reported())
    st = rt.FilterState()
    out = rt.apply_filters(df, groups, st)
    for part in rt.sections(out):                    # each section sorted on its own, never interleaved
        lb1 = [v for v in part["LB1"] if isinstance(v, float)]
        assert lb1 == sorted(lb1, reverse=True)
    assert out.iloc[0]["model"] == "good"
    # default: the headline columns (boards and their intervals); a group adds its metrics
    assert "l1.understanding_acc" not in out.columns and "sel.final" not in out.columns and "LB1 95% CI" in out.columns
    assert "l1.understanding_acc" in rt.apply_filters(df, groups, rt.FilterState(groups=("Level 1: understanding",)))
    out = rt.apply_filters(df, groups, rt.FilterState(kinds=("baseline", "endpoint"), sort="LB3"))
    assert list(out["model"]) == ["good", "half"]           # both LB3 not computed: last, by name
    out = rt.apply_filters(df, groups, rt.FilterState(kinds=("reported",), sort="LB3"))
    lb3 = [v for v in out["LB3"] if isinstance(v, float)]
    assert lb3 == sorted(lb3, reverse=True) and len(lb3) >= 10
    assert list(rt.apply_filters(df, groups, rt.FilterState(audio="no"))["model"]) == ["half"]
    assert list(rt.apply_filters(df, groups, rt.FilterState(open_weights="no", kinds=("endpoint",)))["model"]) == ["good"]
    assert list(rt.apply_filters(df, groups, rt.FilterState(search="qwen"))["model"]) == ["Qwen2.5-Omni-7B"]
    out = rt.apply_filters(df, groups, rt.FilterState(groups=("Selection",), intervals=True))
    assert "sel.final" in out.columns and "sel.accuracy 95% CI" in out.columns
    shown = rt.display_frame(out)
    assert shown.map(lambda v: isinstance(v, str)).all().all()
    csv = out.to_csv(index=False)
    assert "reported, not reproduced here" in csv


def test_url_state_round_trip_and_bad_params():
    st = rt.FilterState(search="omni", kinds=("reported",), audio="yes", groups=("AEQ-Bench", "Selection"),
                        sort="LB3", intervals=True)
    q = rt.state_to_query(st)
    assert rt.state_from_query(q) == st
    assert rt.state_to_query(rt.FilterState()) == {}
    assert rt.state_from_query({"sort": "LB9", "audio": "maybe", "groups": "x,99", "kinds": "evil"}) == rt.FilterState()


def test_rank_correlation_and_judge_human_agreement():
    rho = agreement.rank_correlation({"a": (1200, 0.9), "b": (1100, 0.5), "c": (1000, 0.7), "d": (900, 0.1)})
    assert rho.value == pytest.approx(0.8) and rho.n == 4
    tied = agreement.rank_correlation({"a": (1, 1.0), "b": (2, 1.0), "c": (3, 2.0)})
    assert tied.value == pytest.approx(0.866, abs=1e-3)
    few = agreement.rank_correlation({"a": (1, 1.0), "b": (2, 2.0)})
    assert few.value is None and few.reason.startswith("not computed: ")
    pairs = [("A", "A"), ("B", "A"), ("tie", "tie"), ("B", "B"), (None, "A"), ("A", None)]
    ag = agreement.agreement_rate(pairs)
    assert ag.value == pytest.approx(3 / 4) and ag.n == 4 and ag.low < 0.75 < ag.high
    none = agreement.agreement_rate([(None, "A")])
    assert none.value is None and "no battle" in none.reason


def test_judge_human_agreement_against_a_judge_over_http(tmp_path):
    """The scorer's pairwise judge (a scripted judge on loopback that prefers the caring reply, asked in both
    orders by judges.judge_pair) against arena votes on the same battles."""
    import re as _re

    from arena.tables.storage import VoteRow
    from tests.support.judge_server import ScriptedJudge
    from tests.support.arena_fixtures import build_benchmark

    bench = build_benchmark(tmp_path / "bench", n_scripts=2)
    store = Store(tmp_path / "data")
    rids = [r for r in ("conversation/s0/target", "conversation/s1/target")]
    for rid in rids:
        _, item, variant = rid.split("/")
        store.put_reply(Reply("warm", bench.hash, rid, "conversation", item, variant, "ok",
                              text="I am so sorry, that sounds hard. I am here for you."))
        store.put_reply(Reply("flat", bench.hash, rid, "conversation", item, variant, "ok", text="Okay. Next."))

    def vote(i, rid, a, b, slot):
        winner = {"A": a, "B": b}.get(slot, slot)
        return VoteRow(i, a, b, winner, slot, None, None, None, "A", None, None, bench.hash, rid, 1.0 + i, "live")
    votes = [vote(1, rids[0], "warm", "flat", "A"),        # human agrees with the judge
             vote(2, rids[1], "flat", "warm", "A"),        # human prefers flat: disagrees
             vote(3, rids[0], "flat", "warm", "both_bad"),  # no preference: left out
             vote(4, rids[1], "warm", "flat", "A")]        # agrees
    no_judge = agreement.judge_agreement(store, bench, votes, {})
    assert no_judge.value is None and "no judge configured" in no_judge.reason

    with ScriptedJudge() as judge:
        def prefers_warm(body):
            text = " ".join(str(m.get("content")) for m in body["messages"])
            r1 = _re.search(r"<<REPLY_1-[0-9a-f]+>>\n(.*?)\n<<END", text, _re.S).group(1)
            return '{"winner": {"score": "%s", "reason": "r"}}' % ("1" if "sorry" in r1 else "2")
        judge.responder = prefers_warm
        settings = {"judge": {"base_url": judge.base_url, "model": "scripted-judge", "timeout_s": 5}}
        st = agreement.judge_agreement(store, bench, votes, settings)
        asked = len(judge.requests)
    assert st.value == pytest.approx(2 / 3) and st.n == 3
    assert st.excluded == {"no human preference": 1}
    # 3 battles × both orders, but battles 2 and 4 are the same request and pair in swapped slots: the judge
    # cache answers the second one
    assert asked == 4
    assert "n = 3" in st.text("agreement")


def test_model_page_frames_and_board_figures(scored):
    from leaderboard.bench_tab import arena_pairs, radar_figure, scatter_figure
    from leaderboard.model_page import breakdown_frame, other_breakdowns
    _, docs = scored
    doc = docs["half"]
    types = other_breakdowns(doc)
    row = types[(types["breakdown"] == "type") & (types["label"] == "speech emotion")].iloc[0]
    assert row["Understanding accuracy"] == "0.500 (n=2)"        # metric names, not ids, head the columns
    assert len(breakdown_frame(doc, "attribute")) == 0          # nothing breaks down by attribute here
    df, groups = rt.build_table(docs, {}, rt.load_reported())
    view = rt.apply_filters(df, groups, rt.FilterState())
    radar = radar_figure(view)
    assert [t.name for t in radar.data][0] == "good" and len(radar.data) == 6
    assert radar.data[0].r[0] == 1.0                            # LB1 1.0 on its 0-1 range
    ratings = [{"model": "good", "bt": 1050.0}, {"model": "half", "bt": 950.0}, {"model": "x", "bt": float("nan")}]
    pairs = arena_pairs(ratings, df, "LB1")
    assert pairs == {"good": (1050.0, 1.0), "half": (950.0, 0.5)}
    rho = agreement.rank_correlation(pairs)
    fig = scatter_figure(pairs, "LB1", rho)
    assert "not computed" in fig.layout.title.text and list(fig.data[0].text) == ["good", "half"]


# ---------------------------------------------------------------- one headline per board
def test_reported_rows_form_their_own_section_and_are_never_ranked_with_measured_ones(scored):
    _, docs = scored
    reported = rt.load_reported()
    df, groups = rt.build_table(docs, {}, reported)
    for sort in rt.SORT_PRESETS:
        out = rt.apply_filters(df, groups, rt.FilterState(sort=sort))
        src = list(out["source"])
        first_reported = src.index(rt.REPORTED_SOURCE)
        assert set(src[:first_reported]) == {rt.MEASURED_SOURCE}        # a band, not interleaved
        assert set(src[first_reported:]) == {rt.REPORTED_SOURCE}
        assert set(out["rank"][first_reported:]) == {rt.NOT_RANKED}
        measured, paper = rt.sections(out)
        assert list(measured["model"]) == list(out["model"][:first_reported]) and len(paper) == len(reported["rows"])
    # ranks count only rows measured here: 'good' (LB1 1.0) is 1, 'half' 2, whatever the paper reports
    # (its templated cascade would otherwise sit among GPT-4o-Audio and the rest)
    out = rt.apply_filters(df, groups, rt.FilterState(sort="LB1"))
    ranks = dict(zip(out["model"], out["rank"]))
    assert ranks["good"] == 1 and ranks["half"] == 2
    assert any(isinstance(v, float) and v > 0.5 for v in rt.sections(out)[1]["LB1"])   # a paper row above 'half'
    # the heading the UI puts above the paper's section says what it is
    assert "on its own benchmark" in rt.REPORTED_HEADING and "not ranked" in rt.REPORTED_HEADING


def test_every_board_has_its_interval_and_the_interval_contains_the_value(scored):
    _, docs = scored
    df, groups = rt.build_table(docs, {})
    out = rt.apply_filters(df, groups, rt.FilterState())
    for b in rt.BOARDS:
        assert f"{b} 95% CI" in out.columns                  # shown by default, beside the board
    half = out.set_index("model").loc["half"]
    lo, hi = (float(x) for x in half["LB1 95% CI"].strip("[]").split(","))
    assert lo <= half["LB1"] <= hi and lo < hi
    doc = docs["half"]
    assert doc["boards"]["LB1"]["ci95"] == [0.0, 1.0]
    # one selection group: sel.final has no interval; the results JSON says why (ci_note), the table as for the metric
    assert doc["boards"]["selection"]["ci_note"] == "no interval: sel.final has none"
    assert half["selection 95% CI"] == df.set_index("model").loc["half", "sel.final 95% CI"] == "—"


def test_no_headline_cell_is_filled_from_a_different_metric():
    """LB2 without a VES judge is 'not computed', whatever DNSMOS OVRL says; an older result that put
    DNSMOS under LB2 is not shown as LB2 either; DNSMOS keeps its own column."""
    from eval_backend.scoring.results import boards

    def entry(family, value, per_item=None, reason=None):
        return {"family": family, "value": value, "reason": reason, "ci95": [value - 0.1, value + 0.1] if value else None,
                "per_item": per_item or {}}
    metrics = {"audio.dnsmos_ovrl": entry("audio", 3.1),
               "l3.ves": entry("judge_audio", None, reason="not computed: no audio-capable judge configured"),
               "l1.understanding_acc": entry("level1", 0.5, {"u1": 1.0, "u2": 0.0}),
               "l2.reasoning_acc": entry("reasoning", 1.0, {"r1": 1.0, "r2": 1.0, "r3": 1.0}),
               "l3.judge.c1": entry("judge_text", 4.0, {"c/a/x": 5.0, "c/b/x": 3.0}),
               "l3.judge.c4": entry("judge_text", 3.0, {"c/a/x": 3.0, "c/b/x": 3.0})}
    b = boards(metrics)
    assert b["LB2"] == {"value": None, "reason": "not computed: no VES judge configured"}
    assert b["LB1"]["value"] == 0.75 and b["LB1"]["ci95"][0] <= 0.75 <= b["LB1"]["ci95"][1]
    assert b["LB3"]["value"] == 3.5 and b["LB3"]["ci95"][0] <= 3.5 <= b["LB3"]["ci95"][1]
    metrics["l3.ves"] = entry("judge_audio", 3.8, {"c/a/x": 3.6, "c/b/x": 4.0})
    assert boards(metrics)["LB2"]["value"] == 3.8 and boards(metrics)["LB2"]["ci95"] == metrics["l3.ves"]["ci95"]

    old_doc = {"manifest": {"model": "old", "benchmark": {"name": "demo", "version": "1", "hash": "h"}},
               "metrics": {"audio.dnsmos_ovrl": entry("audio", 3.1)},
               "boards": {"LB2": {"value": 3.1, "source": "audio.dnsmos_ovrl (DNSMOS OVRL: no VES judge result)"},
                          "LB1": {"value": 0.9, "source": "audio.dnsmos_ovrl"}}}
    row, _ = rt.measured_row(old_doc, rt.ModelInfo())
    assert row["LB2"].startswith("not computed: no VES judge configured") and row["LB2 95% CI"] == "—"
    assert row["LB1"].startswith("not computed") and row["audio.dnsmos_ovrl"] == 3.1
    df, groups = rt.build_table({"old": old_doc})
    for b_name in rt.BOARDS:                                   # no board cell holds another metric's number
        assert not isinstance(df.iloc[0][b_name], float)
    from leaderboard.model_page import headline_markdown
    head = headline_markdown({**old_doc, "manifest": {**old_doc["manifest"], "scorer_version": "x"}})
    from eval_backend.inert import md                         # the page shows the reason as inert text
    assert "**LB2**: " + md("not computed: no VES judge configured") in head and "3.100" not in head


# ---------------------------------------------------------------- one registry per fact (issue 27)
def test_a_metric_family_is_grouped_by_the_metric_registry_alone(scored, monkeypatch):
    """A new family is one entry in eval_backend/scoring/registry.py FAMILIES: the table groups its metric's
    column there (not under "Other", where a plugin's unlisted family goes)."""
    from eval_backend.scoring import registry
    _, docs = scored
    monkeypatch.setitem(registry.FAMILIES, "prosody_new", "Level 3: conversation (audio)")
    doc = dict(docs["good"])
    doc["metrics"] = {**doc["metrics"], "audio.prosody_new": {"value": 0.5, "family": "prosody_new", "n": 2}}
    _, groups = rt.build_table({"good": doc})
    assert "audio.prosody_new" in groups["Level 3: conversation (audio)"] and "Other" not in groups
    doc["metrics"]["plugin.metric"] = {"value": 1.0, "family": "plugin_family", "n": 2}
    _, groups = rt.build_table({"good": doc})
    assert groups["Other"] == ["plugin.metric"]


def test_the_papers_boards_come_from_the_board_registry(monkeypatch):
    """The paper's rows get their boards from eval_backend/scoring/boards.py (what the scorer computes), not from
    a second formula: a board changed in the registry changes the paper's rows too."""
    from eval_backend.scoring import boards
    reported = rt.load_reported()
    before, _ = rt.reported_rows(reported)
    lb1 = boards.BOARDS["LB1"]
    monkeypatch.setitem(boards.BOARDS, "LB1", boards.Board(
        lb1.key, lb1.name, lb1.label, lb1.about, lambda metrics, seed: {"value": metrics.get("l2.reasoning_acc")[
            "value"], "source": "l2.reasoning_acc"}, lb1.scale, lb1.source))
    after, _ = rt.reported_rows(reported)
    assert [r["LB1"] for r in after] == [r["l2.reasoning_acc"] for r in after] != [r["LB1"] for r in before]
    assert all(r["selection"] == "not computed: sel.final not measured by the paper" for r in after)
