"""One way to add a rating method (arena/core/raters.py): a registry of raters, one typed row that the board, the CLI
and the release all read, and vote weights that every rater applies."""
import dataclasses
import math
import random

import numpy as np
import pytest

from arena.core import bradley_terry as bt
from arena.core import raters
from arena.services import release
from arena.core.ratings import DEFAULT_PARAMS, Rating, Vote, replay
from arena.services.service import ArenaService
from arena.tables.storage import VoteRow
from eval_backend.store import Store

MODELS = ("alpha", "beta", "gamma", "delta")


def make_votes(n: int = 400, seed: int = 1) -> list[VoteRow]:
    rng = random.Random(seed)
    skill = {"alpha": 0.8, "beta": 0.3, "gamma": 0.0, "delta": -0.6}
    out = []
    for k in range(n):
        a, b = rng.sample(MODELS, 2)
        p = 1 / (1 + math.exp(skill[b] - skill[a]))
        slot = rng.choices(["A", "B", "tie", "both_bad"], [0.85 * p, 0.85 * (1 - p), 0.1, 0.05])[0]
        out.append(VoteRow(k + 1, a, b, {"A": a, "B": b}.get(slot, slot), slot, None, None, None, "A",
                           rng.choice(["sad", "whisper", None]), None, "bh", f"r{k % 7}", 1.7e9 + k, "import",
                           a_duration_s=rng.uniform(2, 9), b_duration_s=rng.uniform(2, 9)))
    return out


def test_the_registry_holds_the_four_methods_and_refuses_others():
    assert set(raters.RATERS) == {"trueskill", "bt", "style_bt", "attribute_bt"}
    for key, rater in raters.RATERS.items():
        assert rater.key == key and callable(rater.rate)
    with pytest.raises(ValueError, match="not one of"):
        raters.build_rows(make_votes(10), raters.RateContext(), ("bt", "elo"))


def test_board_cli_and_release_read_one_row(tmp_path):
    """The three tables that were built by three near-copies agree on every shared field."""
    votes = make_votes()
    svc = ArenaService(Store(tmp_path / "d"), clock=lambda: 1.8e9)
    with svc.store.transaction() as conn:
        for v in votes:
            svc.vote_log.record(conn, {**{k: getattr(v, k) for k in ("model_a", "model_b", "winner", "slot", "said",
                                                              "sounded", "reason", "first_heard", "attribute",
                                                              "dimension", "benchmark_hash", "request_id",
                                                              "created_at", "source", "a_duration_s",
                                                              "b_duration_s")},
                               "battle_id": None, "session_id": None, "user": None, "ip_hash": None})
    board = svc.ratings_table(rounds=50)
    cli = svc.replayed_table(rounds=50)
    rel = release.leaderboard(svc.votes(), svc.settings.trueskill, 50, min_votes=svc.settings.provisional_votes)
    assert [set(r) for r in cli] == [set(raters.CLI_FIELDS)] * 4 and [set(r) for r in board] == [set(raters.BOARD_FIELDS)] * 4
    assert cli == rel
    for b, c in zip(board, cli):
        assert {k: b[k] for k in c} == c
    rows = svc.board(rounds=50).rows
    assert all(isinstance(r, raters.RatingRow) for r in rows) and [r.model for r in rows] == [r["model"] for r in cli]


def test_adding_a_rating_method_is_one_entry(monkeypatch):
    class WinShare:
        """A toy method: the share of decisive votes won (no interval)."""
        key = "win_share"
        scores_models = True

        def rate(self, votes, ctx):
            won, n = {}, {}
            for v, out in raters.rated(votes, ctx.axis):
                if out in ("A", "B"):
                    for slot, m in (("A", v.model_a), ("B", v.model_b)):
                        n[m] = n.get(m, 0) + 1
                        won[m] = won.get(m, 0) + (out == slot)
            return raters.Fit(scores={m: raters.Score(won[m] / n[m], provisional=False, votes=n[m]) for m in n})

    monkeypatch.setitem(raters.RATERS, "win_share", WinShare())
    board = raters.build_rows(make_votes(), raters.RateContext(rounds=20), ("bt", "win_share"))
    fields = raters.with_scores(raters.CLI_FIELDS, ("bt", "win_share"))
    assert fields[fields.index("bt_rank") + 1:][:3] == ("win_share", "win_share_low", "win_share_high")
    top = board.rows[0].as_json(fields)
    assert top["model"] == "alpha" and 0.5 < top["win_share"] < 1 and top["win_share_low"] is None


