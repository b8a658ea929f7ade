"""Bradley–Terry with style covariates ("style control" for spoken replies), with bootstrap intervals.

Model: P(A beats B) = 1 / (1 + exp(-(s_A - s_B + beta . z))), z the battle's A - B covariate differences
(arena/covariates.py says which and in what units: log2 duration ratio, LUFS difference, ...), each divided
by its standard deviation over the fitted battles (LMArena's style control normalises the same way). The
strengths s are then the models' strengths *all else equal*: a model that wins because its replies are longer
gets its length's share in beta, not in s. Ties count half a win each, both-bad votes are left out, votes
carry a weight (0 = excluded), and the vote floor, the scale and the reference are the plain fit's
(arena/bradley_terry.py): provisional models are left out, the mean of the others is 1000.

The score is the exact maximum-likelihood fit over the individual battles (a Newton method on battle-level
cells). The interval comes from a bootstrap that costs O(pairs) per round, as the plain fit's does, not
O(battles): a resample of N battles is drawn as
- the number of battles in each (pair, outcome) cell: Multinomial(N, cell share), exactly as a battle resample;
- the mean covariate difference of the cell's resampled battles: normal around the cell's mean with the
  cell's covariance / count (the central limit theorem: exact for a cell of one battle or of identical
  battles, approximate for few different ones);
and each round is fitted on the second-order expansion of the cells' exact log-likelihood around their
means (the expansion keeps the within-cell spread, which is what tells apart "longer replies win" from "this
pair's outcomes differ"). The interval is the full fit plus the 2.5-97.5 percentile range of the rounds'
deviations from the same expansion fitted to the full data, widened to contain the score as in the plain
fit. tests/test_style_bt.py checks the intervals against an exact battle-level bootstrap.

Cost (benchmarks/bench_style_bt.py, docs/benchmarks.md): O(battles) once for the cells and the exact fit,
then O(rounds x pairs x covariates^2) for the bootstrap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bradley_terry import BTResult, to_elo

PRIOR = 1e-4        # the plain fit's ridge, on strengths and on the normalised coefficients
# A bootstrap round stops when no step exceeds TOL logits: the steps shrink ~30-fold each, so the round is then
# within ~1e-4 logits (0.02 points) of its maximum, far inside the Monte Carlo error of a percentile.
TOL = 2e-3


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
class _Cells:
    """Cells of battles: cell k belongs to pair pair[k] (models pi[p] < pj[p]). With `starts`, the cells are
    sorted by pair and pair p holds cells starts[p]:starts[p+1]; without, any order (summed by bincount)."""
    pi: np.ndarray
    pj: np.ndarray
    starts: np.ndarray | None
    pair: np.ndarray       # (K,) pair index of each cell
    y: np.ndarray          # (K,) outcome seen from pi: 1, 0 or 0.5
    n: np.ndarray          # (K,) battles in the cell (weights summed)
    count: np.ndarray      # (K,) battles in the cell (unweighted: what a resample draws)
    z: np.ndarray          # (c, K) weighted mean normalised difference (pi minus pj)
    cov: np.ndarray | None  # (K, c, c) weighted within-cell covariance of one battle's difference

    def to_pairs(self, x: np.ndarray) -> np.ndarray:
        """Sum (..., K) over each pair's cells -> (..., P)."""
        if self.starts is not None:
            return np.add.reduceat(x, self.starts, axis=-1)
        flat = x.reshape(-1, x.shape[-1])
        out = np.stack([np.bincount(self.pair, weights=row, minlength=len(self.pi)) for row in flat])
        return out.reshape(x.shape[:-1] + (len(self.pi),))


