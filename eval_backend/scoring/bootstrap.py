"""Percentile bootstrap confidence intervals, deterministic (fixed seed).

Items are resampled with replacement; a statistic other than the mean (corpus
BLEU, EmpathyEval's group-bonus Final) resamples whole units (sentences, groups)
and recomputes from summed sufficient statistics; an average of metrics measured on
different items resamples each metric's items apart (`mean_of_means_ci`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

N_RESAMPLES = 1000
SEED = 20260122


def _interval(stats: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(lo), float(hi)


def mean_ci(values: Sequence[float], *, seed: int = SEED, n_resamples: int = N_RESAMPLES
            ) -> tuple[float, float] | None:
    """95% CI of the mean; None for fewer than 2 values (no interval to speak of)."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    if x.size < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_resamples, x.size))
    return _interval(x[idx].mean(axis=1))


def units_ci(units: Sequence[Sequence[float]], statistic: Callable[[np.ndarray], float], *,
             seed: int = SEED, n_resamples: int = N_RESAMPLES) -> tuple[float, float] | None:
    """95% CI of statistic(sum of resampled unit rows); each unit is a row of sufficient statistics."""
    rows = np.asarray(units, dtype=float)
    if rows.ndim != 2 or rows.shape[0] < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, rows.shape[0], size=(n_resamples, rows.shape[0]))
    sums = rows[idx].sum(axis=1)          # (n_resamples, n_stats)
    return _interval(np.array([statistic(s) for s in sums]))


def mean_of_means_ci(groups: Sequence[Sequence[float]], *, seed: int = SEED, n_resamples: int = N_RESAMPLES
                     ) -> tuple[float, float] | None:
    """95% CI of the average of several group means (a board averaging metrics measured on different items,
    like LB1 = mean(understanding, reasoning)): each group's items are resampled on their own (a stratified
    bootstrap), every round averages the group means. None when a group has fewer than 2 values."""
    xs = [np.asarray([v for v in g if v is not None], dtype=float) for g in groups]
    if not xs or any(x.size < 2 for x in xs):
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(n_resamples)
    for x in xs:
        total += x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1)
    return _interval(total / len(xs))
