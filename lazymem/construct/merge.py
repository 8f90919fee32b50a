"""Merge decisions over overlapping sub-windows, assemble the memory m_q, count what construction did.

Decisions are deduplicated by position (KEEP beats DROP, then the earlier window), kept
messages become ``[timestamp] role: content`` lines in history order, and
``construction_stats`` gives one query's gate pass rate, Gate Fmt., gold-keep recall and how
many KEEPs rewrote their message instead of quoting a span of it (``lazymem.construct.grounded``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lazymem.construct.gate import Decision, GateVerdict
from lazymem.construct.grounded import count_rewritten
from lazymem.prompts import memory_line
from lazymem.records import History, Message


def window_positions(window: Any) -> tuple[int, ...]:
    """Positions of a window given as positions, messages, or an object with .positions."""
    seq = getattr(window, "positions", window)
    return tuple(getattr(x, "pos", x) for x in seq)


def merge_decisions(window_results: Sequence[tuple[Any, GateVerdict]]) -> dict[int, Decision]:
    """Deduplicate decisions across overlapping sub-windows by position.

    KEEP beats DROP; between equal ops the earlier window (in the given order) wins. A
    window that failed the gate contributes nothing. Returns decisions sorted by position.

    >>> keep = lambda p, c: Decision(p, "KEEP", c)
    >>> a = GateVerdict(True, "ok", (keep(14, "a14"), Decision(15, "DROP", "")), "")
    >>> b = GateVerdict(True, "ok", (keep(15, "b15"), keep(16, "b16")), "")
    >>> [(d.pos, d.content) for d in merge_decisions([([14, 15], a), ([15, 16], b)]).values()]
    [(14, 'a14'), (15, 'b15'), (16, 'b16')]
    """
    merged: dict[int, Decision] = {}
    for _, verdict in window_results:
        if not verdict.ok:
            continue
        for d in verdict.decisions:
            current = merged.get(d.pos)
            if current is None or (current.op == "DROP" and d.op == "KEEP"):
                merged[d.pos] = d
    return dict(sorted(merged.items()))


def assemble_memory(
    decisions: Mapping[int, Decision] | Iterable[Decision], history: History | Sequence[Message]
) -> str:
    """Kept messages, chronologically, one ``[timestamp] role: content`` line each.

    ``history`` must be indexable by position (a History, or its full message list).

    >>> h = [Message(0, "s#0", "s", 0, "user", "I moved to Lisbon in May.", "2023/05/20")]
    >>> assemble_memory([Decision(0, "KEEP", "Moved to Lisbon.")], h)
    '[2023/05/20] user: Moved to Lisbon.'
    """
    items = decisions.values() if isinstance(decisions, Mapping) else decisions
    kept = sorted((d for d in items if d.op == "KEEP"), key=lambda d: d.pos)
    lines = []
    for d in kept:
        m = history[d.pos]
        if m.pos != d.pos:
            raise ValueError(f"history is not indexed by position: item {d.pos} has pos {m.pos}")
        lines.append(memory_line(m.timestamp, m.role, d.content))
    return "\n".join(lines)


@dataclass(frozen=True)
class ConstructionStats:
    """What construction did for one query (sum the counts to aggregate over a dataset)."""

    n_windows: int  # processor calls
    n_valid: int  # outputs that passed the full gate (o in V)
    n_fmt: int  # outputs with a parseable array of the right length (the paper's Gate Fmt.)
    n_messages: int  # distinct positions covered by the windows
    n_decided: int  # distinct positions decided by a valid window
    n_kept: int  # distinct positions kept after merging
    n_gold: int  # gold positions covered by the windows (failed windows included)
    n_gold_kept: int  # of those, kept after merging
    failures: dict[str, int] = field(default_factory=dict)  # failure kind -> count
    n_keep_decisions: int = 0  # KEEP decisions in outputs that passed the gate (before merging)
    n_rewritten: int | None = None  # of those, content not a verbatim span of its message; None: texts not given

    @property
    def gate_pass_rate(self) -> float | None:
        """Share of outputs passing the full gate (None without windows)."""
        return self.n_valid / self.n_windows if self.n_windows else None

    @property
    def gate_fmt(self) -> float | None:
        """Share of outputs that are a parseable array of the right length (None without windows)."""
        return self.n_fmt / self.n_windows if self.n_windows else None

    @property
    def gold_keep_recall(self) -> float | None:
        """Gold messages kept / gold messages in windows (None when no gold was in a window)."""
        return self.n_gold_kept / self.n_gold if self.n_gold else None

    @property
    def rewritten_rate(self) -> float | None:
        """Rewritten KEEPs / KEEP decisions (None without KEEPs, or when texts were not given)."""
        return (
            self.n_rewritten / self.n_keep_decisions if self.n_keep_decisions and self.n_rewritten is not None else None
        )


def construction_stats(
    window_results: Sequence[tuple[Any, GateVerdict]],
    gold_positions: Iterable[int] = (),
    texts: Mapping[int, str] | None = None,
) -> ConstructionStats:
    """Gate pass rate, kept count, gold-keep recall and rewritten KEEPs of one query's construction.

    ``texts``: each decided position's message text; every KEEP of a window that passed the gate
    is judged against it (``grounded.is_span``); without it ``n_rewritten`` is None.

    >>> ok = GateVerdict(True, "ok", (Decision(1, "KEEP", "x"), Decision(2, "DROP", "")), "")
    >>> bad = GateVerdict(False, "wrong_count", (), "[]")
    >>> s = construction_stats([([1, 2], ok), ([2, 3], bad)], gold_positions=[1, 3], texts={1: "y", 2: "z"})
    >>> s.gate_pass_rate, s.n_kept, s.gold_keep_recall, s.n_keep_decisions, s.n_rewritten, s.rewritten_rate
    (0.5, 1, 0.5, 1, 1, 1.0)
    """
    covered: set[int] = set()
    for window, _ in window_results:
        covered.update(window_positions(window))
    merged = merge_decisions(window_results)
    kept = {p for p, d in merged.items() if d.op == "KEEP"}
    gold = set(gold_positions) & covered
    verdicts = [v for _, v in window_results]
    failures = Counter(v.reason for v in verdicts if not v.ok)
    decided = [d for v in verdicts if v.ok for d in v.decisions]
    n_keep, n_rewritten = (
        count_rewritten(decided, texts) if texts is not None else (sum(d.op == "KEEP" for d in decided), None)
    )
    return ConstructionStats(
        n_windows=len(verdicts),
        n_valid=sum(v.ok for v in verdicts),
        n_fmt=sum(v.fmt_ok for v in verdicts),
        n_messages=len(covered),
        n_decided=len(merged),
        n_kept=len(kept),
        n_gold=len(gold),
        n_gold_kept=len(gold & kept),
        failures=dict(sorted(failures.items())),
        n_keep_decisions=n_keep,
        n_rewritten=n_rewritten,
    )
