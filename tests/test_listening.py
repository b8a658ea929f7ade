"""The listening rule (arena/core/listening.py), pure: honest listening in any schedule is never impossible and counts
exactly when it covers each clip; claims no player can make are impossible; bad reports are refused clearly."""
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from arena.core.listening import (IMPOSSIBLE, NOT_YET, OK, ListenReport, ListenRule, decide, parse_report,
                             remaining)

CLIPS = ("user", "A", "B")
ms = st.integers(min_value=0, max_value=20_000).map(lambda x: x / 1000)        # seconds, to the millisecond
rules = st.builds(ListenRule, cover_first_s=st.one_of(st.just(math.inf), st.floats(0, 10)),
                  max_rate=st.sampled_from([1.0, 1.5, 2.0, 3.0]), tolerance_s=st.sampled_from([0.0, 0.05, 0.1]))


@st.composite
def honest(draw):
    """A battle and a listener who fetched each clip, then played some of it (any rate up to the rule's, clips
    overlapping or not, in any order), then voted."""
    rule = draw(rules)
    clips = {c: draw(ms.filter(lambda s: s > 0)) for c in CLIPS}
    fetched, played, ends, starts = {}, {}, [], {}
    for c in CLIPS:
        fetched[c] = draw(st.floats(0, 5))
        starts[c] = fetched[c] + draw(st.floats(0, 5))
        rate = draw(st.floats(0.5, rule.max_rate))
        # seconds of the required part actually heard (the page counts within [0, need]), to the millisecond
        heard = draw(st.floats(0, 1)) * rule.need(clips[c])
        played[c] = math.floor(heard * 1000) / 1000
        ends.append(starts[c] + played[c] / rate)
    now = max(ends) + draw(st.floats(0, 3))
    order = tuple(sorted((c for c in CLIPS if played[c] > 0), key=starts.get))
    return rule, clips, fetched, ListenReport(played, order), now


@settings(max_examples=400, deadline=None)
@given(honest())
# found by a run of the suite: a 1 ms clip heard at the top rate (1.5x) the instant it was fetched; 0.001 s played
# against 1.5 * 0.000666... s elapsed came out a hair above the limit in floating point
@example((ListenRule(cover_first_s=math.inf, max_rate=1.5, tolerance_s=0.0), {"user": 0.001, "A": 0.001, "B": 0.001},
          {"user": 0.0, "A": 0.0, "B": 1.0}, ListenReport({"user": 0.0, "A": 0.0, "B": 0.001}, ("B",)),
          1.0 + 0.001 / 1.5))
def test_honest_listening_is_never_impossible_and_counts_exactly_when_covered(case):
    rule, clips, fetched, report, now = case
    d = decide(rule, clips, fetched, report, now)
    assert d.verdict != IMPOSSIBLE, d.message
    covered = all(report.played_s[c] >= rule.need(clips[c]) - rule.tolerance_s for c in clips)
    assert (d.verdict == OK) == covered
    if d.verdict == NOT_YET:
        # what is left is exactly the uncovered part of each uncovered clip, and hearing it is enough
        assert d.remaining_s == {c: rule.need(s) - report.played_s[c] for c, s in clips.items()
                                 if report.played_s[c] < rule.need(s) - rule.tolerance_s}
        assert d.total_remaining_s > 0 and "Not yet" in d.message
        more = ListenReport({c: rule.need(clips[c]) if c in d.remaining_s else p
                             for c, p in report.played_s.items()}, report.order)
        later = now + d.total_remaining_s + 1
        assert decide(rule, clips, fetched, more, later).verdict == OK


@settings(max_examples=200, deadline=None)
@given(honest(), st.sampled_from(CLIPS))
def test_a_clip_never_fetched_makes_any_required_listening_impossible(case, clip):
    rule, clips, fetched, report, now = case
    unfetched = {**fetched, clip: None}
    d = decide(rule, clips, unfetched, report, now)
    if rule.need(clips[clip]) > rule.tolerance_s or report.played_s[clip] > 0:
        assert (d.verdict, d.why) == (IMPOSSIBLE, "not_fetched")
    else:                                   # nothing of it needed or claimed: the fetch does not matter
        assert d.verdict == decide(rule, clips, fetched, report, now).verdict


@settings(max_examples=200, deadline=None)
@given(rules, ms.filter(lambda s: s > 1), st.floats(0, 10), st.floats(0.01, 1))
def test_claims_beyond_the_clock_or_the_clip_are_impossible(rule, seconds, elapsed, over):
    clips = {"A": seconds}
    fetched = {"A": 100.0}
    elapsed = (100.0 + elapsed) - 100.0            # the elapsed time the rule sees (float rounding)
    possible = min(seconds, rule.max_rate * elapsed)
    fine = decide(rule, clips, fetched, ListenReport({"A": possible}), 100.0 + elapsed)
    assert fine.verdict != IMPOSSIBLE
    too_fast = rule.max_rate * elapsed + rule.tolerance_s + over
    d = decide(rule, clips, fetched, ListenReport({"A": too_fast}), 100.0 + elapsed)
    assert d.verdict == IMPOSSIBLE and d.why in ("faster_than_possible", "longer_than_clip")
    longer = decide(rule, clips, fetched, ListenReport({"A": seconds + rule.tolerance_s + over}), 1e9)
    assert (longer.verdict, longer.why) == (IMPOSSIBLE, "longer_than_clip")


