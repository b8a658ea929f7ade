"""Bradley–Terry with style covariates ("style control" for spoken replies), with bootstrap intervals.

Model: P(A beats B) = 1 / (1 + exp(-(s_A - s_B + beta . z))), z the battle's A - B covariate differences
(arena/core/covariates.py says which and in what units: log2 duration ratio, LUFS difference, ...), each divided
by its standard deviation over the fitted battles (LMArena's style control normalises the same way). The
strengths s are then the models' strengths *all else equal*: a model that wins because its replies are longer
gets its length's share in beta, not in s. Ties count half a win each, both-bad votes are left out, votes
carry a weight (0 = excluded), and the vote floor, the scale and the reference are the plain fit's
(arena/core/bradley_terry.py): provisional models are left out, the mean of the others is 1000.

The score is the exact maximum-likelihood fit over the individual battles (a Newton method; battles summed
per pair). The interval comes from a bootstrap whose rounds cost O(pairs), as the plain fit's do, not
O(battles). A round stands for a resample of the N battles:
- the number of battles in each (pair, outcome) cell: Multinomial(N, cell share), exactly as a battle resample;
- the spread of the resampled battles' score vectors within each pair: one normal vector per pair, with the
  covariance of that pair's battles' own score vectors at the fit (the central limit theorem; nothing to
  spread for a pair of identical battles);
and maximises the Bradley-Terry likelihood of the pair totals, each pair at its battles' mean covariate
difference (as the plain fit's rounds work on pair counts), corrected to the exact battles at the fit: each
cell's drawn battles add their exact mean score beyond what the pair term gives them, and the within-pair
information is added as a fixed curvature. So the round with the data's own counts and no noise gives back the
score exactly, every round has the exact battle-level information at the fit, and the logistic curvature
between pairs (lopsided pairs, unbeaten records) is kept. The interval is the 2.5-97.5 percentile range of the
rounds, widened to contain the score as in the plain fit. tests/test_style_bt.py checks it against an exact
battle-level bootstrap (widths within the reference's Monte Carlo error) and against the plain fit where no
covariate sways the votes.

Cost (benchmarks/bench_style_bt.py, docs/benchmarks.md): O(battles x covariates^2) once for the fit and the
cells' moments, then O(rounds x pairs x covariates^2) for the bootstrap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from arena.core.bradley_terry import BTResult, to_elo

PRIOR = 1e-4        # the plain fit's ridge, on strengths and on the normalised coefficients
START_SAMPLE = 50_000   # battles in the sample whose fit starts the exact one
TOL = 1e-3          # a round stops when no step exceeds this: Newton's quadratic phase then leaves ~1e-6 logits


@dataclass
class StyleBattles:
    """The battles of one fit: model indices, outcome (0 = A won, 1 = B won, 2 = tie), weight, and the A - B
    covariate differences (N, c) in the covariates' fit units, NaN where not measured."""
    models: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    weight: np.ndarray
    diffs: np.ndarray
    covariates: tuple[str, ...]

    def __post_init__(self):
        self.a, self.b, self.outcome = (np.asarray(x, dtype=np.int64) for x in (self.a, self.b, self.outcome))
        self.weight = np.asarray(self.weight, dtype=float)
        self.diffs = np.asarray(self.diffs, dtype=float).reshape(len(self.a), len(self.covariates))
        if np.any(self.a == self.b):
            raise ValueError("a battle needs two different models")


@dataclass
class StyleResult:
    bt: BTResult                 # strengths on the plain fit's scale (Elo-like, mean of the ranked models 1000)
    covariates: tuple[str, ...]
    coef: np.ndarray             # (c,) log-odds per fit unit of the covariate; NaN where not fitted
    coef_low: np.ndarray
    coef_high: np.ndarray
    scale: np.ndarray            # (c,) the standard deviation each difference was divided by; NaN: not fitted
    why_not: dict[str, str]      # covariate -> why it was not fitted
    battles: int                 # battles in the fit (non-provisional models, weight > 0)

    def effects(self) -> dict[str, dict]:
        return {name: {"coef": _num(self.coef[k]), "low": _num(self.coef_low[k]), "high": _num(self.coef_high[k]),
                       "scale": _num(self.scale[k]), "not_fitted": self.why_not.get(name)}
                for k, name in enumerate(self.covariates)}


