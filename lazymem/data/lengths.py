"""Message-length distributions of datasets, by role kind: do the training data span the test data?

``message_lengths(dataset)`` gives, for each role kind (``user``, ``assistant``, ``named speaker``
for LoCoMo-style names), n / mean / median / p10 / p90 / p99 / max of the messages' lengths in
words and in characters; ``lengths_table`` lays several datasets side by side as Markdown
(``lazymem data lengths`` prints it for any dataset SPECs).

>>> from lazymem.records import Dataset, History, Message
>>> msgs = tuple(Message(i, f"m{i}", "s", i, r, t, "", None) for i, (r, t) in
...              enumerate([("user", "hi there"), ("assistant", "a b c d"), ("Maya", "hey")]))
>>> stats = message_lengths(Dataset("d", {"h": History("h", msgs)}, (), "d", ""))
>>> stats["assistant"]["words"]["mean"], stats["named speaker"]["chars"]["max"]
(4.0, 3)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

ROLE_KINDS = ("user", "assistant", "named speaker")
STATS = ("n", "mean", "median", "p10", "p90", "p99", "max")


def role_kind(role: str) -> str:
    """``user`` / ``assistant`` as given; any other role is a speaker's name.

    >>> role_kind("user"), role_kind("Caroline")
    ('user', 'named speaker')
    """
    return role if role in ("user", "assistant") else "named speaker"


def distribution(values: Sequence[int]) -> dict:
    """n, mean, median, p10, p90, p99 (linear interpolation) and max; None statistics when empty.

    >>> distribution([1, 2, 3, 4])
    {'n': 4, 'mean': 2.5, 'median': 2.5, 'p10': 1.3, 'p90': 3.7, 'p99': 3.97, 'max': 4}
    """
    xs = sorted(values)
    if not xs:
        return {"n": 0, **{k: None for k in STATS[1:]}}

    def q(p: float) -> float:
        k = (len(xs) - 1) * p
        lo, hi = math.floor(k), math.ceil(k)
        return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), 2)

    return {
        "n": len(xs),
        "mean": round(statistics.fmean(xs), 2),
        "median": q(0.5),
        "p10": q(0.1),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": xs[-1],
    }


def message_lengths(dataset) -> dict[str, dict[str, dict]]:
    """Per role kind present: {"words": distribution, "chars": distribution} over every message."""
    words: dict[str, list[int]] = {}
    chars: dict[str, list[int]] = {}
    for history in dataset.histories.values():
        for m in history:
            kind = role_kind(m.role)
            words.setdefault(kind, []).append(len(m.text.split()))
            chars.setdefault(kind, []).append(len(m.text))
    return {k: {"words": distribution(words[k]), "chars": distribution(chars[k])} for k in ROLE_KINDS if k in words}


def lengths_table(results: Mapping[str, Mapping[str, Mapping[str, dict]]], unit: str = "words") -> str:
    """Markdown: one row per (dataset, role kind), the statistics of ``unit`` ("words" or "chars").

    >>> print(lengths_table({"d": {"user": {"words": distribution([2, 4])}}}))
    | dataset | role | n | mean | median | p10 | p90 | p99 | max |
    |---|---|---:|---:|---:|---:|---:|---:|---:|
    | d | user | 2 | 3.0 | 3.0 | 2.2 | 3.8 | 3.98 | 4 |
    """
    lines = ["| dataset | role | " + " | ".join(STATS) + " |", "|---|---|" + "---:|" * len(STATS)]
    for name, by_kind in results.items():
        for kind, stats in by_kind.items():
            lines.append(f"| {name} | {kind} | " + " | ".join(str(stats[unit][k]) for k in STATS) + " |")
    return "\n".join(lines)
