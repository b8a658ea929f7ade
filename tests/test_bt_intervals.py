"""Bradley–Terry intervals that mean what they say: a vote floor (provisional models get no score, interval or
rank and stay out of the others' fit and reference), the point inside its interval, and a newcomer's vote
that moves no established model's interval."""
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from arena.core import bradley_terry as bt

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bt_intervals_report", ROOT / "benchmarks" / "bt_intervals_report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

FLOOR = 30


def test_regression_303_vote_log_with_a_one_vote_model():
    """The shape of the real log: 8 models, 303 votes, one model with a single vote."""
    with_new = bt.counts_from_votes(report.synthetic_log(0, newcomer=True))
    without = bt.counts_from_votes(report.synthetic_log(0, newcomer=False))
    assert len(with_new.models) == 8 and len(report.synthetic_log(0)) == 303
    a = bt.bootstrap(with_new, rounds=400, seed=0, min_votes=FLOOR).as_dict()
    b = bt.bootstrap(without, rounds=400, seed=0, min_votes=FLOOR).as_dict()
    new = a[report.NEWCOMER]
    assert new["provisional"] and new["bt_votes"] == 1 and new["bt_rank"] is None
    assert math.isnan(new["bt"]) and math.isnan(new["bt_low"]) and math.isnan(new["bt_high"])
    established = [m for m in a if m != report.NEWCOMER]
    for m in established:
        r = a[m]
        assert not r["provisional"] and r["bt_rank"] >= 1
        assert r["bt_low"] <= r["bt"] <= r["bt_high"], (m, r)
        assert r["bt_high"] - r["bt_low"] > 20                         # a real interval, not a point
        assert abs(r["bt_low"] - b[m]["bt_low"]) < 2 and abs(r["bt_high"] - b[m]["bt_high"]) < 2, m
    # the reference: the established models average 1000
    assert np.mean([a[m]["bt"] for m in established]) == pytest.approx(1000.0, abs=1e-6)
    # the former algorithm, kept in the report script, fails both checks on the same log: the newcomer's
    # vote drags every bound by ~150 points
    old, old_wo = report.legacy_bootstrap(with_new, 400), report.legacy_bootstrap(without, 400)
    assert max(report.shift(old, old_wo, m) for m in established) > 50


def test_one_vote_gives_too_few_votes_never_a_zero_width_interval():
    res = bt.bootstrap(bt.counts_from_votes([("x", "y", "x")]), rounds=100, min_votes=FLOOR)
    d = res.as_dict()
    assert all(r["provisional"] and r["bt_rank"] is None and math.isnan(r["bt_low"]) for r in d.values())
    # even without a floor a model needs a vote, and a lone pair still gets a real fit: never 1681 - 1681
    res0 = bt.bootstrap(bt.counts_from_votes([("x", "y", "x"), ("x", "y", "y"), ("x", "y", "tie")] * 5),
                        rounds=200, min_votes=0)
    assert np.all(res0.high - res0.low > 0)


def test_fewer_than_two_established_models_fit_nothing():
    votes = [("a", "b", "a"), ("b", "a", "a")] * 20 + [("a", "c", "c")] * 3
    d = bt.bootstrap(bt.counts_from_votes(votes), rounds=50, min_votes=41).as_dict()   # a 43, b 40, c 3
    assert not d["a"]["provisional"] and d["b"]["provisional"] and d["c"]["provisional"]
    assert math.isnan(d["a"]["bt"]) and d["a"]["bt_rank"] is None


# ------------------------------------------------------------------ properties
MODELS = [f"m{k}" for k in range(6)]


@st.composite
def vote_logs(draw):
    n = draw(st.integers(1, 120))
    pairs = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4),
                                    st.sampled_from(["a", "b", "a", "b", "tie", "both_bad"])),
                          min_size=n, max_size=n))
    out = []
    for x, y, w in pairs:
        y = y + 1 if y >= x else y
        a, b = MODELS[x], MODELS[y]
        out.append((a, b, {"a": a, "b": b}.get(w, w)))
    return out


@settings(max_examples=40, deadline=None)
@given(vote_logs(), st.integers(0, 40))
def test_properties_of_the_floor_the_reference_and_the_rank(votes, floor):
    counts = bt.counts_from_votes(votes)
    res = bt.bootstrap(counts, rounds=40, seed=1, min_votes=floor)
    n = bt.model_votes(counts)
    assert list(res.provisional) == [v < max(floor, 1) for v in n]
    ranked = res.rank() > 0
    fitted = np.isfinite(res.score)
    assert not np.any(fitted & res.provisional)                  # provisional: no score, no interval, no rank
    assert not np.any(ranked & res.provisional)
    if fitted.any():
        assert fitted.sum() >= 2
        assert res.score[fitted].mean() == pytest.approx(1000.0, abs=1e-6)   # reference: mean of established
        f = fitted
        assert np.all(res.low[f] <= res.score[f] + 1e-9) and np.all(res.score[f] <= res.high[f] + 1e-9)
        for k in np.flatnonzero(ranked):                             # 1 + ranked models entirely above
            assert res.rank()[k] == 1 + sum(res.low[j] > res.high[k] for j in np.flatnonzero(ranked))


