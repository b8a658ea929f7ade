"""TrueSkill for 1-vs-1 battles with draws, in closed form, on plain floats.

This reproduces `trueskill.rate_1vs1` / `quality_1vs1` (package 0.4.5, default
backend) without the factor graph: for two players the message passing
converges to the textbook update (Herbrich et al. 2007)

    s_i^2 = sigma_i^2 + tau^2                  (dynamics added before the update)
    c^2   = 2 beta^2 + s_1^2 + s_2^2
    t     = (mu_winner - mu_loser) / c,  e = draw_margin / c
    mu_winner += s_w^2 / c * v(t, e)         mu_loser -= s_l^2 / c * v(t, e)
    sigma_i^2  = s_i^2 * (1 - s_i^2 / c^2 * w(t, e))

with (v, w) the win or draw truncation functions. To agree with the package to
~1e-12 we use its own erfc approximation (Numerical Recipes `erfcc`) for the
normal CDF and its Newton-refined inverse for the draw margin: the exact math.erfc
would differ from the package by ~1e-7.

Where the package gives up (FloatingPointError on an extreme upset, when the
approximate CDF underflows) we continue with a stable continued-fraction tail
instead, so one surprising vote never blocks the arena.

Pure functions on dataclasses; `replay` is the canonical, order-defined rating of
a vote log (votes sorted by id).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter
from typing import Iterable

TIE = "tie"
BOTH_BAD = "both_bad"

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class TrueSkillParams:
    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float = 0.10

    def __post_init__(self) -> None:
        if not (self.sigma > 0 and self.beta > 0 and self.tau >= 0):
            raise ValueError("sigma and beta must be > 0 and tau >= 0")
        if not 0.0 < self.draw_probability < 1.0:   # ties are votes here: a zero draw margin cannot rate them
            raise ValueError("draw_probability must be in (0, 1)")

    @property
    def draw_margin(self) -> float:
        """As trueskill.calc_draw_margin(p, size=2): ppf((p + 1) / 2) * sqrt(2) * beta."""
        return ppf((self.draw_probability + 1.0) / 2.0) * _SQRT2 * self.beta


DEFAULT_PARAMS = TrueSkillParams()


@dataclass(frozen=True)
class Rating:
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """The leaderboard key: mu - 3 sigma."""
        return self.mu - 3.0 * self.sigma


def initial(params: TrueSkillParams = DEFAULT_PARAMS) -> Rating:
    return Rating(params.mu, params.sigma)


# --- the package's normal distribution functions (trueskill.backends, default backend) ---
def erfc(x: float) -> float:
    """Numerical Recipes' erfcc (fractional error < 1.2e-7), exactly as trueskill evaluates it."""
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (
        0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
            0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
                -0.82215223 + t * 0.17087277)))))))))
    return 2.0 - r if x < 0 else r


def cdf(x: float) -> float:
    return 0.5 * erfc(-x / _SQRT2)


def pdf(x: float) -> float:
    return _INV_SQRT_2PI * math.exp(-(x * x) / 2.0)


