"""Sweeps and flags (issue 23): cadence, one-model bias, rings and disagreement with the consensus are flagged,
flagged votes stay in the log and leave the public fit, the operator can reverse a flag (and it stays reversed),
releases mark them, the health view counts them and warns.

The pure rules run on hand-made vote facts that sit just over and just under each threshold (data that could
fail them); the end-to-end tests cast real votes through the service on a real Store (SQLite or PostgreSQL).
"""
from __future__ import annotations

import itertools
import json

import pytest

from arena.services import health
from arena.core import raters
from arena.services import release
from arena.core import sweeps
from arena.services import vote_flags
from arena.core.sweeps import GoldRecord, Rules, VoteFacts
from leaderboard.health_tab import health_frame
from tests.support.arena_fixtures import seed
from tests.support.integrity import battle_row, good_slot, serve, service_on_copy, vote_after_listening

T0 = 1_767_225_600.0        # 2026-01-01 00:00 UTC
MODELS = ("warm-model", "flat-model", "third-model")
_ids = itertools.count(1)


def fact(voter, t, a="m1", b="m2", slot="A", address=None) -> VoteFacts:
    return VoteFacts(next(_ids), voter, address or f"address:{voter}", t, a, b, slot)


def honest_crowd(n_voters=12, votes_each=20, start=T0, address=None) -> list[VoteFacts]:
    """Voters who each prefer m1 over m2 80% of the time and split m2/m3 evenly, a vote every 50 s."""
    out = []
    for v in range(n_voters):
        for k in range(votes_each):
            j = k // 2
            if k % 2 == 0:
                a, b, slot = "m1", "m2", "A" if (v + j) % 10 < 8 else "B"
            else:
                a, b, slot = "m2", "m3", "A" if (v + j) % 2 else "B"
            out.append(fact(f"session:h{v}", start + 50 * k + v, a, b, slot, address))
    return out


# ---------------------------------------------------------------- pure rules
def test_cadence_thresholds_of_tts_arena():
    busy = [fact("session:busy", T0 + 110 * k) for k in range(31)]          # 31 votes within 55 min
    calm = [fact("session:calm", T0 + 125 * k) for k in range(30)]          # 30 in an hour: allowed
    quick = [fact("session:quick", T0 + t) for t in (0, 60, 61.5, 200)]     # one vote 1.5 s after the last
    flags = sweeps.cadence_flags(busy + calm + quick)
    by = {}
    for f in flags:
        by.setdefault(f.subject, []).append(f)
    assert len(by["session:busy"]) == 31 and "more than 30 votes in an hour" in by["session:busy"][0].detail
    assert "session:calm" not in by
    assert [f.vote_id for f in by["session:quick"]] == [quick[2].id] and "1.5 s" in by["session:quick"][0].detail
    # TTS Arena's second rule (over 100 in 3 hours) is implied by the first over sliding windows (30 an hour
    # allow 90 in 3 hours): a run of 101 in 3 hours is caught, by the hourly rule
    spread = [fact("session:day", T0 + 105 * k) for k in range(101)]
    assert len(sweeps.cadence_flags(spread)) == 101
    assert sweeps.cadence_flags(spread, Rules(per_hour=1000))[0].detail == "more than 100 votes in 3 hours"


def test_one_model_bias_against_what_everyone_else_hears():
    crowd = honest_crowd()
    shill = [fact("session:shill", T0 + 90 * k, *(("m3", "m2") if k % 2 else ("m2", "m1")),
                  slot="B" if k % 2 else "A") for k in range(12)]           # always m2, against the crowd on m1
    flags = sweeps.one_model_flags(crowd + shill)
    assert {f.subject for f in flags} == {"session:shill"} and all(f.weight == 0 for f in flags)
    assert "picked m2 in 12 of 12" in flags[0].detail
    # a fan of the model everyone prefers is not flagged (93% where the crowd gives it 80%: the test does not pass)
    fan = [fact("session:fan", T0 + 90 * k, "m1", "m2", "A" if k % 15 else "B") for k in range(15)]
    assert not [f for f in sweeps.one_model_flags(crowd + fan) if f.subject == "session:fan"]
    # nine votes are too few, whatever they say
    few = [fact("session:few", T0 + 90 * k, "m2", "m1", "A") for k in range(9)]
    assert not [f for f in sweeps.one_model_flags(crowd + few) if f.subject == "session:few"]