@settings(max_examples=30, deadline=None)
@given(vote_logs(), st.integers(1, 6), st.integers(5, 40))
def test_a_provisional_newcomer_moves_no_established_model(votes, k, floor):
    """Up to floor - 1 votes of a new model leave every other model's score, interval and rank exactly as
    they were (unless a vote lifts its opponent over the floor: then the opponent joins, as it should)."""
    extra = [("new", MODELS[j % 6], "new" if j % 2 else "tie") for j in range(min(k, floor - 1))]
    before = bt.bootstrap(bt.counts_from_votes(votes), rounds=40, seed=3, min_votes=floor).as_dict()
    after = bt.bootstrap(bt.counts_from_votes(votes + extra), rounds=40, seed=3, min_votes=floor).as_dict()
    assert after["new"]["provisional"]
    if any(after[m]["provisional"] != r["provisional"] for m, r in before.items()):
        return
    for m, r in before.items():
        a = after[m]
        assert a["provisional"] == r["provisional"] and a["bt_rank"] == r["bt_rank"]
        for key in ("bt", "bt_low", "bt_high"):
            assert (math.isnan(a[key]) and math.isnan(r[key])) or a[key] == pytest.approx(r[key], abs=1e-6), (m, key)


# ------------------------------------------------------------------ the arena board: one headline order
def test_board_is_sorted_by_bradley_terry_rank_not_trueskill(tmp_path):
    """The service's table and the displayed board follow the BT interval rank (then score); TrueSkill rides
    along in the rows and under 'all columns' only. An axis without votes says so."""
    from arena.services.service import ArenaService, board_order
    from eval_backend.store import Store
    from leaderboard.arena_leaderboard_tab import ALL_COLUMNS, COLUMNS, NO_VOTES, board_rows

    svc = ArenaService(Store(tmp_path / "data"))
    log = report.synthetic_log(0, newcomer=True)
    with svc.store.transaction() as conn:
        for k, (a, b, w) in enumerate(log):
            slot = "A" if w == a else "B" if w == b else w
            svc.vote_log.record(conn, {"battle_id": None, "model_a": a, "model_b": b, "winner": w, "slot": slot,
                               "said": None, "sounded": None, "reason": None, "session_id": None, "user": None,
                               "ip_hash": None, "first_heard": "A", "attribute": None, "dimension": None,
                               "benchmark_hash": "bh", "request_id": f"r{k}", "created_at": 1e9 + k,
                               "source": "import"})
    table = svc.ratings_table(rounds=200)
    assert table == sorted(table, key=board_order)
    ranked = [r for r in table if not r["provisional"]]
    assert [r["model"] for r in table][-1] == report.NEWCOMER and table[-1]["provisional"]
    assert [r["bt_rank"] for r in ranked] == sorted(r["bt_rank"] for r in ranked)
    for x, y in zip(ranked, ranked[1:]):                  # within a rank, the higher score first
        assert x["bt_rank"] < y["bt_rank"] or x["bt"] >= y["bt"]
    # the TrueSkill order differs on this log, so the test can tell the two keys apart
    assert [r["model"] for r in ranked] != [r["model"] for r in sorted(ranked, key=lambda r: -r["conservative"])]

    df = board_rows(table, svc.settings.provisional_votes)
    assert list(df.columns) == COLUMNS and "mu" not in df.columns
    assert list(df["model"]) == [r["model"] for r in table]
    assert df.iloc[-1]["BT 95% interval"] == f"too few votes (1 of {svc.settings.provisional_votes})"
    assert df.iloc[-1]["rank"] == "—" and df.iloc[0]["rank"] == 1
    full = board_rows(table, svc.settings.provisional_votes, all_columns=True)
    assert list(full.columns) == ALL_COLUMNS and full.iloc[0]["mu"] == round(table[0]["mu"], 2)

    assert svc.ratings_table("environment", rounds=20) == []       # no vote carries a vocal dimension
    empty = board_rows([], svc.settings.provisional_votes)
    assert len(empty) == 1 and empty.iloc[0]["model"] == NO_VOTES

    # `ratings --json` rows: same order, a provisional flag on each
    rows = svc.replayed_table(rounds=200)
    assert [r["model"] for r in rows] == [r["model"] for r in table]
    assert [r["provisional"] for r in rows] == [r["provisional"] for r in table]
