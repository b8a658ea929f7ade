"""Bradley-Terry on simulated battles with known strengths."""
import math

import numpy as np
import pytest

from arena.core import bradley_terry as bt


def _simulate(true: np.ndarray, n: int, seed: int, tie_share: float = 0.0):
    """Battles whose expected score (ties half) is exactly the BT probability."""
    rng = np.random.default_rng(seed)
    m = len(true)
    a = rng.integers(0, m, n)
    b = rng.integers(0, m - 1, n)
    b = np.where(b >= a, b + 1, b)
    p = 1 / (1 + np.exp(-(true[a] - true[b])))
    # with probability tie_share a tie; otherwise a win with q chosen so that q (1 - t) + t / 2 = p
    q = (p - tie_share / 2) / (1 - tie_share)
    assert q.min() >= 0 and q.max() <= 1
    tie = rng.random(n) < tie_share
    out = np.where(tie, 2, np.where(rng.random(n) < q, 0, 1))
    return a, b, out


@pytest.mark.parametrize("tie_share", [0.0, 0.2])
def test_recovers_known_strengths_and_interval_covers_truth(tie_share):
    true = np.array([-1.0, -0.5, -0.2, 0.0, 0.1, 0.3, 0.6, 0.9])
    a, b, out = _simulate(true, 40_000, seed=1, tie_share=tie_share)
    counts = bt.counts_from_arrays(a, b, out, [f"m{k}" for k in range(len(true))])
    assert counts.battles == 40_000
    s = bt.fit(counts)
    assert np.abs(s - (true - true.mean())).max() < 0.08
    res = bt.bootstrap(counts, rounds=300, seed=2)
    truth = bt.to_elo(true)
    covered = (res.low <= truth) & (truth <= res.high)
    assert covered.sum() >= 7, (res.low, truth, res.high)
    assert np.all(res.low < res.score) and np.all(res.score < res.high)
    assert list(np.argsort(res.score)) == list(range(len(true)))   # order recovered
    # the interval is not vacuous: 400 Elo points would be 10:1 odds
    assert np.all(res.high - res.low < 60)


def test_ties_are_half_wins_and_both_bad_is_left_out():
    votes = [("x", "y", "tie")] * 10 + [("x", "y", "both_bad")] * 50 + [("y", "z", "y"), ("z", "y", "z")]
    counts = bt.counts_from_votes(votes)
    assert counts.battles == 12
    s = bt.fit(counts)
    assert abs(s[0] - s[1]) < 1e-9 and abs(s[1] - s[2]) < 1e-9
    # one tie + one win for x over y
    s2 = bt.fit(bt.counts_from_votes([("x", "y", "tie"), ("x", "y", "x"), ("y", "x", "y")]))
    # x scores 1.5 of 3: equal strengths
    assert abs(s2[0] - s2[1]) < 1e-9
    s3 = bt.fit(bt.counts_from_votes([("x", "y", "tie"), ("x", "y", "x")] * 20))
    # x scores 0.75 per battle: log-odds ln 3 (minus a negligible ridge shrinkage)
    assert abs((s3[0] - s3[1]) - math.log(3)) < 1e-3


def test_array_and_vote_aggregation_agree_and_sides_do_not_matter():
    votes = [("a", "b", "a"), ("b", "a", "a"), ("b", "c", "tie"), ("c", "a", "c"), ("a", "c", "c")]
    c1 = bt.counts_from_votes(votes)
    flipped = [(y, x, w) for x, y, w in votes]
    c2 = bt.counts_from_votes(flipped)
    assert np.allclose(bt.fit(c1), bt.fit(c2)[[c2.models.index(m) for m in c1.models]])
    with pytest.raises(ValueError):
        bt.counts_from_votes([("a", "b", "c")])


def test_unbeaten_model_and_disconnected_graph_stay_finite():
    votes = [("x", "y", "x")] * 30 + [("p", "q", "q")] * 5 + [("p", "q", "p")] * 5
    res = bt.bootstrap(bt.counts_from_votes(votes), rounds=50)
    assert np.all(np.isfinite(res.score)) and np.all(np.isfinite(res.low))
    assert res.score[res.models.index("x")] > res.score[res.models.index("y")]


def test_rank_uses_interval_overlap():
    r = bt.BTResult(["a", "b", "c"], np.array([1100.0, 1090.0, 900.0]), np.array([1080.0, 1070.0, 880.0]),
                    np.array([1120.0, 1110.0, 920.0]), 100, 10)
    assert list(r.rank()) == [1, 1, 3]


def test_pairwise_matrices():
    rate, n = bt.pairwise(bt.counts_from_votes([("a", "b", "a"), ("a", "b", "tie"), ("b", "c", "c")]))
    assert n[0, 1] == 2 and n[1, 0] == 2 and n[1, 2] == 1
    assert rate[0, 1] == 0.75 and rate[1, 0] == 0.25 and rate[2, 1] == 1.0
    assert math.isnan(rate[0, 2])


def test_position_bias_interval():
    fair = bt.position_bias([("A", "A"), ("A", "B")] * 200 + [("A", "tie"), (None, "A")] * 50)
    assert fair.n == 400 and fair.share == 0.5 and fair.low < 0.5 < fair.high
    biased = bt.position_bias([("A", "A")] * 70 + [("A", "B")] * 30 + [("B", "B")] * 50)
    assert biased.k == 120 and biased.n == 150 and biased.low > 0.7
    ref = bt.wilson(60, 100)       # textbook Wilson interval for 60/100
    assert abs(ref.low - 0.5020) < 1e-3 and abs(ref.high - 0.6906) < 1e-3
    assert math.isnan(bt.position_bias([]).share)