def _newton(m: int, cells: _Cells, n: np.ndarray, z: np.ndarray, cov: np.ndarray | None, prior: float,
            start: np.ndarray | None = None, tol: float = 1e-9, max_iter: int = 100,
            dtype: type = np.float64) -> np.ndarray:
    """(R, m + c): strengths (centred) and coefficients maximising, for each round r, the cells' log-likelihood
    sum_k n[r,k] * (l(eta) - w(eta) * beta' cov_k beta / 2), eta = s_i - s_j + beta . z[r,:,k], l the tie-aware
    log-likelihood, w = p(1 - p): exact when cov is None (every cell's battles share one difference).

    n (R, K); z (R or 1, c, K), cells along the last axis; cov (K, c, c) or None. The Newton steps use the
    Fisher information of the expansion (positive definite), so they converge to its maximum. `dtype`: of the
    per-cell arithmetic (the bootstrap rounds use single precision, ~1e-6 relative: half the time); the
    parameters, sums per model and the Newton system stay in double precision."""
    R, c, K = n.shape[0], z.shape[1], n.shape[1]
    d = m + c
    theta = np.zeros((R, d)) if start is None else np.repeat(start[None, :], R, axis=0)
    pi, pj, pair, y = cells.pi, cells.pj, cells.pair, cells.y.astype(dtype)
    n, z = n.astype(dtype, copy=False), z.astype(dtype, copy=False)
    inc = np.zeros((len(pi), m))
    inc[np.arange(len(pi)), pi] = 1.0
    inc[np.arange(len(pi)), pj] = -1.0
    absinc = np.abs(inc)
    upper, lower, diag = pi * m + pj, pj * m + pi, np.arange(m) * (m + 1)
    eye_c = np.eye(c)
    hess = np.empty((R, d, d))
    hs = np.empty((R, m * m))
    flat_cov = cov.reshape(K, c * c).astype(dtype) if cov is not None else None
    cell_inc = inc[pair].astype(dtype) if K * m <= 4_000_000 else None     # (K, m): one product, no reduceat
    for _ in range(max_iter):
        s, beta = theta[:, :m], theta[:, m:]
        sd, bd = s.astype(dtype), beta.astype(dtype)
        eta = (sd[:, pi] - sd[:, pj])[:, pair] + np.matmul(bd[:, None, :], z)[:, 0, :]
        p = 1.0 / (1.0 + np.exp(-eta))
        h = n * p * (1.0 - p)
        g = n * (y - p)
        grad = np.empty((R, d))
        if flat_cov is not None:
            q = (bd[:, :, None] * bd[:, None, :]).reshape(R, c * c) @ flat_cov.T         # beta' cov_k beta
            g -= 0.5 * h * (1.0 - 2.0 * p) * q
            spread = (h @ flat_cov).reshape(R, c, c)                                     # sum_k h_k cov_k
        hz = z * h[:, None, :]                                                           # (R, c, K)
        grad[:, :m] = cells.to_pairs(g).astype(np.float64) @ inc - prior * s
        grad[:, m:] = np.matmul(z, g[:, :, None])[..., 0] - prior * beta
        hess[:, m:, m:] = np.matmul(hz, z.transpose(0, 2, 1)) + prior * eye_c
        if flat_cov is not None:
            grad[:, m:] -= np.matmul(spread, beta[:, :, None])[..., 0]
            hess[:, m:, m:] += spread
        # the strengths' block: the plain fit's weighted Laplacian + prior, plus c 11' to fix the gauge
        h_pair = cells.to_pairs(h).astype(np.float64)
        dd = h_pair @ absinc + prior
        cg = dd.mean(axis=1, keepdims=True)
        hs[:] = cg
        hs[:, upper] = cg - h_pair
        hs[:, lower] = cg - h_pair
        hs[:, diag] = cg + dd
        hess[:, :m, :m] = hs.reshape(R, m, m)
        if cell_inc is not None:
            cross = (hz.reshape(R * c, K) @ cell_inc).reshape(R, c, m)
        else:
            cross = (cells.to_pairs(hz.reshape(R * c, K)).astype(np.float64) @ inc).reshape(R, c, m)
        hess[:, m:, :m] = cross
        hess[:, :m, m:] = cross.transpose(0, 2, 1)
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 3.0 / np.maximum(big, 1e-300))   # damp overshoots on lopsided data
        theta += step
        if big.max() < tol:
            break
    theta[:, :m] -= theta[:, :m].mean(axis=1, keepdims=True)
    return theta


def _battle_cells(m: int, pair: np.ndarray, y: np.ndarray, weight: np.ndarray, z: np.ndarray) -> _Cells:
    """One cell per battle, in the battles' order (z: (c, N)): the exact likelihood (pairs summed by bincount)."""
    used = np.bincount(pair, minlength=m * m) > 0
    pairs = np.flatnonzero(used)
    local = (np.cumsum(used) - 1)[pair]
    return _Cells(pairs // m, pairs % m, None, local, y, weight, np.ones(len(y)), z, None)


def _pair_cells(m: int, pair: np.ndarray, rel: np.ndarray, weight: np.ndarray, z: np.ndarray) -> _Cells:
    """Battles (z: (c, N)) -> (pair, outcome) cells, sorted by pair, with battle count, weight, weighted mean
    difference and weighted within-cell covariance. O(battles), no sort: the keys are dense (< 3 m^2)."""
    key = pair * 3 + rel
    size = 3 * m * m
    used = np.bincount(key, minlength=size) > 0
    keys = np.flatnonzero(used)
    cell_of = (np.cumsum(used) - 1)[key]
    K, c = len(keys), z.shape[0]
    count = np.bincount(cell_of, minlength=K).astype(float)
    n = np.bincount(cell_of, weights=weight, minlength=K)
    safe = np.where(n > 0, n, 1.0)
    zbar = np.zeros((c, K))
    for j in range(c):
        zbar[j] = np.bincount(cell_of, weights=weight * z[j], minlength=K) / safe
    cov = np.zeros((K, c, c))
    for a in range(c):              # E[z_a z_b] - mean_a mean_b: z is O(1), so no cancellation to fear
        for b in range(a, c):
            cov[:, a, b] = cov[:, b, a] = (np.bincount(cell_of, weights=weight * z[a] * z[b], minlength=K)
                                           / safe - zbar[a] * zbar[b])
    cell_pair = keys // 3
    new = np.r_[True, cell_pair[1:] != cell_pair[:-1]]
    starts = np.flatnonzero(new)
    pairs = cell_pair[starts]
    return _Cells(pairs // m, pairs % m, starts, np.cumsum(new) - 1, np.array([1.0, 0.0, 0.5])[keys % 3], n,
                  count, zbar, cov)


# ---------------------------------------------------------------- the fit with intervals
def _root(cov: np.ndarray) -> np.ndarray:
    """L with L L' = cov for each (c, c) matrix (symmetric square root; cov is PSD up to rounding)."""
    vals, vecs = np.linalg.eigh(cov)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))[:, None, :]


