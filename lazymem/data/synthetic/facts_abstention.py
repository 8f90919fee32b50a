"""Abstention facts (``_abs`` question ids): a question about something never said, next to a planted near-miss.

For example "my brother's name" when only a sister was named. The near-miss statement is
the evidence (its session is in ``answer_session_ids``, as in the official ``_abs``
records); the answer starts with ``_NOT_ENOUGH``.
"""

from __future__ import annotations

from lazymem.data.synthetic.facts_temporal import EVENTS, _event_stmt
from lazymem.data.synthetic.facts_update import _KU_MAKERS
from lazymem.data.synthetic.facts_user import _names_for, _price, _price_stmt, _relation_stmt
from lazymem.data.synthetic.model import _a, _Draw, _Fact, _Stmt, _your
from lazymem.data.synthetic.pools import PRODUCTS, RELATIONS

_NOT_ENOUGH = "The information provided is not enough."


# --- abstention: a planted near-miss, and a question about something never said
def _abs(d: _Draw, qtype: str) -> _Fact | None:
    if qtype == "single-session-user":
        if d.rng.random() < 0.5:
            r1, r2 = d.key("rel", RELATIONS), d.key("rel", RELATIONS)
            if r1 is None or r2 is None:
                return None
            name = d.one(_names_for(r1))
            return _Fact(
                qtype,
                [_relation_stmt(d, r1, name)],
                f"What is my {r2}'s name?",
                f"{_NOT_ENOUGH} You mentioned your {r1} {name}, but not your {r2}.",
                abstention=True,
            )
        p1, p2 = d.one(PRODUCTS), d.one(PRODUCTS)
        stmt = _price_stmt(d, p1, _price(d, p1))
        return _Fact(
            qtype,
            [_Stmt(stmt.theme, stmt.user, stmt.assistant, (p1,))],
            f"How much did I pay for my {p2}?",
            f"{_NOT_ENOUGH} You mentioned buying {_a(p1)} {p1}, but not {_a(p2)} {p2}.",
            abstention=True,
        )
    if qtype == "temporal-reasoning":
        free = [e for e in EVENTS if e[3] not in d.used]
        if len(free) < 2:
            return None
        a, b = d.rng.sample(free, 2)
        d.used.update((a[3], b[3]))
        stmt = _event_stmt(d, a)
        stmt.contains = (a[3],)
        return _Fact(
            qtype,
            [stmt],
            f"How many days passed between {a[2]} and {b[2]}?",
            f"{_NOT_ENOUGH} You mentioned {_your(a[2])}, but not {_your(b[2])}.",
            abstention=True,
        )
    if qtype == "multi-session":
        p1, p2 = d.one(PRODUCTS), d.one(PRODUCTS)
        stmt = _price_stmt(d, p1, _price(d, p1))
        stmt.contains = (p1,)
        return _Fact(
            qtype,
            [stmt],
            f"How much did I spend in total on my {p1} and my {p2}?",
            f"{_NOT_ENOUGH} You mentioned the {p1}, but not {_a(p2)} {p2}.",
            abstention=True,
        )
    # knowledge-update: ask an attribute of the new value that was never stated
    for kind, question, missing in (
        ("car", "What color is my {v}?", "its color"),
        ("city", "Which neighborhood of {v} do I live in now?", "which neighborhood"),
        ("phone", "How much storage does my {v} have?", "its storage size"),
    ):
        if f"ku:{kind}" in d.claimed:
            continue
        d.claimed.add(f"ku:{kind}")
        fact = _KU_MAKERS[kind](d)
        v = fact.answer
        fact.question, fact.answer, fact.abstention = (
            question.format(v=v),
            f"{_NOT_ENOUGH} You mentioned your {v}, but not {missing}.",
            True,
        )
        if kind == "city":
            fact.answer = f"{_NOT_ENOUGH} You mentioned moving to {v}, but not {missing}."
        return fact
    return None
