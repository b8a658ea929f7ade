"""Order-free Bradley-Terry ratings with bootstrap intervals, on aggregated pair counts.

Model: P(i beats j) = 1 / (1 + exp(s_j - s_i)). A tie counts as half a win for
each side; 'both bad' votes carry no preference and are left out. Battles are
reduced to counts per unordered pair (i < j): wins of i, wins of j, ties; the fit
then costs O(pairs) per Newton step whatever the number of battles.

Vote floor: a model with fewer than `min_votes` rated votes (wins, losses, ties;
both-bad left out) is *provisional*: it gets no score, no interval and no rank, and
its battles are left out of the fit of the others. With one or two votes a model's
strength is unidentified (the weak ridge lets it run to +-1,000 points); kept in,
it would drag the scale's reference and, resample by resample, everyone's score.
Left out, adding or removing a newcomer's votes changes nothing for the others.

Scale (reported): Elo-like, `1000 + 400 * log10(e) * (s - mean(s))` with the mean
over the non-provisional models only, in the full-data fit and in every bootstrap
round alike: a gap of 400 points means 10:1 odds and the average established model
sits at 1000. Not the median: with an even count the two middle models define the
reference and get intervals narrower than the others' (measured on 40,000 simulated
battles among 8 models: 10 points wide for the middle two, 15-18 for the rest, and
6 of 8 true strengths covered, against 12-13 points for all and 7 of 8 with the mean).

A weak ridge (`prior`, a Gaussian prior of variance 1/prior on s) keeps the fit
finite for a model that won or lost all its battles and when the comparison graph
is disconnected; with a few battles per pair its effect is negligible.

Bootstrap: resampling N battles with replacement is the same as drawing the
pair-outcome counts from Multinomial(N, counts / N), so each round costs O(pairs).
All rounds are fitted together by a batched Newton method. The point estimate is
the fit on the full data; the interval is the 2.5-97.5 percentile range of the
rounds, widened to the point where a skewed resample distribution leaves the point
outside (an unbeaten record: every round is as lopsided or less), so the reported
interval always contains the reported score.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from eval_backend.numbers import Z95, Proportion, wilson  # noqa: F401  (part of this module's API)

ELO_SCALE = 400.0 / math.log(10.0)
ELO_BASE = 1000.0


@dataclass
class PairCounts:
    models: list[str]
    i: np.ndarray          # (P,) index of the first model of each pair, i < j
    j: np.ndarray
    wins_i: np.ndarray     # (P,) battles won by i
    wins_j: np.ndarray
    ties: np.ndarray
    # (P, 3) mean vote weight of the battles won by i, won by j, tied (VoteRow.weight); None: all 1. A
    # battle counts its weight in the fit; a bootstrap resample draws battles and gives each its cell's mean.
    weights: np.ndarray | None = None

    @property
    def battles(self) -> int:
        return int(self.wins_i.sum() + self.wins_j.sum() + self.ties.sum())

    def weighted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(wins_i, wins_j, ties) as the fit counts them: battles times their weights."""
        if self.weights is None:
            return self.wins_i, self.wins_j, self.ties
        w = self.weights
        return self.wins_i * w[:, 0], self.wins_j * w[:, 1], self.ties * w[:, 2]


def counts_from_arrays(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, models: Sequence[str],
                       weight: np.ndarray | None = None) -> PairCounts:
    """a, b: model indices per battle; outcome: 0 = a won, 1 = b won, 2 = tie (both-bad already removed);
    weight: per battle in [0, 1] (None: all 1; a battle of weight 0 is left out)."""
    a, b, outcome = (np.asarray(x, dtype=np.int64) for x in (a, b, outcome))
    if np.any(a == b):
        raise ValueError("a battle needs two different models")
    if weight is not None:
        weight = np.asarray(weight, dtype=float)
        if np.any(~(weight >= 0) | (weight > 1)):
            raise ValueError("vote weights must be in [0, 1]")
        if np.all(weight == 1.0):
            weight = None
        else:
            keep = weight > 0
            a, b, outcome, weight = a[keep], b[keep], outcome[keep], weight[keep]
    m = len(models)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * m + hi
    # who won, seen from the lower index: 0 = lo won, 1 = hi won, 2 = tie
    swapped = a > b
    rel = np.where(outcome == 2, 2, np.where(swapped, 1 - outcome, outcome))
    cell = np.bincount(key * 3 + rel, minlength=m * m * 3).reshape(m * m, 3)
    used = np.flatnonzero(cell.sum(axis=1))
    weights = None
    if weight is not None:
        total = np.bincount(key * 3 + rel, weights=weight, minlength=m * m * 3).reshape(m * m, 3)[used]
        weights = np.where(cell[used] > 0, total / np.maximum(cell[used], 1), 1.0)
    return PairCounts(list(models), used // m, used % m, cell[used, 0], cell[used, 1], cell[used, 2], weights)


def counts_from_votes(votes: Iterable[tuple]) -> PairCounts:
    """votes: (model_a, model_b, winner[, weight]) with winner a model name, 'tie' or 'both_bad' (skipped)."""
    names: dict[str, int] = {}
    a, b, out, weights = [], [], [], []
    for vote in votes:
        ma, mb, winner = vote[:3]
        if winner == "both_bad":
            continue
        if winner not in (ma, mb, "tie"):
            raise ValueError(f"winner {winner!r} is neither {ma!r}, {mb!r} nor 'tie'")
        a.append(names.setdefault(ma, len(names)))
        b.append(names.setdefault(mb, len(names)))
        out.append(0 if winner == ma else 1 if winner == mb else 2)
        weights.append(vote[3] if len(vote) > 3 else 1.0)
    return counts_from_arrays(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64),
                              np.array(out, dtype=np.int64), list(names), np.array(weights, dtype=float))


