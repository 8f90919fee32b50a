"""One synthetic history: session sizes and dates, placing the planted statements, filling the rest with chat.

``_history`` draws, in this order (the order fixes the output for a seed): session sizes,
session dates, the question plan (``plan._plan``), the sessions each statement goes to,
then the turns session by session, distractor exchanges filled by ``_Fill``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from lazymem.data.synthetic.chatter import _BRIDGES, _CLOSERS, _FOLLOWUPS, _OPENERS, THEME_NAMES, THEMES
from lazymem.data.synthetic.facts_temporal import _EVENT_INTROS
from lazymem.data.synthetic.model import _a, _day_phrase, _Draw, _Fact, _md, _stamp
from lazymem.data.synthetic.plan import _plan
from lazymem.data.synthetic.pools import _SLOTS, EVENT_CHATTER, PRICES
from lazymem.errors import ConfigError


def _session_sizes(rng: random.Random, n_pairs: int) -> list[int]:
    """Pairs per session: 3-8 each (6-16 messages), summing to n_pairs exactly."""
    sizes, rem = [], n_pairs
    while rem > 0:
        p = rng.randint(3, 8)
        if rem - p < 3:
            p = rem if rem <= 8 else rem - 3
        sizes.append(p)
        rem -= p
    return sizes


def _session_times(rng: random.Random, n_sessions: int) -> tuple[list[datetime], datetime]:
    """Increasing session datetimes over at most ~2 years, and a question time a day or more after the last."""
    t = datetime(2022, 1, 3, 8, 0) + timedelta(days=rng.randint(0, 540), minutes=rng.randint(0, 600))
    mean = min(int(2.5 * 1440), 730 * 1440 // max(n_sessions, 1))  # minutes between sessions
    times = []
    for _ in range(n_sessions):
        times.append(t)
        # Gaps of a day or more while the span allows it, so temporal facts land on distinct days.
        gap = (
            rng.randint(1440, 2 * mean - 1440) if mean >= 1.5 * 1440 else rng.randint(max(20, mean // 3), mean * 5 // 3)
        )
        t += timedelta(minutes=gap)
    return times, times[-1] + timedelta(minutes=rng.randint(1440, 4 * 1440))


def _place(
    rng: random.Random, facts: list[_Fact], sizes: list[int], times: list[datetime], n_messages: int
) -> list[list[int]]:
    """Session index of each statement of each fact: distinct, chronological sessions, one pair per statement."""
    free = list(sizes)
    where: list[list[int] | None] = [None] * len(facts)
    # Multi-statement facts first, so single statements fill whatever room is left.
    for f in sorted(range(len(facts)), key=lambda f: -len(facts[f].stmts)):
        fact, k = facts[f], len(facts[f].stmts)
        cands = [s for s in range(len(sizes)) if free[s] > 0]
        chosen = None
        for _ in range(32):
            if len(cands) < k:
                break
            pick = sorted(rng.sample(cands, k))
            if not fact.distinct_days or all(times[a].date() < times[b].date() for a, b in zip(pick, pick[1:])):
                chosen = pick
                break
        if chosen is None and fact.distinct_days:
            per_day = list({times[s].date(): s for s in reversed(cands)}.values())[::-1]  # first session of each day
            if len(per_day) >= k:
                chosen = sorted(rng.sample(per_day, k))
        if chosen is None:
            need = sum(len(x.stmts) for x in facts)
            raise ConfigError(
                f"n_messages={n_messages} is too small for {len(facts)} questions per history "
                f"({need} planted statements; n_messages >= {max(60, 6 * need)} always fits them)"
            )
        for s in chosen:
            free[s] -= 1
        where[f] = chosen
    return where  # type: ignore[return-value]


class _Fill(dict):
    """format_map slots: each missing {slot} (or {slot2}) gets a random filler, fixed for the exchange."""

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def __missing__(self, key: str) -> str:
        base = key.rstrip("0123456789")
        if base == "event":
            value = self.rng.choice(EVENT_CHATTER)
        elif base.startswith("a_"):  # "{a_job}" -> "an accountant", and {job} is then the same job
            noun = self[base[2:]]
            value = f"{_a(noun)} {noun}"
        elif base == "price":  # in range for the {product} already chosen
            lo, hi = PRICES.get(self.get("product", ""), (40, 900))
            value = f"{self.rng.randrange(lo, hi + 1, 5):,}"
        else:
            pool = _SLOTS[base]
            value = self.rng.choice(pool)
            if base != key and value == self.get(base):  # {city2} differs from {city}
                value = pool[(pool.index(value) + 1) % len(pool)]
        self[key] = value
        return value


def _history(rng: random.Random, n_messages: int, n_questions: int, prefix: str):
    """(shared sessions, session ids, dates, question date, facts, evidence (session, turn) per fact)."""
    sizes = _session_sizes(rng, n_messages // 2)
    times, asked = _session_times(rng, len(sizes))
    facts = _plan(_Draw(rng), n_questions, len(sizes))
    where = _place(rng, facts, sizes, times, n_messages)
    # Statements per session, then pair slots within each session.
    by_session: dict[int, list[tuple[int, int]]] = {}
    for f, sessions in enumerate(where):
        for j, s in enumerate(sessions):
            by_session.setdefault(s, []).append((f, j))
    evidence: list[list[tuple[int, int, tuple[str, ...]]]] = [[] for _ in facts]
    out = []
    for s, n_pairs in enumerate(sizes):
        planted = by_session.get(s, [])
        slots = dict(zip(rng.sample(range(n_pairs), len(planted)), planted))
        first = min(slots) if slots else None
        theme = facts[slots[first][0]].stmts[slots[first][1]].theme if slots else rng.choice(THEME_NAMES)
        exchanges = THEMES[theme]
        order = rng.sample(range(len(exchanges)), min(len(exchanges), n_pairs))
        date = _day_phrase(times[s])
        turns = []
        for p in range(n_pairs):
            if p in slots:
                f, j = slots[p]
                st = facts[f].stmts[j]
                user = st.user.replace("{date}", date)
                if st.theme != theme and p != first:
                    for intro in _EVENT_INTROS[1:]:
                        user = user.removeprefix(intro)
                    user = rng.choice(_BRIDGES) + user
                assistant = rng.choice(_OPENERS) + st.assistant.replace("{date}", date)
                evidence[f].append((s, 2 * p + st.side, tuple(c.replace("{date}", _md(times[s])) for c in st.contains)))
            elif p == n_pairs - 1 and p >= 3 and rng.random() < 0.4:
                user, assistant = rng.choice(_CLOSERS)
            else:
                fill = _Fill(rng)
                u, a = exchanges[order[p % len(order)]]
                user = u.format_map(fill)
                assistant = rng.choice(_OPENERS) + a.format_map(fill) + rng.choice(_FOLLOWUPS)
            turns.append({"role": "user", "content": user, "has_answer": False})
            turns.append({"role": "assistant", "content": assistant, "has_answer": False})
        out.append(turns)
    sids = [f"{prefix}-s{s}" for s in range(len(sizes))]
    return out, sids, [_stamp(t) for t in times], asked, facts, evidence, times