def _erfcinv(y: float) -> float:
    if y >= 2:
        return -100.0
    if y <= 0:
        return 100.0
    zero_point = y < 1
    if not zero_point:
        y = 2 - y
    t = math.sqrt(-2 * math.log(y / 2.0))
    x = -0.70711 * ((2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t)
    for _ in range(2):
        err = erfc(x) - y
        x += err / (1.12837916709551257 * math.exp(-(x ** 2)) - x * err)
    return x if zero_point else -x


def ppf(p: float) -> float:
    return -_SQRT2 * _erfcinv(2 * p)


# --- stable tail for where the package's approximation underflows ---
def _mills_tail(z: float) -> float:
    """K(z) = v(-z) - z, where v(x) = pdf(x)/cdf(x) and z = -x > 0.

    Mills' ratio cdf(-z)/pdf(z) = 1/(z + K) with K = 1/(z + 2/(z + 3/(z + ...))); taking K
    from the continued fraction avoids the cancellation in v + x."""
    acc = 0.0
    for k in range(80, 0, -1):
        acc = k / (z + acc)
    return acc


def _v_w_win_tail(x: float) -> tuple[float, float]:
    z = -x
    k = _mills_tail(z)          # v = z + k, v + x = k
    return z + k, (z + k) * k


def _v_w_draw_tail(t: float, e: float) -> tuple[float, float]:
    """Draw update when both truncation bounds sit deep in the lower tail, by ratios to pdf(a)."""
    at = abs(t)
    a, b = e - at, -e - at
    ratio = math.exp(-2.0 * e * at)              # pdf(b) / pdf(a)
    ra = 1.0 / (-a + _mills_tail(-a))            # cdf(a) / pdf(a)
    rb = 1.0 / (-b + _mills_tail(-b))
    denom = ra - ratio * rb
    v = (ratio - 1.0) / denom
    w = v * v + (a - b * ratio) / denom
    return (v if t >= 0 else -v), w


# --- v and w, exactly as trueskill.TrueSkill.v_win / w_win / v_draw / w_draw ---
def v_w_win(t: float, e: float) -> tuple[float, float]:
    x = t - e
    denom = cdf(x)
    v = pdf(x) / denom if denom else -x
    w = v * (v + x)
    if 0 < w < 1:
        return v, w
    return _win_fallback(x, v)


def _win_fallback(x: float, v: float) -> tuple[float, float]:
    """Where the package raises: an expected win so sure that pdf(x) underflowed (no update),
    or an upset so large that cdf(x) did (the stable tail)."""
    if x > 0:
        return max(v, 0.0), 0.0
    return _v_w_win_tail(x)


def v_w_draw(t: float, e: float) -> tuple[float, float]:
    at = abs(t)
    a, b = e - at, -e - at
    denom = cdf(a) - cdf(b)
    if not denom:
        return _v_w_draw_tail(t, e)
    pa, pb = pdf(a), pdf(b)
    v_abs = (pb - pa) / denom
    w = v_abs * v_abs + (a * pa - b * pb) / denom
    if not 0 < w < 1:
        return _v_w_draw_tail(t, e)
    return (-v_abs if t < 0 else v_abs), w


def rate_1vs1(r1: Rating, r2: Rating, drawn: bool = False,
              params: TrueSkillParams = DEFAULT_PARAMS) -> tuple[Rating, Rating]:
    """New ratings after r1 beat r2 (or drew with r2 when drawn)."""
    m1, s1, m2, s2 = _update(r1.mu, r1.sigma, r2.mu, r2.sigma, drawn,
                             params.beta * params.beta, params.tau * params.tau, params.draw_margin)
    return Rating(m1, s1), Rating(m2, s2)


def _update(mu1: float, sigma1: float, mu2: float, sigma2: float, drawn: bool,
            beta2: float, tau2: float, margin: float,
            exp=math.exp, sqrt=math.sqrt) -> tuple[float, float, float, float]:   # local names: faster
    v1 = sigma1 * sigma1 + tau2
    v2 = sigma2 * sigma2 + tau2
    c2 = 2.0 * beta2 + v1 + v2
    c = sqrt(c2)
    t = (mu1 - mu2) / c
    e = margin / c
    if drawn:
        v, w = v_w_draw(t, e)
    else:
        # v_w_win inlined (the replay's hot path): the same operations in the same order, so the same floats
        x = t - e
        y = -x / _SQRT2
        z = -y if y < 0 else y
        k = 1.0 / (1.0 + z / 2.0)
        r = k * exp(-z * z - 1.26551223 + k * (1.00002368 + k * (
            0.37409196 + k * (0.09678418 + k * (-0.18628806 + k * (
                0.27886807 + k * (-1.13520398 + k * (1.48851587 + k * (
                    -0.82215223 + k * 0.17087277)))))))))
        denom = 0.5 * (2.0 - r if y < 0 else r)
        v = _INV_SQRT_2PI * exp(-(x * x) / 2.0) / denom if denom else -x
        w = v * (v + x)
        if not 0 < w < 1:
            v, w = _win_fallback(x, v)
    return (mu1 + v1 / c * v, sqrt(v1 * (1.0 - v1 / c2 * w)),
            mu2 - v2 / c * v, sqrt(v2 * (1.0 - v2 / c2 * w)))


def quality_1vs1(r1: Rating, r2: Rating, params: TrueSkillParams = DEFAULT_PARAMS) -> float:
    """Draw probability relative to the most even match (trueskill.quality_1vs1)."""
    b2 = 2.0 * params.beta ** 2
    denom = b2 + r1.sigma ** 2 + r2.sigma ** 2
    return math.sqrt(b2 / denom) * math.exp(-((r1.mu - r2.mu) ** 2) / (2.0 * denom))


# --- replaying a vote log ---
@dataclass(frozen=True)
class Vote:
    """One vote as the rating needs it. winner: model_a, model_b, 'tie' or 'both_bad'. weight: how much it
    counts (VoteRow.weight): 1 the usual update, 0 none, between a damped one (see `replay`)."""
    id: int
    model_a: str
    model_b: str
    winner: str
    weight: float = 1.0


def replay(votes: Iterable[Vote], params: TrueSkillParams = DEFAULT_PARAMS,
           ratings: dict[str, Rating] | None = None) -> dict[str, Rating]:
    """Ratings after applying votes in id order, starting from `ratings` (default: fresh).

    'tie' is a draw; 'both_bad' leaves ratings untouched (it is counted elsewhere),
    but a model seen only in both-bad votes still gets its initial rating. A vote of weight w < 1 moves each
    rating's mean and variance w of the way to the full update (w = 0: no update; w = 1: exactly the update).
    """
    votes = list(votes)
    if any(votes[i].id >= votes[i + 1].id for i in range(len(votes) - 1)):
        votes.sort(key=attrgetter("id"))
    state: dict[str, list[float]] = {name: [r.mu, r.sigma] for name, r in (ratings or {}).items()}
    beta2, tau2, margin = params.beta ** 2, params.tau ** 2, params.draw_margin
    mu0, s0 = params.mu, params.sigma
    update = _update
    for vote in votes:
        a, b, win = vote.model_a, vote.model_b, vote.winner
        ra = state.get(a)
        if ra is None:
            ra = state[a] = [mu0, s0]
        rb = state.get(b)
        if rb is None:
            rb = state[b] = [mu0, s0]
        if vote.weight != 1.0:
            _weighted(vote, ra, rb, update, beta2, tau2, margin)
        elif win == b:
            rb[0], rb[1], ra[0], ra[1] = update(rb[0], rb[1], ra[0], ra[1], False, beta2, tau2, margin)
        elif win == a or win == TIE:
            ra[0], ra[1], rb[0], rb[1] = update(ra[0], ra[1], rb[0], rb[1], win == TIE, beta2, tau2, margin)
        elif win != BOTH_BAD:
            raise ValueError(f"vote {vote.id}: winner {win!r} is not {a!r}, {b!r}, 'tie' or 'both_bad'")
    return {name: Rating(m, s) for name, (m, s) in state.items()}


def _weighted(vote: Vote, ra: list[float], rb: list[float], update, beta2: float, tau2: float, margin: float
              ) -> None:
    """A vote of weight w in [0, 1): mean and variance of both ratings move w of the way to the full update."""
    w, win = vote.weight, vote.winner
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"vote {vote.id}: weight {w!r} is not in [0, 1]")
    if win not in (vote.model_a, vote.model_b, TIE):
        if win != BOTH_BAD:
            raise ValueError(f"vote {vote.id}: winner {win!r} is not {vote.model_a!r}, {vote.model_b!r}, "
                             "'tie' or 'both_bad'")
        return
    first, second = (rb, ra) if win == vote.model_b else (ra, rb)
    new = update(first[0], first[1], second[0], second[1], win == TIE, beta2, tau2, margin)
    for r, (mu, sigma) in ((first, new[:2]), (second, new[2:])):
        r[0], r[1] = r[0] + w * (mu - r[0]), math.sqrt(r[1] * r[1] + w * (sigma * sigma - r[1] * r[1]))


def apply_vote(ra: Rating, rb: Rating, outcome: str,
               params: TrueSkillParams = DEFAULT_PARAMS) -> tuple[Rating, Rating]:
    """One live update, identical to what `replay` does: outcome is 'A', 'B', 'tie' or 'both_bad'."""
    if outcome == "A":
        return rate_1vs1(ra, rb, False, params)
    if outcome == "B":
        nb, na = rate_1vs1(rb, ra, False, params)
        return na, nb
    if outcome == TIE:
        return rate_1vs1(ra, rb, True, params)
    if outcome == BOTH_BAD:
        return ra, rb
    raise ValueError(f"outcome {outcome!r} is not A, B, tie or both_bad")