def test_a_ring_of_sessions_behind_one_address_but_not_a_busy_honest_address():
    crowd = honest_crowd()
    ring = [fact(f"session:r{s}", T0 + 3600 + 200 * k + s, "m2", "m1", "A", address="address:ring")
            for s in range(6) for k in range(3)]               # six sessions, three votes each, all for m2
    campus = honest_crowd(n_voters=8, votes_each=6, start=T0 + 7200, address="address:campus")
    flags = sweeps.ring_flags(crowd + ring + campus)
    assert {f.subject for f in flags} == {"address:ring"} and len(flags) == 18
    assert "6 voters behind one address" in flags[0].detail
    # per voter, none of the ring's sessions has enough votes to be caught by the one-model rule
    assert not sweeps.one_model_flags(crowd + ring)
    # four sessions are not yet a ring
    small = [f for f in ring if f.voter in {f"session:r{s}" for s in range(4)}]
    assert not sweeps.ring_flags(crowd + small)


def test_consensus_agreement_and_gold_weights():
    crowd = honest_crowd(n_voters=20)
    contrarian = [fact("session:contra", T0 + 90 * k, "m1", "m2", "B") for k in range(20)]   # against 80% m1
    coin = [fact("session:coin", T0 + 90 * k, "m1", "m2", "A" if k % 5 < 2 else "B") for k in range(20)]
    agree = sweeps.clear_pairs_agreement(crowd + contrarian + coin)
    assert agree["session:contra"] == (0, 20) and agree["session:coin"] == (8, 20)
    assert sweeps.consensus_weight(0, 20) == (0.0, pytest.approx(sweeps.consensus_weight(0, 20)[1]))
    assert sweeps.consensus_weight(8, 20)[0] == sweeps.DOWN_WEIGHT
    assert sweeps.consensus_weight(10, 20) is None and sweeps.consensus_weight(0, 19) is None
    assert sweeps.gold_weight(GoldRecord(0, 1))[0] == sweeps.DOWN_WEIGHT            # one slip never excludes
    assert sweeps.gold_weight(GoldRecord(2, 2))[0] == 0.0
    assert sweeps.gold_weight(GoldRecord(3, 2))[0] == sweeps.DOWN_WEIGHT
    assert sweeps.gold_weight(GoldRecord(3, 1)) is None
    # honest voters on the clear pair are never flagged by agreement
    flags = sweeps.reliability_flags(crowd + contrarian + coin, {})
    assert {f.subject for f in flags} == {"session:contra", "session:coin"}


# ---------------------------------------------------------------- end to end on the service
@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep_seed")
    seed(root, MODELS, n_scripts=2)
    return root


@pytest.fixture
def svc(seeded, tmp_path, copy_database, module_database_url):
    s, clock = service_on_copy(seeded, tmp_path / "data", copy_database(module_database_url),
                               session_votes_per_minute=10**6, ip_votes_per_minute=10**6,
                               session_votes_per_day=10**6, ip_votes_per_day=10**6)
    s.test_clock = clock
    return s


def cast(svc, session, ip, picks, gap_s=120.0):
    """One vote per pick, each after listening, `gap_s` apart; `picks(row)` -> the slot."""
    clock = svc.test_clock
    for pick in picks:
        view = svc.serve_battle(session, ip)
        clock.t += gap_s
        vote_after_listening(svc, clock, view, session, ip, pick(battle_row(svc, view.battle_id)))


def for_model(model, otherwise="tie"):
    return lambda row: "A" if row["model_a"] == model else "B" if row["model_b"] == model else otherwise