def _num(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


# ---------------------------------------------------------------- the fitter
@dataclass
class _Terms:
    """Likelihood terms, each on one pair of models (pi[p] < pj[p]) with a covariate difference z (c, K) (the
    battle's, or a pair's mean): term k belongs to pair `pair[k]`. With `starts` the terms are sorted by pair
    (pair p holds starts[p]:starts[p+1]); without, in any order (summed per pair by bincount)."""
    pi: np.ndarray
    pj: np.ndarray
    pair: np.ndarray
    starts: np.ndarray | None
    z: np.ndarray

    def to_pairs(self, x: np.ndarray) -> np.ndarray:
        """Sum (..., K) over each pair's terms -> (..., P)."""
        if self.starts is not None:
            return np.add.reduceat(x, self.starts, axis=-1)
        flat = x.reshape(-1, x.shape[-1])
        out = np.zeros((len(flat), len(self.pi)))
        for r, row in enumerate(flat):
            out[r] = np.bincount(self.pair, weights=row, minlength=len(self.pi))
        return out.reshape(x.shape[:-1] + (len(self.pi),))


@dataclass
class _Correction:
    """What a bootstrap round adds to its terms' log-likelihood: a constant gradient `g` (R, d) and a fixed
    curvature `hess` (1 | R, d, d) around `at` (d,): gradient g - hess (theta - at), Hessian + hess."""
    g: np.ndarray
    hess: np.ndarray
    at: np.ndarray


class _Model:
    """The parameter space of one fit, m strengths then c coefficients, and sums of per-term parts into it."""

    def __init__(self, m: int, terms: _Terms):
        self.m, self.terms = m, terms
        self.inc = np.zeros((len(terms.pi), m))
        self.inc[np.arange(len(terms.pi)), terms.pi] = 1.0
        self.inc[np.arange(len(terms.pi)), terms.pj] = -1.0
        self.absinc = np.abs(self.inc)
        self.upper, self.lower = terms.pi * m + terms.pj, terms.pj * m + terms.pi

    def vector(self, s_part: np.ndarray, b_part: np.ndarray) -> np.ndarray:
        """(R, d) from per-term strength-difference parts (R, K) and coefficient parts (R, c)."""
        return np.concatenate([self.terms.to_pairs(s_part) @ self.inc, b_part], axis=1)

    def matrix(self, ss: np.ndarray, sb: np.ndarray, bb: np.ndarray) -> np.ndarray:
        """(R, d, d) from per-term parts: ss (R, K) on (e_i - e_j)(e_i - e_j)', sb (R, c, K) on the strengths x
        coefficients block, bb (R, c, c) already summed."""
        m, (R, c) = self.m, bb.shape[:2]
        out = np.empty((R, m + c, m + c))
        pair = self.terms.to_pairs(ss)
        lap = np.zeros((R, m * m))
        lap[:, self.upper] = -pair
        lap[:, self.lower] = -pair
        lap[:, np.arange(m) * (m + 1)] = pair @ self.absinc
        out[:, :m, :m] = lap.reshape(R, m, m)
        cross = (self.terms.to_pairs(sb.reshape(R * c, sb.shape[-1])) @ self.inc).reshape(R, c, m)
        out[:, m:, :m] = cross
        out[:, :m, m:] = cross.transpose(0, 2, 1)
        out[:, m:, m:] = bb
        return out


def _newton(model: _Model, n: np.ndarray, won: np.ndarray, prior: float, start: np.ndarray | None = None,
            fix: _Correction | None = None, tol: float = 1e-9, max_iter: int = 100) -> np.ndarray:
    """(R, m + c): strengths (centred) and coefficients maximising, for each round r, the terms' log-likelihood
    sum_k won[r,k] log p_k + (n - won)[r,k] log(1 - p_k), p_k = 1 / (1 + exp(-(s_i - s_j + beta . z_k))) (a tie:
    half a win), plus `fix`, minus the ridge. n, won: (R, K)."""
    terms, m = model.terms, model.m
    z = terms.z
    R, c = n.shape[0], z.shape[0]
    theta = np.zeros((R, m + c)) if start is None else np.repeat(start[None, :], R, axis=0)
    for _ in range(max_iter):
        s, beta = theta[:, :m], theta[:, m:]
        p = 1.0 / (1.0 + np.exp(-((s[:, terms.pi] - s[:, terms.pj])[:, terms.pair] + beta @ z)))
        np_ = n * p
        h = np_ * (1.0 - p)
        g = won - np_
        hz = h[:, None, :] * z                                                           # (R, c, K)
        grad = model.vector(g, g @ z.T) - prior * theta
        hess = model.matrix(h, hz, np.matmul(hz, z.T))
        if fix is not None:
            grad += fix.g - np.matmul(fix.hess, (theta - fix.at)[..., None])[..., 0]
            hess += fix.hess
        # + prior, and t 11' on the strengths (t = their mean diagonal): that fixes the gauge without changing
        # the step, as the strengths' gradient sums to zero
        hess[:, np.arange(m + c), np.arange(m + c)] += prior
        hess[:, :m, :m] += np.einsum("rii->r", hess[:, :m, :m])[:, None, None] / m
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 3.0 / np.maximum(big, 1e-300))   # damp overshoots on lopsided data
        theta += step
        if big.max() < tol:
            break
    theta[:, :m] -= theta[:, :m].mean(axis=1, keepdims=True)
    return theta