def _fit_batch(m: int, i: np.ndarray, j: np.ndarray, win_i: np.ndarray, n: np.ndarray,
               prior: float, start: np.ndarray | None = None, tol: float = 1e-9, max_iter: int = 100) -> np.ndarray:
    """Log-strengths (B, m) maximising the penalised likelihood for each row of win_i/n (B, P).

    `start` (m,) warm-starts every row (bootstrap rounds start from the point estimate)."""
    bsz = win_i.shape[0]
    s = np.zeros((bsz, m)) if start is None else np.repeat(start[None, :], bsz, axis=0)
    inc = np.zeros((len(i), m))
    inc[np.arange(len(i)), i] = 1.0
    inc[np.arange(len(i)), j] = -1.0
    absinc = np.abs(inc)
    upper, lower, diag = i * m + j, j * m + i, np.arange(m) * (m + 1)   # flat indices into an (m, m) matrix
    hess = np.empty((bsz, m * m))
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(s[:, j] - s[:, i]))
        grad = (win_i - n * p) @ inc - prior * s
        h = n * p * (1.0 - p)
        d = h @ absinc + prior
        # Hessian of the negative log-likelihood (a weighted graph Laplacian + prior), plus c 11^T with
        # c = mean diagonal: that fixes the gauge without changing the step, as the gradient sums to zero.
        c = d.mean(axis=1, keepdims=True)
        hess[:] = c
        hess[:, upper] = c - h
        hess[:, lower] = c - h
        hess[:, diag] = c + d
        step = np.linalg.solve(hess.reshape(bsz, m, m), grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 3.0 / np.maximum(big, 1e-300))   # damp overshoots on lopsided data
        s += step
        if big.max() < tol:
            break
    return s - s.mean(axis=1, keepdims=True)


def fit(counts: PairCounts, prior: float = 1e-4) -> np.ndarray:
    """Centred log-strengths, one per model (natural-log odds scale)."""
    if not len(counts.i):
        return np.zeros(len(counts.models))
    wins_i, wins_j, ties = counts.weighted()
    win = (wins_i + 0.5 * ties).astype(float)[None]
    n = (wins_i + wins_j + ties).astype(float)[None]
    return _fit_batch(len(counts.models), counts.i, counts.j, win, n, prior)[0]


def to_elo(s: np.ndarray) -> np.ndarray:
    """Log-strengths (..., m) -> the reported scale, the mean of each row at ELO_BASE. Pass only the
    non-provisional models: the mean over them is the scale's reference."""
    return ELO_BASE + ELO_SCALE * (s - s.mean(axis=-1, keepdims=True))


def model_votes(counts: PairCounts) -> np.ndarray:
    """Rated votes per model (wins, losses and ties; both-bad votes are not in the counts)."""
    n = (counts.wins_i + counts.wins_j + counts.ties).astype(np.int64)
    m = len(counts.models)
    return np.bincount(counts.i, weights=n, minlength=m).astype(np.int64) + \
        np.bincount(counts.j, weights=n, minlength=m).astype(np.int64)


def restrict(counts: PairCounts, keep: np.ndarray) -> tuple[PairCounts, np.ndarray]:
    """The battles among the models flagged in `keep` (bool, m), re-indexed in the same model order;
    also returns the kept models' indices into counts.models."""
    idx = np.flatnonzero(keep)
    new = np.full(len(counts.models), -1, dtype=np.int64)
    new[idx] = np.arange(len(idx))
    both = keep[counts.i] & keep[counts.j]
    return PairCounts([counts.models[k] for k in idx], new[counts.i[both]], new[counts.j[both]],
                      counts.wins_i[both], counts.wins_j[both], counts.ties[both],
                      None if counts.weights is None else counts.weights[both]), idx