def test_flagged_votes_leave_the_fit_the_operator_reverses_and_releases_mark_them(svc, tmp_path):
    for s in range(5):                                    # an honest crowd that prefers warm-model
        cast(svc, f"honest{s}", f"10.0.1.{s}", [for_model("warm-model")] * 8)
    cast(svc, "shill", "10.0.2.1", [for_model("third-model", otherwise="A")] * 24)   # all for third-model
    cast(svc, "bot", "10.0.3.1", [lambda row: "A"] * 35, gap_s=20)                  # 35 votes in 12 min
    total = len(svc.votes())
    report = svc.integrity_upkeep()
    with_third = svc.store.query("SELECT COUNT(*) AS n FROM arena_votes WHERE session_id='shill' AND "
                                 "(model_a='third-model' OR model_b='third-model')")[0]["n"]
    assert with_third >= 10 and report.flags["cadence"] == 35 and report.flags["one_model"] == with_third
    groups = {(g["kind"], g["subject"]): g for g in vote_flags.groups(svc.store)}
    shill = vote_flags.voter_subject(None, "shill")
    assert ("one_model", shill) in groups and ("cadence", vote_flags.voter_subject(None, "bot")) in groups
    assert not any(k[1].startswith("session:") and k[1] in
                   {vote_flags.voter_subject(None, f"honest{s}") for s in range(5)} for k in groups)
    excluded = {v for v, w in svc.vote_weights().items() if w == 0}
    assert len(excluded) == report.excluded and svc.store.query("SELECT COUNT(*) AS n FROM arena_votes")[0]["n"] == total
    fitted = sum(r["votes"] for r in svc.replayed_table(rounds=10)) // 2
    assert fitted == total - len(excluded)

    # a release marks them; its tables leave them out; rebuild reproduces the tables bit for bit
    m = release.write_release(svc, tmp_path / "rel", rounds=10)
    marks = [json.loads(line) for line in (tmp_path / "rel" / "integrity.jsonl").read_text().splitlines()]
    assert {r["vote_id"] for r in marks if r["weight"] == 0} == excluded
    assert m["integrity"]["excluded"] == len(excluded) and m["format_version"] == 5
    rows, rep = release.rebuild(tmp_path / "rel")
    assert rep["identical"] and sum(r["votes"] for r in rows) // 2 == total - len(excluded)
    assert len((tmp_path / "rel" / "votes.jsonl").read_text().splitlines()) == total     # all votes released

    # the operator reverses the shill's flag: the votes count again, and stay counted through later sweeps
    shill_votes = {v for v, w in svc.vote_weights().items()} & {
        r["id"] for r in svc.store.query("SELECT id FROM arena_votes WHERE session_id='shill'")}
    assert shill_votes
    vote_flags.decide(svc.store, "one_model", shill, "reverse", "operator", "a real fan")
    assert not shill_votes & set(svc.vote_weights())
    svc.integrity_upkeep()
    assert not shill_votes & set(svc.vote_weights())
    assert {g["state"] for g in vote_flags.groups(svc.store) if g["subject"] == shill} == {"reversed"}
    vote_flags.decide(svc.store, "one_model", shill, "restore", "operator")
    assert shill_votes <= set(svc.vote_weights())
    with pytest.raises(ValueError):
        vote_flags.decide(svc.store, "nonsense", shill, "reverse", "operator")


def test_the_health_view_counts_excluded_votes_and_warns(svc):
    for s in range(3):
        cast(svc, f"honest{s}", f"10.0.1.{s}", [for_model("warm-model")] * 8)
    cast(svc, "bot", "10.0.3.1", [lambda row: "A"] * 35, gap_s=20)
    svc.integrity_upkeep()
    now = svc.test_clock.t + 1
    rep = health.health_report(svc.store, health.HealthConfig(window_s=24 * 3600.0, history_s=48 * 3600.0), now=now)
    assert rep["votes"]["excluded"] == 35 and rep["votes"]["excluded_by_reason"] == {"cadence": 35}
    assert rep["votes"]["counted"] == 24 and rep["window"]["counted_share"] == pytest.approx(24 / 59)
    assert rep["alert"] and "counted" in rep["alert"] and "cadence 35" in rep["alert"]
    assert sum(r["excluded"] for r in rep["rows"]) == 35
    # the exclusion alert on its own (the counted share still above its threshold)
    rep = health.health_report(svc.store, health.HealthConfig(window_s=24 * 3600.0, history_s=48 * 3600.0,
                                                              alert_share=0.3), now=now)
    assert "35 of 59 accepted votes" in rep["alert"] and "over 10%" in rep["alert"]
    cli = svc.integrity_health(window_s=10 * 86400.0)
    assert (cli["excluded"], cli["counted"], cli["excluded_by_reason"]) == (35, 24, {"cadence": 35})
    frame = health_frame(rep["rows"])          # the health tab's table says it per hour
    assert frame["excluded"].sum() == 35 and frame["counted"].sum() == 24
    assert any("flagged cadence" in why for why in frame["why (refused · excluded)"])


def test_rules_defaults_are_the_documented_sources():
    r = Rules()
    assert (r.per_hour, r.per_3_hours, r.min_gap_s, r.bias_share) == (30, 100, 2.0, 0.8)   # TTS Arena V2
    assert r.max_excluded_share == 0.10                                                     # LMArena


