"""Stratified train/validation/test split, as the paper's Appendix "Dataset and Split Construction".

Per question type: sort by question id, shuffle with a fixed seed (42), then cut into
train / validation / test. The per-type counts come from the largest-remainder method so
that the split totals are exact (360/40/100 of LongMemEval's 500) and each split keeps the
original type distribution:

1. train: quota_t = n_t * 0.72; floors, then the leftover seats go to the largest
   remainders until the train total (round(N * 0.72)) is met;
2. validation: the same over what train left, quota_t = rest_t * 0.08 / 0.28;
3. test: everything left.

Remainder ties are broken by type name in *descending* order. The paper does not state
its tie rule; this one reproduces its Table "Question-type statistics for the LongMemEval
splits" exactly (ascending order would move one validation question from
temporal-reasoning to multi-session). Exact fractions are used, so no float noise decides.

>>> counts = {"a": 70, "b": 30}
>>> allocate(counts)
{'a': (50, 6, 14), 'b': (22, 2, 6)}
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from lazymem.errors import ConfigError
from lazymem.records import Question

SPLITS = ("train", "validation", "test")
PAPER_FRACTIONS = (Fraction(72, 100), Fraction(8, 100), Fraction(20, 100))


def _largest_remainder(quotas: Mapping[str, Fraction], total: int) -> dict[str, int]:
    seats = {t: math.floor(q) for t, q in quotas.items()}
    left = total - sum(seats.values())
    if left < 0 or left > len(quotas):
        raise ValueError(f"cannot allocate {total} seats to quotas summing to {float(sum(quotas.values())):.3f}")
    # Larger remainder first; ties by type name descending (see module docstring).
    order = sorted(sorted(quotas, reverse=True), key=lambda t: seats[t] - quotas[t])
    for t in order[:left]:
        seats[t] += 1
    return seats


def allocate(
    counts: Mapping[str, int], fractions: Sequence[Fraction | float] = PAPER_FRACTIONS
) -> dict[str, tuple[int, int, int]]:
    """Per-type (train, validation, test) sizes by sequential largest remainder.

    >>> allocate({"x": 10}, (0.5, 0.25, 0.25))
    {'x': (5, 2, 3)}
    """
    fr = [Fraction(f).limit_denominator(10_000) if not isinstance(f, Fraction) else f for f in fractions]
    if len(fr) != 3 or any(f < 0 for f in fr) or sum(fr) != 1:
        raise ConfigError(f"fractions must be three non-negative numbers summing to 1, got {list(fractions)}")
    n = sum(counts.values())
    n_train = round(n * fr[0])
    n_val = round(n * fr[1])
    train = _largest_remainder({t: c * fr[0] for t, c in counts.items()}, n_train)
    rest = {t: counts[t] - train[t] for t in counts}
    rest_share = fr[1] + fr[2]
    val_fr = fr[1] / rest_share if rest_share else Fraction(0)
    val = _largest_remainder({t: r * val_fr for t, r in rest.items()}, min(n_val, sum(rest.values())))
    return {t: (train[t], val[t], rest[t] - val[t]) for t in counts}


@dataclass(frozen=True)
class Split:
    """Question ids of each split, in split order."""

    train: tuple[str, ...]
    validation: tuple[str, ...]
    test: tuple[str, ...]

    def ids(self, name: str) -> tuple[str, ...]:
        """Question ids of one split by name ("train", "validation", "test")."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return getattr(self, name)

    def counts_by_type(self, questions: Iterable[Question]) -> dict[str, dict[str, int]]:
        """{type: {"total", "train", "validation", "test"}} like the paper's table."""
        where = {qid: name for name in SPLITS for qid in self.ids(name)}
        table: dict[str, dict[str, int]] = defaultdict(lambda: {"total": 0, **{s: 0 for s in SPLITS}})
        for q in questions:
            if q.id in where:
                table[q.type]["total"] += 1
                table[q.type][where[q.id]] += 1
        return dict(table)


def stratified_split(
    questions: Iterable[Question], fractions: Sequence[Fraction | float] = PAPER_FRACTIONS, seed: int = 42
) -> Split:
    """The paper's split: per type, sort by id, shuffle with `seed`, cut by `allocate`.

    Each type gets its own `random.Random(seed)`, so a type's split does not depend on
    which other types are present.
    """
    by_type: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise ValueError(f"duplicate question id {q.id!r}: a split needs unique ids")
        seen.add(q.id)
        by_type[q.type].append(q.id)
    sizes = allocate({t: len(ids) for t, ids in by_type.items()}, fractions)
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for t in sorted(by_type):
        ids = sorted(by_type[t])
        random.Random(seed).shuffle(ids)
        n_train, n_val, _ = sizes[t]
        out["train"] += ids[:n_train]
        out["validation"] += ids[n_train : n_train + n_val]
        out["test"] += ids[n_train + n_val :]
    return Split(*(tuple(out[s]) for s in SPLITS))
