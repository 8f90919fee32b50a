"""The reward-ordering diagnostic (paper Appendix "Reward-ordering diagnostic", Table
tab:action_reward_ordering): how Micro, Symmetric and our eta-weighted action reward order
fixed, format-valid rollouts of the same prompt.

A *conflict pair* is two rollouts of one prompt where one (o_g) has higher A_g but lower A_n
than the other (o_n). A reward *inverts* it when R(o_g) < R(o_n) and *ties* it when
R(o_g) = R(o_n) (within 1e-9). Rates are fractions of all conflict pairs, pooled over prompts.

*Gold gap*, our reading of "the mean reward difference between the best gold-retaining
rollout and the best rollout that drops gold": per prompt with at least one rollout that
keeps every gold message (A_g = 1) and at least one that drops some gold (A_g < 1), the best
reward among the former minus the best among the latter, averaged over those prompts.

>>> group = [RolloutScore(1.0, 0.0, 1, 5), RolloutScore(0.0, 1.0, 1, 5)]  # keep all / drop all
>>> {name: (o.inversion, o.tie, round(o.gold_gap, 3)) for name, o in reward_ordering([group]).items()}
{'Micro': (1.0, 0.0, -0.667), 'Symmetric': (0.0, 1.0, 0.0), 'Ours': (0.0, 0.0, 0.83)}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from lazymem.construct.gate import Decision
from lazymem.train.rewards import ETA, action_accuracies

TIE_TOL = 1e-9  # rewards this close are a tie (category accuracies are ratios of small counts)


@dataclass(frozen=True)
class RolloutScore:
    """One format-valid rollout's category accuracies and its window's category sizes."""

    a_g: float | None  # fraction of gold messages kept (None: the window has no gold)
    a_n: float | None  # fraction of non-gold messages dropped (None: it has no non-gold)
    n_g: int  # gold messages in the window
    n_n: int  # non-gold messages in the window

    @classmethod
    def from_decisions(cls, decisions: Sequence[Decision | str], gold_labels: Sequence[bool]) -> RolloutScore:
        """From a rollout's decisions (or ops) and the window's gold labels.

        >>> RolloutScore.from_decisions(["KEEP", "KEEP", "DROP"], [True, False, False])
        RolloutScore(a_g=1.0, a_n=0.5, n_g=1, n_n=2)
        """
        a_g, a_n = action_accuracies(decisions, gold_labels)
        n_g = sum(bool(g) for g in gold_labels)
        return cls(a_g, a_n, n_g, len(gold_labels) - n_g)


Rollout = RolloutScore | tuple  # a RolloutScore, (A_g, A_n, N_g, N_n) or (decisions, gold_labels)


def _as_score(r: Rollout) -> RolloutScore:
    if isinstance(r, RolloutScore):
        return r
    if len(r) == 4:
        return RolloutScore(*r)
    if len(r) == 2:
        return RolloutScore.from_decisions(*r)
    raise ValueError(f"a rollout is a RolloutScore, (A_g, A_n, N_g, N_n) or (decisions, gold_labels); got {r!r}")


def _weighted(s: RolloutScore, w_gold: float) -> float:
    """w A_g + (1 - w) A_n, or the one category's accuracy (as in action_reward)."""
    if s.a_g is None or s.a_n is None:
        return s.a_g if s.a_n is None else s.a_n
    return w_gold * s.a_g + (1 - w_gold) * s.a_n


def micro_reward(s: RolloutScore) -> float:
    """(N_g A_g + N_n A_n) / (N_g + N_n): plain message-level accuracy (paper Eq. micro).

    >>> micro_reward(RolloutScore(1.0, 0.0, 1, 5))
    0.16666666666666666
    """
    total = s.n_g + s.n_n
    return ((s.n_g * (s.a_g or 0.0)) + (s.n_n * (s.a_n or 0.0))) / total if total else 1.0


def symmetric_reward(s: RolloutScore) -> float:
    """0.5 A_g + 0.5 A_n (paper Eq. symmetric)."""
    return _weighted(s, 0.5)


def ordering_rewards(eta: float = ETA) -> dict[str, Callable[[RolloutScore], float]]:
    """The three rewards of the table, by its row names."""
    return {"Micro": micro_reward, "Symmetric": symmetric_reward, "Ours": lambda s: _weighted(s, eta)}


@dataclass(frozen=True)
class Ordering:
    """One row of the ordering table."""

    inversion: float | None  # fraction of conflict pairs the reward orders against gold (None: no pairs)
    tie: float | None  # fraction it scores equal
    gold_gap: float | None  # mean best-retaining minus best-dropping reward (None: no such prompt)
    conflict_pairs: int  # pairs the rates are over
    gap_prompts: int  # prompts the gold gap is over


def conflict_pairs(group: Sequence[Rollout]) -> list[tuple[RolloutScore, RolloutScore]]:
    """(o_g, o_n) for every conflict pair of one prompt's rollouts.

    >>> conflict_pairs([(1.0, 0.5, 1, 2), (0.0, 1.0, 1, 2), (1.0, 1.0, 1, 2)])
    [(RolloutScore(a_g=1.0, a_n=0.5, n_g=1, n_n=2), RolloutScore(a_g=0.0, a_n=1.0, n_g=1, n_n=2))]
    """
    out = []
    for a, b in combinations([_as_score(r) for r in group], 2):
        if None in (a.a_g, a.a_n, b.a_g, b.a_n):
            continue  # a conflict needs both categories
        if a.a_g > b.a_g and a.a_n < b.a_n:
            out.append((a, b))
        elif b.a_g > a.a_g and b.a_n < a.a_n:
            out.append((b, a))
    return out


def reward_ordering(groups: Sequence[Sequence[Rollout]], eta: float = ETA) -> dict[str, Ordering]:
    """Inversion rate, tie rate and gold gap of Micro, Symmetric and Ours (eta).

    Args:
        groups: per prompt, its format-valid rollouts (all of one window: the same N_g, N_n).
    """
    scored = []
    for i, group in enumerate(groups):
        g = [_as_score(r) for r in group]
        if len({(s.n_g, s.n_n) for s in g}) > 1:
            raise ValueError(f"group {i}: rollouts of one prompt must share a window (N_g, N_n differ)")
        scored.append(g)
    pairs = [p for g in scored for p in conflict_pairs(g)]
    # (rollouts keeping every gold message, rollouts dropping some) of prompts having both
    split = [([s for s in g if s.a_g == 1.0], [s for s in g if s.a_g is not None and s.a_g < 1.0]) for g in scored]
    split = [(keep, drop) for keep, drop in split if keep and drop]
    table = {}
    for name, reward in ordering_rewards(eta).items():
        diffs = [reward(og) - reward(on) for og, on in pairs]
        ties = sum(abs(d) <= TIE_TOL for d in diffs)
        inversions = sum(d < -TIE_TOL for d in diffs)
        gaps = [max(map(reward, keep)) - max(map(reward, drop)) for keep, drop in split]
        table[name] = Ordering(
            inversions / len(diffs) if diffs else None,
            ties / len(diffs) if diffs else None,
            sum(gaps) / len(gaps) if gaps else None,
            len(diffs),
            len(gaps),
        )
    return table
