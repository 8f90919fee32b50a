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
from collections.abc import Mapping, Sequence

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

    out = {
        "mean" + suffix: round(statistics.fmean(xs), digits),
        "median" + suffix: q(0.5),
        "p90" + suffix: q(0.9),
        "p95" + suffix: q(0.95),
    }
    return {**out, "n": len(xs)}


def paired_bootstrap(
    a: Mapping[str, float] | Sequence[float],
    b: Mapping[str, float] | Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    method: str = "percentile",
) -> dict:
    """Paired bootstrap interval for mean(a) - mean(b) on the same questions (scipy.stats.bootstrap).

    Args:
        a, b: per-question scores of two systems: sequences in the same question order, or
            mappings question id -> score (paired on their shared ids; the others are counted
            in ``unpaired`` and left out).
        confidence: the interval's level (0.95 = the paper-style 95% interval).
        n_resamples, seed: the bootstrap's resamples and its random seed (reproducible).
        method: scipy's interval method: "percentile" (default; defined when every paired
            difference is equal) or "BCa".

    Returns:
        ``{"delta", "low", "high", "n", "unpaired", "confidence", "method"}``; ``delta`` is the
        observed mean difference. Identical systems give delta 0 and the interval [0, 0].

    >>> paired_bootstrap([1, 0, 1, 1], [1, 0, 1, 1])["low"], paired_bootstrap([1, 0, 1, 1], [1, 0, 1, 1])["high"]
    (0.0, 0.0)
    >>> paired_bootstrap({"q1": 1.0, "q2": 0.0}, {"q2": 0.0, "q3": 1.0})["unpaired"]
    2
    """
    import numpy as np
    from scipy.stats import bootstrap

    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            raise TypeError("paired_bootstrap: give two mappings (question id -> score) or two sequences")
        ids = sorted(set(a) & set(b))
        unpaired = len(set(a) ^ set(b))
        xs, ys = [float(a[i]) for i in ids], [float(b[i]) for i in ids]
    else:
        if len(a) != len(b):
            raise ValueError(f"paired_bootstrap: {len(a)} scores vs {len(b)}: a pair needs the same questions")
        xs, ys, unpaired = [float(v) for v in a], [float(v) for v in b], 0
    out = {
        "delta": None,
        "low": None,
        "high": None,
        "n": len(xs),
        "unpaired": unpaired,
        "confidence": confidence,
        "method": method,
    }
    if len(xs) < 2:
        return out
    x, y = np.asarray(xs), np.asarray(ys)
    out["delta"] = float(x.mean() - y.mean())
    d = x - y
    if np.all(d == d[0]):  # every resample has the same mean difference: the interval is that point
        out["low"] = out["high"] = float(d[0])
        return out
    res = bootstrap(
        (x, y),
        lambda u, v, axis: u.mean(axis=axis) - v.mean(axis=axis),
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=np.random.default_rng(seed),
    )
    out["low"], out["high"] = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return out