@dataclass
class BTResult:
    models: list[str]
    score: np.ndarray      # Elo-like; NaN where not fitted (provisional, or fewer than two models to compare)
    low: np.ndarray        # 2.5th bootstrap percentile (widened to contain the score); NaN where not fitted
    high: np.ndarray       # 97.5th
    rounds: int
    battles: int           # all rated battles, provisional models' included
    provisional: np.ndarray | None = None   # (m,) bool: fewer rated votes than min_votes
    votes: np.ndarray | None = None         # (m,) rated votes per model
    min_votes: int = 0

    def __post_init__(self):
        m = len(self.models)
        if self.provisional is None:
            self.provisional = np.zeros(m, dtype=bool)
        if self.votes is None:
            self.votes = np.zeros(m, dtype=np.int64)

    def rank(self) -> np.ndarray:
        """1 + number of ranked models whose lower bound is above my upper bound; 0 for a model that
        is not ranked (provisional, or without an interval)."""
        assert self.provisional is not None            # set by __post_init__
        ranked = ~self.provisional & np.isfinite(self.low) & np.isfinite(self.high)
        above = (self.low[None, :] > self.high[:, None]) & ranked[None, :]
        return np.where(ranked, 1 + above.sum(axis=1), 0)

    def as_dict(self) -> dict[str, dict]:
        """model -> {bt, bt_low, bt_high (NaN where not fitted), bt_rank (None where not ranked),
        provisional, bt_votes}."""
        ranks = self.rank()
        assert self.provisional is not None and self.votes is not None      # set by __post_init__
        return {m: {"bt": float(self.score[k]), "bt_low": float(self.low[k]), "bt_high": float(self.high[k]),
                    "bt_rank": int(ranks[k]) if ranks[k] else None, "provisional": bool(self.provisional[k]),
                    "bt_votes": int(self.votes[k])}
                for k, m in enumerate(self.models)}


def bootstrap(counts: PairCounts, rounds: int = 1000, seed: int = 0, prior: float = 1e-4,
              chunk: int = 250, min_votes: int = 0) -> BTResult:
    """Point estimate plus 95% percentile intervals from `rounds` battle resamples, for the models with at
    least `min_votes` rated votes (and at least one); the others are provisional and left out."""
    m = len(counts.models)
    votes = model_votes(counts)
    provisional = votes < max(int(min_votes), 1)
    score, low, high = (np.full(m, np.nan) for _ in range(3))
    sub, idx = restrict(counts, ~provisional)
    if len(idx) < 2 or not len(sub.i):
        return BTResult(counts.models, score, low, high, 0, counts.battles, provisional, votes, min_votes)
    point = fit(sub, prior)
    score[idx] = to_elo(point)
    if rounds <= 0:
        return BTResult(counts.models, score, low, high, 0, counts.battles, provisional, votes, min_votes)
    rng = np.random.default_rng(seed)
    cells = np.stack([sub.wins_i, sub.wins_j, sub.ties], axis=1).astype(float)  # (P, 3)
    total = cells.sum()
    pvals = (cells / total).ravel()
    out = []
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        draw = rng.multinomial(int(total), pvals, size=size).reshape(size, -1, 3).astype(float)
        if sub.weights is not None:
            draw *= sub.weights[None]
        win = draw[:, :, 0] + 0.5 * draw[:, :, 2]
        n = draw.sum(axis=2)
        # 1e-7 logit = 4e-6 Elo points: far below the interval widths
        out.append(to_elo(_fit_batch(len(idx), sub.i, sub.j, win, n, prior, start=point, tol=1e-7)))
    elo = np.concatenate(out)
    lo, hi = np.percentile(elo, [2.5, 97.5], axis=0)
    low[idx] = np.minimum(lo, score[idx])
    high[idx] = np.maximum(hi, score[idx])
    return BTResult(counts.models, score, low, high, rounds, counts.battles, provisional, votes, min_votes)


def pairwise(counts: PairCounts) -> tuple[np.ndarray, np.ndarray]:
    """(win_rate, battles), both (M, M): win_rate[r, c] = share of r-vs-c battles r won (ties half), NaN if none."""
    m = len(counts.models)
    n = np.zeros((m, m))
    w = np.zeros((m, m))
    tot = (counts.wins_i + counts.wins_j + counts.ties).astype(float)
    n[counts.i, counts.j] = tot
    n[counts.j, counts.i] = tot
    w[counts.i, counts.j] = counts.wins_i + 0.5 * counts.ties
    w[counts.j, counts.i] = counts.wins_j + 0.5 * counts.ties
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, w / n, np.nan)
    return rate, n


def position_bias(votes: Iterable[tuple[str | None, str]]) -> Proportion:
    """Share of decisive votes won by the first-heard reply. votes: (first_heard slot, chosen slot)."""
    k = n = 0
    for first, slot in votes:
        if first in ("A", "B") and slot in ("A", "B"):
            n += 1
            k += first == slot
    return wilson(k, n)
