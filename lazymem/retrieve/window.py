"""History windowing (paper Section 3.2): restore local context around retrieved messages.

Each retrieved message d_i is expanded by w messages on either side; consecutive hits
merge into one window when idx(d_{i+1}) - idx(d_i) <= 2w (transitively), which gives M
maximal windows with no duplicated context. A window longer than L is split into
sub-windows of at most L messages with stride s (L - s messages of overlap), giving the
final P >= M windows W_1..W_P that the memory-processing model reads one call each.

>>> [(w.start, w.end) for w in build_windows(100, [10, 13, 30])]
[(8, 15), (28, 32)]
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lazymem.errors import ConfigError
from lazymem.records import History


@dataclass(frozen=True)
class WindowConfig:
    """How retrieved messages become windows (paper defaults: w=2, L=8, s=7)."""

    w: int = field(default=2, metadata={"help": "Radius: messages added on each side of a retrieved message."})
    L: int = field(default=8, metadata={"help": "Maximum messages per (sub-)window, i.e. per model call."})
    s: int = field(default=7, metadata={"help": "Stride between sub-windows of a long window; L - s messages overlap."})
    cross_sessions: bool = field(
        default=True,
        metadata={
            "help": "Measure position in the whole history, so windows may span session boundaries "
            "(the paper's idx()). False stops expansion and merging at session boundaries."
        },
    )

    def __post_init__(self):
        for name in ("w", "L", "s"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"WindowConfig.{name} must be an int, got {value!r}")
        if self.w < 0:
            raise ConfigError(f"WindowConfig.w must be >= 0, got {self.w}")
        if self.L < 1:
            raise ConfigError(f"WindowConfig.L must be >= 1, got {self.L}")
        if not 1 <= self.s <= self.L:
            # s > L would leave messages of a long window in no sub-window.
            raise ConfigError(f"WindowConfig.s must be in [1, L={self.L}], got {self.s}")


@dataclass(frozen=True)
class Window:
    """One contiguous slice of the history handed to the memory-processing model."""

    positions: tuple[int, ...]  # contiguous history positions, chronological
    hits: tuple[int, ...] = ()  # retrieved positions inside this window
    gold: tuple[int, ...] = ()  # gold evidence positions inside this window (when known)
    merged_id: int = 0  # index of the maximal merged window this came from (0..M-1)
    sub_id: int = 0  # index of this sub-window within its merged window

    @property
    def start(self) -> int:
        """First position (inclusive)."""
        return self.positions[0]

    @property
    def end(self) -> int:
        """Last position (inclusive)."""
        return self.positions[-1]

    def __len__(self) -> int:
        return len(self.positions)


def _session_of(pos: int, starts: Sequence[int], n_messages: int) -> tuple[int, int]:
    """Inclusive (first, last) position of the session holding pos, given sorted session starts."""
    i = bisect_right(starts, pos) - 1
    first = starts[i] if i >= 0 else 0
    last = starts[i + 1] - 1 if i + 1 < len(starts) else n_messages - 1
    return first, last


def merge_spans(
    hits: Iterable[int], n_messages: int, w: int, boundaries: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """Expand hits by radius w and merge them into maximal windows (inclusive spans).

    Hits are sorted and deduplicated; consecutive hits merge when their distance is at
    most 2w (their w-spans overlap), transitively. Hits 2w + 1 apart give spans that
    touch without overlapping: they stay two windows, adjacent but with no message in
    both, exactly as the paper's rule says. Spans are clipped to [0, n_messages - 1].

    Args:
        hits: retrieved positions, any order, duplicates allowed.
        n_messages: history length.
        w: radius (>= 0).
        boundaries: sorted session start positions; when given, a span never leaves its
            hit's session and hits in different sessions never merge.

    >>> merge_spans([30, 10, 13, 10], 100, 2)
    [(8, 15), (28, 32)]
    >>> merge_spans([10, 15], 100, 2)  # distance 2w + 1: adjacent, not merged
    [(8, 12), (13, 17)]
    >>> merge_spans([0, 99], 100, 3)
    [(0, 3), (96, 99)]
    >>> merge_spans([4, 6], 100, 2, boundaries=[0, 5])  # 4 and 6 sit in different sessions
    [(2, 4), (5, 8)]
    """
    if w < 0:
        raise ValueError(f"w must be >= 0, got {w}")
    hits = sorted(set(hits))
    for h in hits[:1] + hits[-1:]:  # sorted: checking the extremes checks them all
        if not 0 <= h < n_messages:
            raise ValueError(f"hit {h} outside the history [0, {n_messages})")
    starts = sorted(set(boundaries)) if boundaries is not None else None
    spans: list[tuple[int, int]] = []
    first_hit = last_hit = None
    session = (0, n_messages - 1)
    for h in hits:
        h_session = _session_of(h, starts, n_messages) if starts is not None else session
        if first_hit is not None and h - last_hit <= 2 * w and h_session == session:
            last_hit = h
            continue
        if first_hit is not None:
            spans.append((max(session[0], first_hit - w), min(session[1], last_hit + w)))
        first_hit = last_hit = h
        session = h_session
    if first_hit is not None:
        spans.append((max(session[0], first_hit - w), min(session[1], last_hit + w)))
    return spans


def split_span(start: int, end: int, L: int, s: int) -> list[tuple[int, int]]:
    """Split an inclusive span longer than L into sub-windows of at most L, stride s.

    Sub-window k is [start + k*s, min(start + k*s + L - 1, end)], stopping at the first
    one that reaches end. Every sub-window but the last is full, so each consecutive
    pair overlaps by exactly L - s messages (1 with the paper's L=8, s=7), the last
    pair included; only the last may be shorter than L. A span of at most L stays whole.

    >>> split_span(100, 119, 8, 7)
    [(100, 107), (107, 114), (114, 119)]
    >>> split_span(0, 7, 8, 7)
    [(0, 7)]
    >>> split_span(0, 8, 8, 7)  # 9 messages: the last sub-window is 2 long
    [(0, 7), (7, 8)]
    """
    if L < 1 or not 1 <= s <= L:
        raise ValueError(f"need L >= 1 and 1 <= s <= L, got L={L}, s={s}")
    if end < start:
        raise ValueError(f"empty span ({start}, {end})")
    out = []
    a = start
    while True:
        b = min(a + L - 1, end)
        out.append((a, b))
        if b == end:
            return out
        a += s


# Session starts per History, keyed by id() with a weak reference to check it is still
# the same object: hashing a History would cost O(n) per call.
_STARTS_CACHE: dict[int, tuple[weakref.ref, tuple[int, ...]]] = {}


def session_starts(history: History) -> tuple[int, ...]:
    """Positions where a new session begins (always starts with 0 for a non-empty history).

    Cached per History object, so repeated windowing over one history costs O(log n).

    >>> from lazymem.records import Message
    >>> msgs = tuple(Message(i, f"{s}#{i}", s, 0, "user", "", "") for i, s in enumerate("aabbbc"))
    >>> session_starts(History("h", msgs))
    (0, 2, 5)
    """
    key = id(history)
    hit = _STARTS_CACHE.get(key)
    if hit is not None and hit[0]() is history:
        return hit[1]
    starts = tuple(
        i for i, m in enumerate(history.messages) if i == 0 or m.session_id != history.messages[i - 1].session_id
    )
    try:
        _STARTS_CACHE[key] = (weakref.ref(history, _forget), starts)
    except TypeError:  # not weak-referenceable (e.g. a slotted subclass): skip the cache
        pass
    return starts


def _forget(ref: weakref.ref) -> None:
    # Drop only our own entry: the id may already belong to a newer History.
    for key, (r, _) in list(_STARTS_CACHE.items()):
        if r is ref:
            del _STARTS_CACHE[key]


def _inside(sorted_positions: Sequence[int], a: int, b: int) -> tuple[int, ...]:
    return tuple(sorted_positions[bisect_left(sorted_positions, a) : bisect_right(sorted_positions, b)])


def build_windows(
    history_or_n: History | int,
    hits: Iterable[int],
    config: WindowConfig = WindowConfig(),
    gold: Iterable[int] = (),
    boundaries: Sequence[int] | None = None,
) -> list[Window]:
    """The final windows W_1..W_P for a set of retrieved positions, chronological.

    Args:
        history_or_n: the History (its session ids give the boundaries when
            config.cross_sessions is False) or just its message count.
        hits: retrieved positions (the candidate pool R_q), any order.
        config: radius, maximum length, stride and session handling.
        gold: gold evidence positions, recorded per window (for SFT labels and coverage).
        boundaries: session start positions; overrides the History's. Needed with an int
            and cross_sessions=False. Ignored when cross_sessions is True.

    >>> ws = build_windows(100, [45, 40, 70], WindowConfig(w=3), gold=[41, 90])
    >>> [(w.start, w.end, w.merged_id, w.sub_id, w.hits, w.gold) for w in ws]
    [(37, 44, 0, 0, (40,), (41,)), (44, 48, 0, 1, (45,), ()), (67, 73, 1, 0, (70,), ())]
    """
    n = len(history_or_n) if isinstance(history_or_n, History) else int(history_or_n)
    if config.cross_sessions:
        boundaries = None
    elif boundaries is None:
        if not isinstance(history_or_n, History):
            raise ValueError("cross_sessions=False needs a History or explicit session boundaries")
        boundaries = session_starts(history_or_n)
    hits = sorted(set(hits))
    gold = sorted(set(gold))
    for g in gold[:1] + gold[-1:]:
        if not 0 <= g < n:
            raise ValueError(f"gold position {g} outside the history [0, {n})")
    windows = []
    for merged_id, (start, end) in enumerate(merge_spans(hits, n, config.w, boundaries)):
        for sub_id, (a, b) in enumerate(split_span(start, end, config.L, config.s)):
            windows.append(Window(tuple(range(a, b + 1)), _inside(hits, a, b), _inside(gold, a, b), merged_id, sub_id))
    return windows


def window_stats(windows: Sequence[Window]) -> dict:
    """Counts for a list of windows: P, M, lengths, messages covered and duplicated.

    `processed` counts messages the model reads (with overlaps), `covered` distinct ones,
    `duplicated` = processed - covered (the sub-window overlaps).

    >>> window_stats(build_windows(100, [10, 14, 18, 50]))  # [8, 20] splits in two
    {'P': 3, 'M': 2, 'lengths': [8, 6, 5], 'processed': 19, 'covered': 18, 'duplicated': 1}
    """
    lengths = [len(w) for w in windows]
    covered = len({p for w in windows for p in w.positions})
    processed = sum(lengths)
    return {
        "P": len(windows),
        "M": len({w.merged_id for w in windows}),
        "lengths": lengths,
        "processed": processed,
        "covered": covered,
        "duplicated": processed - covered,
    }
