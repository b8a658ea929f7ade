"""Small number helpers every layer shares (pure, no I/O): what counts as a number, JSON-safe floats, and the
Wilson interval of a proportion.

Two questions that look alike and are kept apart on purpose:
- `is_number(x)`: may this value be shown / compared as a score? (a real, finite int or float; bool is not one)
- `json_number(x)`: the value with NaN / ±inf replaced by None, anything else unchanged (JSON has no NaN).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054        # the two-sided 95% normal quantile


def is_number(x: Any) -> bool:
    """A real, finite number (bool, None, NaN, ±inf and strings are not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def json_number(x: Any) -> Any:
    """NaN and ±inf become None (a metric still reports its n); every other value is returned as it is."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


@dataclass
class Proportion:
    share: float           # NaN when n == 0 (nothing measured)
    low: float
    high: float
    k: int
    n: int


def wilson(k: int, n: int, z: float = Z95) -> Proportion:
    """k successes out of n with its Wilson score interval: well-behaved near 0, 1 and for small n."""
    if n <= 0:
        return Proportion(math.nan, math.nan, math.nan, k, n)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Proportion(p, max(0.0, centre - half), min(1.0, centre + half), k, n)
