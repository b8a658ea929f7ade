"""Style control (arena/core/style_bt.py): on a log where reply length really sways votes, the plain Bradley-Terry fit
rewards the long-winded model, the style fit recovers the true strengths and finds the length effect with the
right sign; its score is the exact maximum-likelihood fit; its intervals match an exact battle-level bootstrap;
vote weights count as they should."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from arena.core import bradley_terry as bt
from arena.core import style_bt

MODELS = ["terse-strong", "kind", "warm", "plain", "flat", "windbag"]
TRUE = np.array([0.9, 0.5, 0.2, -0.1, -0.4, -1.1])      # log-strengths; the windbag is the weakest
BETA = 0.7                                               # log-odds per doubling of length


def length_swayed_log(n: int, seed: int = 0, ties: float = 0.0):
    """Battles where the longer reply wins more often: the windbag's replies are ~3x as long as the others'."""
    rng = np.random.default_rng(seed)
    m = len(MODELS)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    typical = np.zeros(m)
    typical[MODELS.index("windbag")] = math.log2(3.0)
    la = 2.5 + typical[a] + rng.normal(0, 0.6, n)       # log2 seconds: each reply's own length varies too
    lb = 2.5 + typical[b] + rng.normal(0, 0.6, n)
    p = 1 / (1 + np.exp(-(TRUE[a] - TRUE[b] + BETA * (la - lb))))
    out = np.where(rng.random(n) < p, 0, 1)
    if ties:
        out = np.where(rng.random(n) < ties, 2, out)
    return a, b, out, la - lb


def true_elo() -> np.ndarray:
    return bt.to_elo(TRUE)


def test_plain_rewards_length_and_style_recovers_the_true_strengths():
    a, b, out, dlen = length_swayed_log(12_000)
    plain = bt.bootstrap(bt.counts_from_arrays(a, b, out, MODELS), rounds=200, seed=0)
    w = MODELS.index("windbag")
    # the data can fail the plain fit: it ranks the weakest model well above the two models truly stronger than it
    assert plain.score[w] > plain.score[MODELS.index("flat")] + 40
    assert plain.score[w] > plain.score[MODELS.index("plain")]
    assert abs(plain.score[w] - true_elo()[w]) > 150

    res = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), dlen[:, None],
                                                   ("duration",)), rounds=200, seed=0)
    assert list(np.argsort(-res.bt.score)) == list(range(len(MODELS)))          # the true order
    assert np.max(np.abs(res.bt.score - true_elo())) < 25                         # Elo points
    inside = (res.bt.low <= true_elo()) & (true_elo() <= res.bt.high)
    assert inside.sum() >= 5, (res.bt.low, true_elo(), res.bt.high)
    # the duration effect: positive, its interval excludes 0 and holds the truth
    assert res.coef[0] > 0 and res.coef_low[0] > 0
    assert res.coef_low[0] <= BETA <= res.coef_high[0], (res.coef_low, res.coef_high)
    assert res.bt.low[w] <= res.bt.score[w] <= res.bt.high[w]


def _exact_mle(a, b, out, diffs, prior=style_bt.PRIOR):
    """An independent maximum-likelihood fit (scipy, per battle, the same ridge on the normalised problem)."""
    m = len(MODELS)
    sd = diffs.std(axis=0)
    z = diffs / sd
    y = np.array([1.0, 0.0, 0.5])[out]

    def nll(theta):
        s, beta = theta[:m], theta[m:]
        eta = s[a] - s[b] + z @ beta
        return float(np.sum(np.logaddexp(0, eta) - y * eta) + 0.5 * prior * theta @ theta)

    def grad(theta):
        s, beta = theta[:m], theta[m:]
        r = 1 / (1 + np.exp(-(s[a] - s[b] + z @ beta))) - y
        g = np.zeros(len(theta))
        np.add.at(g, a, r)
        np.add.at(g, b, -r)
        g[m:] = z.T @ r
        return g + prior * theta

    theta = minimize(nll, np.zeros(m + diffs.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-9}).x
    return bt.to_elo(theta[:m]), theta[m:] / sd


def test_the_score_is_the_exact_maximum_likelihood_fit():
    a, b, out, dlen = length_swayed_log(3000, seed=4, ties=0.1)
    rng = np.random.default_rng(9)
    diffs = np.stack([dlen, rng.normal(0, 3, len(a))], axis=1)        # a second covariate that does nothing
    res = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), diffs,
                                                   ("duration", "loudness")), rounds=0)
    elo, coef = _exact_mle(a, b, out, diffs)
    assert np.max(np.abs(res.bt.score - elo)) < 1e-4
    assert np.max(np.abs(res.coef - coef)) < 1e-6
    assert abs(res.coef[1]) < 3 * 0.02      # no effect where there is none (a few standard errors)


def _battle_level_bootstrap(a, b, out, diffs, rounds, seed=1):
    """The exact bootstrap: resample battles themselves and refit each round (slow: tests only)."""
    m = len(MODELS)
    sd = diffs.std(axis=0)
    z = (diffs / sd * np.where(a < b, 1.0, -1.0)[:, None]).T
    rel = np.where(out == 2, 2, np.where(a < b, out, 1 - out))
    pair = np.minimum(a, b) * m + np.maximum(a, b)
    model = style_bt._Model(m, style_bt._battle_terms(m, pair, z))
    won = np.array([1.0, 0.0, 0.5])[rel]
    theta = style_bt._newton(model, np.ones((1, len(a))), won[None], style_bt.PRIOR)[0]
    rng = np.random.default_rng(seed)
    out_rounds = []
    for _ in range(rounds // 50):
        w = np.stack([np.bincount(rng.integers(0, len(a), len(a)), minlength=len(a)) for _ in range(50)])
        out_rounds.append(style_bt._newton(model, w.astype(float), w * won, style_bt.PRIOR, start=theta, tol=1e-7))
    th = np.concatenate(out_rounds)
    return np.percentile(bt.to_elo(th[:, :m]), [2.5, 97.5], axis=0), np.percentile(th[:, m:] / sd, [2.5, 97.5],
                                                                                    axis=0)


def test_intervals_match_an_exact_battle_level_bootstrap():
    """The O(pairs) bootstrap (cells, normal within-cell means) against resampling the battles themselves."""
    a, b, out, dlen = length_swayed_log(4000, seed=2, ties=0.1)
    rng = np.random.default_rng(3)
    diffs = np.stack([dlen, dlen * 0.5 + rng.normal(0, 0.5, len(a))], axis=1)    # correlated covariates
    res = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), diffs,
                                                   ("duration", "words")), rounds=600, seed=0)
    (lo, hi), (clo, chi) = _battle_level_bootstrap(a, b, out, diffs, 600)
    width, exact_width = res.bt.high - res.bt.low, hi - lo
    assert np.all(np.abs(width / exact_width - 1) < 0.15), (width, exact_width)
    cwidth, exact_cwidth = res.coef_high - res.coef_low, chi - clo
    assert np.all(np.abs(cwidth / exact_cwidth - 1) < 0.15), (cwidth, exact_cwidth)
    # centred alike: each bound within a fifth of the exact interval's width
    assert np.all(np.abs(res.bt.low - lo) < 0.2 * exact_width) and np.all(np.abs(res.bt.high - hi) < 0.2 * exact_width)


def test_weights_zero_is_leaving_out_and_a_constant_weight_changes_nothing():
    a, b, out, dlen = length_swayed_log(3000, seed=5)
    keep = np.arange(len(a)) % 3 != 0
    w = keep.astype(float)
    with_zero = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, w, dlen[:, None], ("duration",)),
                                   rounds=100, seed=0)
    dropped = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a[keep], b[keep], out[keep], np.ones(keep.sum()),
                                                       dlen[keep, None], ("duration",)), rounds=100, seed=0)
    for x, y in ((with_zero.bt.score, dropped.bt.score), (with_zero.bt.low, dropped.bt.low),
                 (with_zero.coef_high, dropped.coef_high)):
        np.testing.assert_array_equal(x, y)
    half = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.full(len(a), 0.5), dlen[:, None],
                                                    ("duration",)), rounds=100, seed=0)
    full = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), dlen[:, None],
                                                    ("duration",)), rounds=100, seed=0)
    assert np.max(np.abs(half.bt.score - full.bt.score)) < 0.05 and abs(half.coef[0] - full.coef[0]) < 1e-3
    # down-weighting the windbag's wins moves it down
    wb = MODELS.index("windbag")
    won = ((a == wb) & (out == 0)) | ((b == wb) & (out == 1))
    less = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.where(won, 0.3, 1.0), dlen[:, None],
                                                    ("duration",)), rounds=0)
    assert less.bt.score[wb] < full.bt.score[wb] - 20


def test_floor_missing_and_constant_covariates():
    a, b, out, dlen = length_swayed_log(2000, seed=6)
    diffs = np.stack([dlen, np.zeros(len(a)), dlen.copy()], axis=1)
    diffs[:50, 2] = np.nan                          # 50 battles lack the third measure: left out of the fit
    res = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), diffs,
                                                   ("duration", "loudness", "words")), rounds=50, seed=0,
                             min_votes=30)
    assert res.battles == len(a) - 50
    assert math.isnan(res.coef[1]) and "never varied" in res.why_not["loudness"]
    assert res.effects()["loudness"]["coef"] is None
    # a covariate no battle has (an imported log with durations only) is not fitted, and no battle is lost for it
    only = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)),
                                                    np.stack([dlen, np.full(len(a), np.nan)], axis=1),
                                                    ("duration", "latency")), rounds=0)
    assert only.battles == len(a) and only.why_not == {"latency": "not measured in these battles"}
    assert only.coef[0] > 0
    # a model under the floor is provisional: no score, and the others are fitted without it
    extra = style_bt.StyleBattles(MODELS + ["newcomer"], np.r_[a, [6, 6]], np.r_[b, [0, 1]], np.r_[out, [0, 0]],
                                  np.ones(len(a) + 2), np.r_[dlen, [1.0, 1.0]][:, None], ("duration",))
    r2 = style_bt.bootstrap(extra, rounds=50, seed=0, min_votes=30)
    assert r2.bt.provisional[6] and math.isnan(r2.bt.score[6]) and r2.bt.votes[6] == 2
    base = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(len(a)), dlen[:, None],
                                                    ("duration",)), rounds=50, seed=0, min_votes=30)
    np.testing.assert_array_equal(r2.bt.score[:6], base.bt.score)


def test_too_few_battles_fit_nothing():
    res = style_bt.bootstrap(style_bt.StyleBattles(["x", "y"], [0], [1], [0], [1.0], [[1.0]], ("duration",)),
                             rounds=20, min_votes=30)
    assert res.bt.provisional.all() and np.isnan(res.bt.score).all() and math.isnan(res.coef[0])
    with pytest.raises(ValueError, match="two different"):
        style_bt.StyleBattles(["x"], [0], [0], [0], [1.0], [[1.0]], ("duration",))


def test_a_covariate_without_effect_gives_the_plain_board_even_on_a_small_lopsided_log():
    """300 battles, one model unbeaten: with a covariate that sways nothing, the style board is the plain one
    (scores within a few points, intervals as wide), so the rounds on pair totals keep the plain fit's handling
    of lopsided records."""
    rng = np.random.default_rng(11)
    m, n = 6, 300
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    strength = np.array([0.0, 0.3, -0.2, 0.5, -0.4, 0.1])
    out = np.where(rng.random(n) < 1 / (1 + np.exp(-(strength[a] - strength[b]))), 0, 1)
    out = np.where(a == 5, 0, np.where(b == 5, 1, out))                 # model 5 never loses
    noise = rng.normal(0, 1, n)[:, None]
    plain = bt.bootstrap(bt.counts_from_arrays(a, b, out, MODELS), rounds=1000, seed=0, min_votes=30)
    res = style_bt.bootstrap(style_bt.StyleBattles(MODELS, a, b, out, np.ones(n), noise, ("loudness",)),
                             rounds=1000, seed=0, min_votes=30)
    assert np.max(np.abs(res.bt.score - plain.score)) < 8
    width, plain_width = res.bt.high - res.bt.low, plain.high - plain.low
    assert np.all(np.abs(width / plain_width - 1) < 0.2), (width, plain_width)
    # the unbeaten model: held by the ridge far above the others, as in the plain fit; its interval holds its score
    assert res.bt.score[5] > res.bt.score[:5].max() + 1000 and res.bt.low[5] <= res.bt.score[5] <= res.bt.high[5]
    assert res.coef_low[0] < 0 < res.coef_high[0]