def _battle_terms(m: int, pair: np.ndarray, z: np.ndarray) -> _Terms:
    """One term per battle, in the battles' order (z: (c, N)): the exact likelihood."""
    used = np.bincount(pair, minlength=m * m) > 0
    pairs = np.flatnonzero(used)
    return _Terms(pairs // m, pairs % m, (np.cumsum(used) - 1)[pair], None, z)


def _fit(m: int, pair: np.ndarray, y: np.ndarray, weight: np.ndarray, z: np.ndarray, prior: float) -> np.ndarray:
    """The exact maximum-likelihood fit, started from the fit to an evenly spaced sample of the battles: Newton
    then needs ~2 steps over all of them (a step under 1e-4 logits is the quadratic phase: ~1e-8 is left)."""
    every = max(1, len(pair) // START_SAMPLE)
    start = None
    if every > 1:
        sample = slice(None, None, every)
        start = _newton(_Model(m, _battle_terms(m, pair[sample], z[:, sample])), weight[None, sample],
                        (weight * y)[None, sample], prior, tol=1e-4)[0]
    return _newton(_Model(m, _battle_terms(m, pair, z)), weight[None], (weight * y)[None], prior, start=start,
                   tol=1e-4)[0]


@dataclass
class _Cells:
    """The battles by (pair, outcome): what a bootstrap resample draws. Sorted by pair; `pairs` are the pair
    terms (each pair at its battles' mean covariate difference) and cell k belongs to pair term pair[k]."""
    pairs: _Terms
    pair: np.ndarray       # (K,)
    starts: np.ndarray     # (P,) first cell of each pair
    y: np.ndarray          # (K,) outcome seen from pi: 1, 0 or 0.5
    count: np.ndarray      # (K,) battles (unweighted: a resample draws battles)
    n: np.ndarray          # (K,) battles' weights summed
    of: np.ndarray         # (N,) each battle's cell


def _cells(m: int, pair: np.ndarray, rel: np.ndarray, weight: np.ndarray, z: np.ndarray) -> _Cells:
    """The battles (z: (c, N)) in their (pair, outcome) cells, and each pair at its battles' weighted mean
    difference. O(battles), no sort: the keys are dense (pair * 3 + outcome < 3 m^2)."""
    key = pair * 3 + rel
    used = np.bincount(key, minlength=3 * m * m) > 0
    keys = np.flatnonzero(used)
    of = (np.cumsum(used) - 1)[key]
    K = len(keys)
    count = np.bincount(of, minlength=K).astype(float)
    n = np.bincount(of, weights=weight, minlength=K)
    cell_pair = keys // 3
    new = np.r_[True, cell_pair[1:] != cell_pair[:-1]]
    starts = np.flatnonzero(new)
    local = np.cumsum(new) - 1
    pairs_n = np.add.reduceat(n, starts)
    zbar = np.zeros((len(z), len(starts)))
    for j, row in enumerate(z):
        zbar[j] = np.add.reduceat(np.bincount(of, weights=weight * row, minlength=K), starts) / pairs_n
    terms = _Terms(cell_pair[starts] // m, cell_pair[starts] % m, np.arange(len(starts)),
                   np.arange(len(starts)), zbar)
    return _Cells(terms, local, starts, np.array([1.0, 0.0, 0.5])[keys % 3], count, n, of)


def _moments(cells: _Cells, theta: np.ndarray, m: int, pair: np.ndarray, y: np.ndarray, weight: np.ndarray,
             z: np.ndarray):
    """Per cell, over its battles at the fit `theta`, per battle drawn: the mean score vector (K, 1+c), its
    covariance (K, 1+c, 1+c), and the mean information (K, 1+c, 1+c); x = (1, z) on (s_i - s_j, beta)."""
    p = 1.0 / (1.0 + np.exp(-(theta[pair // m] - theta[pair % m] + theta[m:] @ z)))
    x = np.concatenate([np.ones((1, len(y))), z])
    K, d = len(cells.n), x.shape[0]

    def per_cell(w: np.ndarray) -> np.ndarray:
        return np.bincount(cells.of, weights=w, minlength=K) / cells.count

    score, info = weight * (y - p), weight * p * (1.0 - p)
    u = np.stack([per_cell(score * x[a]) for a in range(d)], axis=1)
    cov, hess = np.empty((K, d, d)), np.empty((K, d, d))
    for a in range(d):
        for b in range(a, d):
            xx = x[a] * x[b]
            cov[:, a, b] = cov[:, b, a] = per_cell(score * score * xx) - u[:, a] * u[:, b]
            hess[:, a, b] = hess[:, b, a] = per_cell(info * xx)
    return u, cov, hess


# ---------------------------------------------------------------- the fit with intervals
def _root(cov: np.ndarray) -> np.ndarray:
    """L with L L' = cov for each (c, c) matrix (symmetric square root; cov is PSD up to rounding)."""
    vals, vecs = np.linalg.eigh(cov)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))[:, None, :]


def _widen(point: np.ndarray, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """point + the 2.5-97.5 percentile range of the rounds' deviations, widened to contain the point."""
    lo, hi = np.percentile(dev, [2.5, 97.5], axis=0)
    return np.minimum(point + lo, point), np.maximum(point + hi, point)


def _rounds(m: int, theta: np.ndarray, pair: np.ndarray, rel: np.ndarray, y: np.ndarray, weight: np.ndarray,
            z: np.ndarray, rounds: int, seed: int, prior: float, chunk: int) -> np.ndarray:
    """(rounds, m + c): the bootstrap rounds (module docstring). Each round is a Bradley-Terry fit on pair totals
    (as the plain fit's rounds), each pair at its battles' mean covariate difference, corrected to the exact
    battles at the fit: the cells' mean score (per battle drawn, times the round's counts), the within-pair
    spread of the battles' scores (a normal per pair and round) and the within-pair information (fixed)."""
    cells = _cells(m, pair, rel, weight, z)
    model, c, K = _Model(m, cells.pairs), len(z), len(cells.n)
    u, cov, info = _moments(cells, theta, m, pair, y, weight, z)
    mean_w = cells.n / cells.count
    zp = cells.pairs.z[:, cells.pair]                                              # (c, K): each cell's pair mean
    p = 1.0 / (1.0 + np.exp(-((theta[cells.pairs.pi] - theta[cells.pairs.pj])[cells.pair] + theta[m:] @ zp)))
    x = np.concatenate([np.ones((1, K)), zp]).T                                     # (K, 1 + c)
    du = u - (mean_w * (cells.y - p))[:, None] * x                                  # exact minus the pair term
    dh = (info - (mean_w * p * (1.0 - p))[:, None, None] * x[:, :, None] * x[:, None, :]) * cells.count[:, None, None]
    per_pair = np.add.reduceat(dh, cells.starts)                                    # at the data's counts
    curvature = model.matrix(per_pair[None, :, 0, 0], per_pair[None, :, 0, 1:].transpose(0, 2, 1),
                             per_pair[None, :, 1:, 1:].sum(axis=1))
    spread = _root(np.add.reduceat(cov * cells.count[:, None, None], cells.starts)).astype(np.float32)
    rng = np.random.default_rng(seed)
    draws = []
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        k = rng.multinomial(int(cells.count.sum()), cells.count / cells.count.sum(), size=size).astype(float)
        # the battles' score spread within each pair: one normal per pair (single precision: ~1e-7, far below a
        # bootstrap's resolution, at half the cost)
        xi = np.matmul(spread, rng.standard_normal((len(cells.starts), c + 1, size), dtype=np.float32))
        kw = k * mean_w
        g = model.vector(np.add.reduceat(k * du[:, 0], cells.starts, axis=1) + xi[:, 0].T,
                         k @ du[:, 1:] + xi[:, 1:].sum(axis=0).T)
        draws.append(_newton(model, np.add.reduceat(kw, cells.starts, axis=1),
                             np.add.reduceat(kw * cells.y, cells.starts, axis=1), prior, start=theta,
                             fix=_Correction(g, curvature, theta), tol=TOL))
    return np.concatenate(draws)


def bootstrap(battles: StyleBattles, rounds: int = 1000, seed: int = 0, min_votes: int = 0,
              prior: float = PRIOR, chunk: int = 250) -> StyleResult:
    """Strengths and covariate coefficients with 95% intervals (module docstring). A covariate no battle has, or
    that never differs in the fitted battles, is not fitted (NaN, and `why_not` says why); a battle without one
    of the others (NaN) is left out; a model with fewer than `min_votes` battles left is provisional."""
    names = battles.covariates
    m_all, c_all = len(battles.models), len(names)
    counted = battles.weight > 0
    finite = np.isfinite(battles.diffs)                 # once: (N, c) booleans, not a copy of the differences
    measured = finite[counted].any(axis=0)              # a covariate no battle has is not fitted
    usable = counted & finite[:, measured].all(axis=1)
    a, b = battles.a[usable], battles.b[usable]
    votes = (np.bincount(a, minlength=m_all) + np.bincount(b, minlength=m_all)).astype(np.int64)
    provisional = votes < max(int(min_votes), 1)
    nan = np.full(m_all, np.nan)
    coef, coef_low, coef_high, scale = (np.full(c_all, np.nan) for _ in range(4))

    def result(score, low, high, used: int, why: dict[str, str], n_rounds: int = 0) -> StyleResult:
        return StyleResult(BTResult(battles.models, score, low, high, n_rounds, used, provisional, votes,
                                    int(min_votes)), names, coef, coef_low, coef_high, scale, why, used)

    keep = ~provisional
    idx = np.flatnonzero(keep)
    both = keep[a] & keep[b]
    a, b = a[both], b[both]
    if len(idx) < 2 or not len(a):
        return result(nan, nan.copy(), nan.copy(), 0, {n: "too few battles" for n in names})
    new = np.full(m_all, -1, dtype=np.int64)
    new[idx] = np.arange(len(idx))
    a, b = new[a], new[b]
    out, weight, diffs = battles.outcome, battles.weight, battles.diffs
    if not (usable.all() and both.all()):                 # (copies of 1M rows cost more than this test)
        sel = np.flatnonzero(usable)[both]
        out, weight, diffs = out[sel], weight[sel], diffs[sel]
    m = len(idx)
    total_w = weight.sum()
    mean = weight @ diffs / total_w
    sd = np.sqrt(np.maximum(weight @ (diffs * diffs) / total_w - mean * mean, 0.0))
    sd[~measured] = 0.0
    fitted = sd > 1e-12
    why = {names[k]: "the difference between the two heard clips never varied" if measured[k]
           else "not measured in these battles" for k in np.flatnonzero(~fitted)}
    scale[fitted] = sd[fitted]
    # (c, N), in row order for the per-covariate passes below; oriented lo - hi
    z = np.multiply(diffs if fitted.all() else diffs[:, fitted], 1.0 / sd[fitted], order="F").T
    z *= np.where(a < b, 1.0, -1.0)
    rel = np.where(out == 2, 2, np.where(a < b, out, 1 - out))       # 0: lo won, 1: hi won, 2: tie
    y = np.array([1.0, 0.0, 0.5])[rel]
    pair = np.minimum(a, b) * m + np.maximum(a, b)

    theta = _fit(m, pair, y, weight, z, prior)
    score = nan.copy()
    score[idx] = to_elo(theta[:m])
    coef[fitted] = theta[m:] / sd[fitted]
    if rounds <= 0:
        return result(score, nan.copy(), nan.copy(), len(a), why)
    th = _rounds(m, theta, pair, rel, y, weight, z, rounds, seed, prior, chunk)
    low, high = nan.copy(), nan.copy()
    low[idx], high[idx] = _widen(score[idx], to_elo(th[:, :m]) - score[idx])
    if fitted.any():
        lo_b, hi_b = _widen(theta[m:], th[:, m:] - theta[m:])
        coef_low[fitted], coef_high[fitted] = lo_b / sd[fitted], hi_b / sd[fitted]
    return result(score, low, high, len(a), why, rounds)
