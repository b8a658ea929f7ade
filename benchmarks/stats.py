"""Figures the benchmarks share: a nearest-rank percentile that ignores NaN (a request that never got an answer)."""
from __future__ import annotations

import math


def pct(xs: list[float], q: float) -> float:
    """The nearest-rank `q` quantile (0 < q <= 1) of the non-NaN values; NaN when there are none."""
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return math.nan
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]
