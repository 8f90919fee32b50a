"""The memory-processing model's input for each window: the one window-prompt builder.

Inference (``lazymem.pipeline``), SFT data and GRPO prompts all call ``window_prompts``,
so a model is trained on byte-for-byte the prompts it later answers. Each WindowPrompt
also carries what training needs beside the chat messages: the positions the model must
decide on (blank messages are neither shown nor decided, so history positions and decision
indices differ) and the gold label of each decision, aligned with them.

>>> from lazymem.records import History, Message, Question
>>> from lazymem.retrieve.window import WindowConfig, build_windows
>>> texts = ["I moved to Lisbon.", "  ", "Nice!", "Where do I live?"]
>>> h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
>>> q = Question("q", "single-session-user", "Where do I live?", "Lisbon", "h", "2023/06/01", evidence=(0,))
>>> (p,) = window_prompts(h, q, build_windows(h, [0], WindowConfig(w=2), gold=q.evidence))
>>> p.decision_positions, p.gold_labels, [m["role"] for m in p.messages]
((0, 2), (True, False), ['system', 'user'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lazymem.construct.gate import GateVerdict, parse_decisions
from lazymem.prompts import annotation_messages, decision_positions
from lazymem.records import History, Question
from lazymem.retrieve.window import Window, WindowConfig

BRIDGES = ("none", "overlap")


@dataclass(frozen=True)
class WindowPrompt:
    """One window as the memory-processing model sees it, with its decision slots and gold labels."""

    window: Window  # positions, hits, gold, merged_id, sub_id
    decision_positions: tuple[int, ...]  # history positions of its non-empty messages: one decision each, in order
    gold_labels: tuple[bool, ...]  # per decision: is that message gold evidence (aligned with decision_positions)
    n_prev_bridge: int  # leading messages shown as previous_bridge
    n_next_bridge: int  # trailing messages shown as next_bridge
    messages: tuple[dict, ...]  # the chat messages sent to the model (system + user)

    @property
    def n_decisions(self) -> int:
        return len(self.decision_positions)

    def gate(self, raw: str) -> GateVerdict:
        """The format gate on a raw output for this window (strip a think trace first)."""
        return parse_decisions(raw, self.decision_positions)


def bridge_sizes(windows: Sequence[Window], config: WindowConfig, mode: str) -> list[tuple[int, int]]:
    """(n_prev_bridge, n_next_bridge) per window: the overlap a sub-window shares with its
    neighbours when mode is "overlap", else (0, 0).

    >>> from lazymem.retrieve.window import build_windows
    >>> ws = build_windows(100, [10, 14, 18], WindowConfig())  # [8, 20] -> [8, 15], [15, 20]
    >>> bridge_sizes(ws, WindowConfig(), "overlap")
    [(0, 1), (1, 0)]
    """
    if mode not in BRIDGES:
        raise ValueError(f"bridges mode {mode!r}: must be one of {BRIDGES}")
    if mode == "none":
        return [(0, 0)] * len(windows)
    overlap = config.L - config.s
    out = []
    for i, w in enumerate(windows):
        prev = overlap if w.sub_id > 0 else 0
        nxt = overlap if i + 1 < len(windows) and windows[i + 1].merged_id == w.merged_id else 0
        if prev + nxt > len(w):  # a short last sub-window: its overlap is all of it
            nxt = max(0, len(w) - prev)
        out.append((min(prev, len(w)), nxt))
    return out


def gold_labels(positions: Sequence[int], gold: Iterable[int]) -> tuple[bool, ...]:
    """Whether each decision position is gold evidence.

    >>> gold_labels((4, 6, 9), [6, 20])
    (False, True, False)
    """
    g = set(gold)
    return tuple(p in g for p in positions)


def window_prompts(
    history: History,
    question: Question,
    windows: Sequence[Window],
    config: WindowConfig | None = None,
    bridges: str = "none",
) -> list[WindowPrompt]:
    """The MPM prompt of every window of one question, in window order.

    Args:
        history: the question's history (indexable by position).
        question: gives the query text, the query time and the gold evidence positions.
        windows: W_1..W_P (``lazymem.retrieve.build_windows``).
        config: the windowing settings (needed for "overlap" bridges: the overlap is L - s).
        bridges: "none" (every message is a core message) or "overlap".
    """
    sizes = bridge_sizes(windows, config or WindowConfig(), bridges)
    out = []
    for w, (prev, nxt) in zip(windows, sizes):
        messages = [history[p] for p in w.positions]
        dpos = decision_positions(messages)
        chat = annotation_messages(messages, question.text, question.query_time, n_prev_bridge=prev, n_next_bridge=nxt)
        out.append(WindowPrompt(w, dpos, gold_labels(dpos, question.evidence), prev, nxt, tuple(chat)))
    return out