def test_weights_count_in_every_rater():
    votes = make_votes(600)
    ctx = raters.RateContext(rounds=100, min_votes=30)
    zero = [dataclasses.replace(v, weight=0.0) if v.id % 3 == 0 else v for v in votes]
    dropped = [v for v in votes if v.id % 3 != 0]
    for key in ("bt", "style_bt"):
        assert raters.RATERS[key].rate(zero, ctx).scores == raters.RATERS[key].rate(dropped, ctx).scores, key
    ts_zero = raters.RATERS["trueskill"].rate(zero, ctx).trueskill
    assert ts_zero == raters.RATERS["trueskill"].rate(dropped, ctx).trueskill
    assert raters.tally(zero, "overall") == raters.tally(dropped, "overall")
    # a constant weight leaves Bradley-Terry's scores as they were; halving one model's wins lowers it
    half = [dataclasses.replace(v, weight=0.5) for v in votes]
    full, halved = raters.RATERS["bt"].rate(votes, ctx).scores, raters.RATERS["bt"].rate(half, ctx).scores
    assert all(abs(full[m].value - halved[m].value) < 0.05 for m in MODELS)
    less = [dataclasses.replace(v, weight=0.25) if v.winner == "alpha" else v for v in votes]
    assert raters.RATERS["bt"].rate(less, ctx).scores["alpha"].value < full["alpha"].value - 30


def test_trueskill_weight_damps_the_update():
    v = Vote(1, "x", "y", "x")
    full = replay([v])
    none = replay([dataclasses.replace(v, weight=0.0)])
    half = replay([dataclasses.replace(v, weight=0.5)])
    fresh = Rating(DEFAULT_PARAMS.mu, DEFAULT_PARAMS.sigma)
    assert none == {"x": fresh, "y": fresh}
    assert half["x"].mu == pytest.approx((fresh.mu + full["x"].mu) / 2)
    assert half["x"].sigma ** 2 == pytest.approx((fresh.sigma ** 2 + full["x"].sigma ** 2) / 2)
    with pytest.raises(ValueError, match="weight"):
        replay([dataclasses.replace(v, weight=1.5)])


def test_plain_bradley_terry_weight_zero_is_leaving_out_exactly():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 500), rng.integers(0, 3, 500)
    b = np.where(b >= a, b + 1, b)
    out = rng.integers(0, 3, 500)
    w = (np.arange(500) % 4 != 0).astype(float)
    with_zero = bt.bootstrap(bt.counts_from_arrays(a, b, out, list("abcd"), w), 200, 0)
    keep = w > 0
    dropped = bt.bootstrap(bt.counts_from_arrays(a[keep], b[keep], out[keep], list("abcd")), 200, 0)
    for x, y in ((with_zero.score, dropped.score), (with_zero.low, dropped.low), (with_zero.high, dropped.high)):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bt.counts_from_arrays(a, b, out, list("abcd"), np.full(500, -0.5))


def test_the_attribute_rater_scores_each_vocal_state_with_the_floor():
    votes = make_votes(600)
    fit = raters.RATERS["attribute_bt"].rate(votes, raters.RateContext(rounds=30, min_votes=30))
    grid = fit.details["grid"]
    assert list(grid) == ["sad", "whisper"]
    for attr, scores in grid.items():
        subset = raters.votes_with_attribute(votes, attr)
        assert scores == raters.RATERS["bt"].rate(subset, raters.RateContext(rounds=30, min_votes=30)).scores
    few = raters.RATERS["attribute_bt"].rate(votes[:60], raters.RateContext(rounds=30, min_votes=30))
    assert all(s.provisional and s.value is None for scores in few.details["grid"].values()
               for s in scores.values())
    assert raters.check_attribute(" SAD ") == "sad" and raters.attributes_in(votes) == ["sad", "whisper"]