def test_flags_come_back_with_the_votes_after_a_wiped_disk(tmp_path, fresh_database_url):
    """On Spaces the disk is wiped on restart and the Hub restores the votes, without their sessions: the sweep can
    no longer judge them, so their flags come back from the Hub's flag log, and later sweeps keep them."""
    from space_shell.hub_sync import HubSync
    from eval_backend.store import Store
    from arena.services.service import ArenaService
    from tests.support.hub_standin import StandInHub
    from tests.test_hub_sync import config

    hub = StandInHub()

    def node(name):
        store = Store(tmp_path / name, database_url=fresh_database_url())
        svc = ArenaService(store)
        return svc, HubSync(store, config(), api=hub.api(), append_votes=svc.append_votes)

    a, sync_a = node("a")
    sync_a.start()
    rows = [("bot", 20.0 * k, "A") for k in range(35)] + [(f"h{k}", 300.0 * k + 7, "B") for k in range(10)]
    a.append_votes([{"battle_id": f"b{k}", "model_a": "m1", "model_b": "m2", "winner": "m1" if slot == "A" else "m2",
                     "slot": slot, "said": None, "sounded": None, "reason": None, "session_id": who, "user": None,
                     "ip_hash": f"ip-{who}", "first_heard": "A", "attribute": None, "dimension": None,
                     "benchmark_hash": "h", "request_id": "r", "created_at": T0 + t, "source": "live",
                     "battle_source": "benchmark"} for k, (who, t, slot) in enumerate(rows)])
    assert a.integrity_upkeep().excluded == 35
    excluded = a.vote_weights()
    sync_a.push_logs()
    sync_a.stop()

    b, sync_b = node("b")                              # the Space restarted on an empty disk
    sync_b.start()
    assert sync_b.restored["flags"] > 0
    assert len(b.votes()) == 45 and b.vote_weights() == excluded
    assert {g["subject"] for g in vote_flags.groups(b.store)} == {vote_flags.RESTORED}
    b.integrity_upkeep()                               # restored votes have no session: their flags stay
    assert b.vote_weights() == excluded
    assert sum(r["votes"] for r in b.replayed_table(rounds=5)) // 2 == 10
    blob = "".join(t.decode() for t in hub.files("org/arena-logs").values())
    assert "bot" not in blob.replace("both_bad", "") and "ip-" not in blob     # no session, no address
    sync_b.stop(final_push=False, timeout_s=5)


def test_the_flags_weights_reach_every_published_rating(svc, tmp_path):
    """One hook (VoteLog.vote_weights) carries the flags into every rating: a bot's cadence-flagged votes
    (weight 0) and a voter down-weighted by a failed gold check (0.5) change the plain and style-controlled boards,
    the replayed TrueSkill, the CLI table and the release exactly as the raters over those weights say; without
    the hook the boards would be the unweighted ones (asserted different)."""
    for s in range(4):
        cast(svc, f"honest{s}", f"10.0.1.{s}", [for_model("warm-model")] * 8)
    cast(svc, "fan", "10.0.2.1", [for_model("flat-model", otherwise="tie")] * 6)
    cast(svc, "bot", "10.0.3.1", [lambda row: "A"] * 35, gap_s=20)                  # 35 votes in 12 min
    svc.gold.share = 1.0                                 # the fan's checks: two passed, one failed
    for passed in (True, True, False):
        view = serve(svc, "fan", "10.0.2.1")
        good = good_slot(svc, view.battle_id)
        svc.test_clock.t += 120
        vote_after_listening(svc, svc.test_clock, view, "fan", "10.0.2.1", good if passed else "AB".replace(good, ""))
    svc.gold.share = 0.0
    unweighted = svc.replayed_table(rounds=20, style=True)
    svc.integrity_upkeep()

    ids = {who: {r["id"] for r in svc.store.query("SELECT id FROM arena_votes WHERE session_id=?", (who,))}
           for who in ("fan", "bot")}
    expected = {**{i: 0.5 for i in ids["fan"]}, **{i: 0.0 for i in ids["bot"]}}
    assert svc.vote_weights() == expected
    keys = ("bt", "style_bt")
    reference = raters.build_rows(raters.weighted(svc.votes(), expected), svc.ratings.context("overall", 20), keys).rows
    cli_fields = raters.with_scores(raters.CLI_FIELDS, keys)
    assert [r.as_json(cli_fields) for r in reference] != unweighted                   # the weights matter here
    assert svc.replayed_table(rounds=20, style=True) == [r.as_json(cli_fields) for r in reference]
    board_fields = raters.with_scores(raters.BOARD_FIELDS, keys)
    assert svc.ratings_table(rounds=20, style=True) == [r.as_json(board_fields) for r in reference]
    assert sum(r["votes"] for r in svc.ratings_table(rounds=20)) // 2 == len(svc.votes()) - len(ids["bot"])
    # the release carries each vote's weight, and its tables are the weighted ones
    release.write_release(svc, tmp_path / "rel", rounds=20)
    released = {json.loads(line)["id"]: json.loads(line)["weight"]
                for line in (tmp_path / "rel" / "votes.jsonl").read_text().splitlines()}
    assert {i: w for i, w in released.items() if w != 1} == expected
    rows, rep = release.rebuild(tmp_path / "rel", style=True)
    assert rep["identical"] and rows == svc.replayed_table(rounds=20, style=True)
