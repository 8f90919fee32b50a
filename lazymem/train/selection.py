"""Which training questions (shared by SFT data and RL prompts): the paper's split, filters, held-out
refusal, and sampling in proportion to question type.

``select_questions`` takes one split of the paper's stratified split (seed 42) of each dataset,
keeps questions with gold evidence and refuses LoCoMo conversations 9-10 (conv-49, conv-50:
the paper's LoCoMo test set) with ``HeldOutError``; ``sample_by_type`` draws questions in
proportion to their types (or exact counts per type).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from lazymem.data import allocate, stratified_split
from lazymem.errors import ConfigError

if TYPE_CHECKING:
    from lazymem.records import Dataset, Question

# The paper's LoCoMo test set (conversations 9-10): never training data.
HELD_OUT_HISTORIES = frozenset({"conv-49", "conv-50"})


class HeldOutError(ConfigError):
    """Training data would include a held-out test conversation (LoCoMo conv-49 / conv-50)."""


def sample_by_type(
    items: Sequence[tuple[str, str]], n: int | None = None, per_type: Mapping[str, int] | None = None, seed: int = 0
) -> list[str]:
    """Keys of (key, type) items drawn by type, in input order: ``n`` in proportion to the types
    (largest remainder, as the paper's split), or ``per_type`` counts; each type shuffled by
    its own ``random.Random(seed)`` after sorting by key. ``n`` None or >= len(items): all.

    >>> items = [(f"a{i}", "A") for i in range(6)] + [(f"b{i}", "B") for i in range(3)]
    >>> picked = sample_by_type(items, 3, seed=0)
    >>> len(picked), sorted(Counter(k[0] for k in picked).items())
    (3, [('a', 2), ('b', 1)])
    """
    by_type: dict[str, list[str]] = {}
    for key, t in items:
        by_type.setdefault(t, []).append(key)
    if per_type is not None:
        unknown = sorted(set(per_type) - set(by_type))
        if unknown:
            raise ConfigError(f"per_type: no eligible question of type(s) {unknown}; types here: {sorted(by_type)}")
        short = {t: (k, len(by_type[t])) for t, k in per_type.items() if k > len(by_type[t])}
        if short:
            raise ConfigError(f"per_type asks for more questions than are eligible: {short} (asked, eligible)")
        sizes = {t: per_type.get(t, 0) for t in by_type}
    elif n is None or n >= len(items):
        return [k for k, _ in items]
    else:
        frac = Fraction(n, len(items))
        sizes = {t: a[0] for t, a in allocate({t: len(v) for t, v in by_type.items()}, (frac, 1 - frac, 0)).items()}
    chosen: set[str] = set()
    for t, keys in by_type.items():
        order = sorted(keys)
        random.Random(seed).shuffle(order)
        chosen.update(order[: sizes[t]])
    return [k for k, _ in items if k in chosen]


def select_questions(datasets: Sequence[Dataset], config) -> tuple[list[tuple[int, Question]], dict]:
    """The training questions as (dataset index, question), and the selection's counts.

    ``config`` is a ``sft_data.PairsConfig`` (datasets, split, split_seed, histories, types,
    questions, per_type, seed); not imported here, as sft_data imports this module.

    Raises:
        HeldOutError: an eligible question is asked over LoCoMo conv-49 or conv-50.
        ConfigError: ``histories`` or ``types`` names something no dataset has.
    """
    known = {h for d in datasets for h in d.histories}
    missing = [h for h in config.histories if h not in known]
    if missing:
        raise ConfigError(f"histories: {missing} in no dataset; e.g. {sorted(known)[:5]}")
    names = {n for d in datasets for q in d.questions for n in (q.type, q.abbrev)}
    unknown = [t for t in config.types if t not in names]
    if unknown:
        raise ConfigError(f"types: {unknown} match no question; types here: {sorted(names)}")
    eligible: list[tuple[int, Question]] = []
    counts = []
    for k, d in enumerate(datasets):
        qs = list(d.questions)
        if config.split is not None:
            keep = set(stratified_split(d.questions, seed=config.split_seed).ids(config.split))
            qs = [q for q in qs if q.id in keep]
        n_split = len(qs)
        if config.histories:
            qs = [q for q in qs if q.history_id in set(config.histories)]
        if config.types:
            qs = [q for q in qs if q.type in config.types or q.abbrev in config.types]
        with_evidence = [q for q in qs if q.evidence]
        counts.append(
            {
                "spec": config.datasets[k],
                "questions": len(d.questions),
                "in_split": n_split,
                "after_filters": len(qs),
                "with_gold_evidence": len(with_evidence),
            }
        )
        eligible += [(k, q) for q in with_evidence]
    held = sorted({q.history_id for _, q in eligible if q.history_id in HELD_OUT_HISTORIES})
    if held:
        raise HeldOutError(
            f"LoCoMo conversation(s) {held} are the paper's test set and never training data; "
            f"select conversations 1-8 with histories: [conv-26, ..., conv-48]"
        )
    keys = {f"{k}\t{q.id}": (k, q) for k, q in eligible}
    if len(keys) != len(eligible):
        raise ConfigError("duplicate question ids within one dataset")
    picked = sample_by_type(
        [(key, q.type) for key, (_, q) in keys.items()], config.questions, config.per_type, config.seed
    )
    selected = [keys[key] for key in picked]
    by_type = Counter(q.type for _, q in selected)
    return selected, {
        "datasets": counts,
        "eligible": len(eligible),
        "requested": config.questions,
        "per_type_requested": dict(config.per_type) if config.per_type else None,
        "used": len(selected),
        "used_by_type": dict(sorted(by_type.items())),
        "gold_messages": sum(len(set(q.evidence)) for _, q in selected),
    }
