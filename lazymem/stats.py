"""One summary of a list of latencies (or any numbers): mean, median, P90, P95, count.

Percentiles interpolate linearly between order statistics (numpy's default, the usual
definition of P90/P95 in latency tables).

>>> percentiles([1.0, 2.0, 3.0, 4.0, 5.0])
{'mean': 3.0, 'median': 3.0, 'p90': 4.6, 'p95': 4.8, 'n': 5}
>>> percentiles([0.004, 0.002], scale=1e3, suffix="_ms")
{'mean_ms': 3.0, 'median_ms': 3.0, 'p90_ms': 3.8, 'p95_ms': 3.9, 'n': 2}
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence

KEYS = ("mean", "median", "p90", "p95")


def percentiles(values: Sequence[float], *, scale: float = 1.0, suffix: str = "", digits: int = 10) -> dict:
    """mean, median, P90, P95 (linear interpolation) and n of ``values * scale``.

    Args:
        values: the numbers (e.g. seconds); an empty list gives None for every statistic.
        scale: multiply each value first (1e3 turns seconds into milliseconds).
        suffix: appended to each statistic's key ("_ms" -> "median_ms").
        digits: rounding of the results.
    """
    xs = sorted(float(v) * scale for v in values)
    if not xs:
        return {**{k + suffix: None for k in KEYS}, "n": 0}

    def q(p: float) -> float:
        k = (len(xs) - 1) * p
        lo, hi = math.floor(k), math.ceil(k)
        return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), digits)

    out = {"mean" + suffix: round(statistics.fmean(xs), digits), "median" + suffix: q(0.5),
           "p90" + suffix: q(0.9), "p95" + suffix: q(0.95)}
    return {**out, "n": len(xs)}