def _widen(point: np.ndarray, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """point + the 2.5-97.5 percentile range of the rounds' deviations, widened to contain the point."""
    lo, hi = np.percentile(dev, [2.5, 97.5], axis=0)
    return np.minimum(point + lo, point), np.maximum(point + hi, point)


def bootstrap(battles: StyleBattles, rounds: int = 1000, seed: int = 0, min_votes: int = 0,
              prior: float = PRIOR, chunk: int = 250) -> StyleResult:
    """Strengths and covariate coefficients with 95% intervals (module docstring). A battle without one of the
    covariates (NaN) is left out; a model with fewer than `min_votes` battles left is provisional; a covariate
    that never differs in the fitted battles is not fitted (NaN, and `why_not` says so)."""
    names = battles.covariates
    m_all, c_all = len(battles.models), len(names)
    usable = (battles.weight > 0) & np.all(np.isfinite(battles.diffs), axis=1)
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
    fitted = sd > 1e-12
    why = {names[k]: "the heard clips never differed in this" for k in np.flatnonzero(~fitted)}
    scale[fitted] = sd[fitted]
    z = diffs.T[fitted] / sd[fitted, None]                          # (c, N), oriented lo - hi below
    z *= np.where(a < b, 1.0, -1.0)
    rel = np.where(out == 2, 2, np.where(a < b, out, 1 - out))       # 0: lo won, 1: hi won, 2: tie
    y = np.array([1.0, 0.0, 0.5])[rel]
    pair = np.minimum(a, b) * m + np.maximum(a, b)

    cells = _pair_cells(m, pair, rel, weight, z)
    assert cells.cov is not None
    tilde = _newton(m, cells, cells.n[None], cells.z[None], cells.cov, prior)[0]
    exact = _battle_cells(m, pair, y, weight, z)
    # from the expansion's maximum the exact Newton converges quadratically: a step under 1e-6 leaves ~1e-12
    theta = _newton(m, exact, exact.n[None], exact.z[None], None, prior, start=tilde, tol=1e-6)[0]
    score = nan.copy()
    score[idx] = to_elo(theta[:m])
    c = int(fitted.sum())
    coef[fitted] = theta[m:] / sd[fitted]
    if rounds <= 0:
        return result(score, nan.copy(), nan.copy(), len(a), why)
    root32 = (_root(cells.cov) if c else np.zeros((len(cells.n), 0, 0))).astype(np.float32)
    mean_w = cells.n / cells.count
    pvals = cells.count / cells.count.sum()
    rng = np.random.default_rng(seed)
    draws_s, draws_b = [], []
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        k = rng.multinomial(int(cells.count.sum()), pvals, size=size).astype(float)
        # single precision for the noise: ~1e-7 relative, far below what a bootstrap resolves, at half the cost
        eps = rng.standard_normal((len(cells.n), c, size), dtype=np.float32)
        noise = np.matmul(root32, eps).transpose(2, 1, 0)                         # (size, c, K)
        zr = np.ascontiguousarray(cells.z[None].astype(np.float32) + noise
                                  / np.sqrt(np.maximum(k, 1.0)).astype(np.float32)[:, None, :])
        th = _newton(m, cells, k * mean_w, zr, cells.cov, prior, start=tilde, tol=TOL, dtype=np.float32)
        draws_s.append(to_elo(th[:, :m]) - to_elo(tilde[:m]))
        draws_b.append(th[:, m:] - tilde[m:])
    low, high = nan.copy(), nan.copy()
    low[idx], high[idx] = _widen(score[idx], np.concatenate(draws_s))
    if c:
        lo_b, hi_b = _widen(theta[m:], np.concatenate(draws_b))
        coef_low[fitted], coef_high[fitted] = lo_b / sd[fitted], hi_b / sd[fitted]
    return result(score, low, high, len(a), why, rounds)
