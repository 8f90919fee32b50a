"""What a planted fact is, the per-history random draws, and phrase helpers.

``_Stmt`` is one planted (user, assistant) pair; ``_Fact`` a question with its statements;
``Evidence`` one gold turn as ``generate_with_facts`` reports it; ``_Draw`` hands out
values no other fact of the history uses. The helpers format money, dates and articles
with their own name tables (no locale dependence).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from lazymem.data.synthetic.pools import MONTHS, WEEKDAYS


class Evidence(NamedTuple):
    """One gold turn of a question and the strings it must contain verbatim."""

    session_id: str
    turn: int  # 0-based index within the session
    contains: tuple[str, ...]  # answer-bearing strings (value, date phrase, ...) in the turn's content


@dataclass
class _Stmt:
    """One planted statement: a (user, assistant) pair; "{date}" is replaced by the session's date."""

    theme: str
    user: str
    assistant: str
    contains: tuple[str, ...]
    side: int = 0  # which turn of the pair is evidence: 0 user, 1 assistant


@dataclass
class _Fact:
    """A question and the statements that answer it (chronological)."""

    qtype: str
    stmts: list[_Stmt]
    question: str
    answer: str
    abstention: bool = False
    distinct_days: bool = False  # statements must fall on different calendar days
    # (statement datetimes, question datetime) -> (question, answer), for temporal questions
    resolve: Callable[[list[datetime], datetime], tuple[str, str]] | None = field(default=None, repr=False)


class _Draw:
    """Per-history random draws: values unused so far (no two facts share a value) and claimed keys."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()
        self.claimed: set[str] = set()

    def one(self, pool: tuple[str, ...]) -> str:
        for _ in range(64):
            v = self.rng.choice(pool)
            if v not in self.used:
                self.used.add(v)
                return v
        free = [v for v in pool if v not in self.used]  # pool nearly exhausted: fall back to a scan
        if not free:
            raise _Exhausted
        v = self.rng.choice(free)
        self.used.add(v)
        return v

    def key(self, prefix: str, options: tuple[str, ...]) -> str | None:
        """Claim an unclaimed key f"{prefix}:{option}"; the option, or None when all are taken."""
        free = [o for o in options if f"{prefix}:{o}" not in self.claimed]
        if not free:
            return None
        o = self.rng.choice(free)
        self.claimed.add(f"{prefix}:{o}")
        return o

    def pick(self, options):
        return self.rng.choice(options)


class _Exhausted(Exception):
    """A value pool ran out for this history."""


def _a(noun: str) -> str:
    return "an" if noun[0].lower() in "aeiou" else "a"


def _your(phrase: str) -> str:
    """First person to second person for answers ("my first class" -> "your first class")."""
    return re.sub(r"\bmy\b", "your", phrase)


def _money(x: int) -> str:
    return f"${x:,}"


def _join(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def _day_phrase(dt: datetime) -> str:
    """ "Saturday, May 20" (own name tables: no locale dependence)."""
    return f"{WEEKDAYS[dt.weekday()]}, {MONTHS[dt.month - 1]} {dt.day}"


def _md(dt: datetime) -> str:
    return f"{MONTHS[dt.month - 1]} {dt.day}"


def _stamp(dt: datetime) -> str:
    """LongMemEval's date format, e.g. "2023/05/20 (Sat) 02:21"."""
    return f"{dt.year:04d}/{dt.month:02d}/{dt.day:02d} ({WEEKDAYS[dt.weekday()][:3]}) {dt.hour:02d}:{dt.minute:02d}"