def test_the_rule_is_generic_over_a_battles_clips_and_covers_first_seconds_or_all():
    rule = ListenRule(cover_first_s=3.0, max_rate=2.0, tolerance_s=0.1)
    clips = {"user": 2.0, "A": 8.0, "B": 3.0, "extra": 5.0}
    assert rule.needs(clips) == {"user": 2.0, "A": 3.0, "B": 3.0, "extra": 3.0}
    assert ListenRule(cover_first_s=math.inf).needs(clips) == clips
    payload = rule.payload(clips)
    assert payload["clips"]["A"] == {"seconds": 8.0, "need_s": 3.0} and payload["max_rate"] == 2.0
    assert ListenRule(cover_first_s=math.inf).payload(clips)["cover_first_s"] is None   # JSON has no inf
    fetched = dict.fromkeys(clips, 0.0)
    # every clip at once at 2x: 1.5 s after the fetch covers 3 s of each
    together = ListenReport(rule.needs(clips), ("B", "A", "user", "extra"))
    assert decide(rule, clips, fetched, together, 1.5).verdict == OK
    assert decide(rule, clips, fetched, together, 1.3).why == "faster_than_possible"
    assert together.first_of() == "B"
    d = decide(rule, clips, fetched, ListenReport({**rule.needs(clips), "extra": 1.0}), 10)
    assert d.verdict == NOT_YET and d.remaining_s == {"extra": 2.0} and "clip extra" in d.message
    # no listening asked for (min_listen_s = 0): nothing to fetch or hear
    assert decide(ListenRule(cover_first_s=0), clips, {}, ListenReport(), 0).verdict == OK
    assert remaining(rule, 3.0, 2.9) == 0 and remaining(rule, 3.0, 2.899) == pytest.approx(0.101)


@pytest.mark.parametrize("bad, says", [
    ([], "must be an object"),
    ({"played_s": [1, 2]}, "played_s"),
    ({"played_s": {"A": -1}}, "number of seconds"),
    ({"played_s": {"A": float("nan")}}, "number of seconds"),
    ({"played_s": {"A": float("inf")}}, "number of seconds"),
    ({"played_s": {"A": True}}, "number of seconds"),
    ({"played_s": {"A": "3"}}, "number of seconds"),
    ({"played_s": {f"c{k}": 1 for k in range(9)}}, "at most 8"),
    ({"order": ["A", "A"]}, "distinct"),
    ({"order": "AB"}, "list"),
    ({"order": [1]}, "distinct clip names"),
    ({"played_s": {"x" * 40: 1}}, "clip names"),
    ({"heard": 1}, "unknown field"),
])
def test_bad_reports_are_refused_with_a_message(bad, says):
    with pytest.raises(ValueError) as exc:
        parse_report(bad)
    assert says in str(exc.value)


def test_reports_naming_clips_the_battle_lacks_are_refused():
    assert parse_report(None) == ListenReport()
    ok = parse_report({"played_s": {"A": 1, "user": 2.5}, "order": ["user", "A"], "battle_id": "x"}, CLIPS)
    assert ok.played_s == {"A": 1.0, "user": 2.5} and ok.first_of() == "A"
    with pytest.raises(ValueError, match="no clip C"):
        parse_report({"played_s": {"C": 1}}, CLIPS)
    with pytest.raises(ValueError, match="no clip C"):
        parse_report({"order": ["C"]}, CLIPS)


def test_settings_are_checked():
    for bad in ({"cover_first_s": -1}, {"max_rate": 0.5}, {"tolerance_s": -0.1}, {"cover_first_s": math.nan}):
        with pytest.raises(ValueError):
            ListenRule(**bad)


def test_the_rule_comes_from_the_environment_and_about_states_it(monkeypatch, tmp_path):
    from arena.config import ArenaSettings, listen_from_env, settings_from_env
    from leaderboard.about_tab import about_text

    assert listen_from_env({}) == {}
    assert listen_from_env({"EMPATHY_ARENA_LISTEN_S": "all", "EMPATHY_ARENA_MAX_PLAYBACK_RATE": "1.5"}) == {
        "min_listen_s": math.inf, "max_playback_rate": 1.5}
    for bad in ({"EMPATHY_ARENA_LISTEN_S": "-1"}, {"EMPATHY_ARENA_LISTEN_S": "nan"},
                {"EMPATHY_ARENA_LISTEN_S": "soon"}, {"EMPATHY_ARENA_MAX_PLAYBACK_RATE": "0.5"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            listen_from_env(bad)
    monkeypatch.setenv("EMPATHY_ARENA_LISTEN_S", "5")
    monkeypatch.setenv("EMPATHY_ARENA_SALT", "x")
    s = settings_from_env(tmp_path)
    assert s.listen_rule == ListenRule(5.0, 2.0, 0.1)
    assert settings_from_env(tmp_path, min_listen_s=0.0).min_listen_s == 0.0     # an explicit override wins
    assert "the first 5 s of each clip" in about_text()
    assert "each clip in full" in about_text(settings=ArenaSettings(min_listen_s=math.inf, max_playback_rate=1.5))
    assert "up to 1.5×" in about_text(settings=ArenaSettings(max_playback_rate=1.5))
