"""The question plan of one history: which fact each question slot asks about.

Slots cycle through the six LongMemEval types in ``_TYPE_CYCLE`` order; every 12th slot
is an abstention. A slot whose type has run out of distinct facts takes the next type.
"""

from __future__ import annotations

from collections.abc import Callable

from lazymem.data.synthetic.facts_abstention import _abs
from lazymem.data.synthetic.facts_assistant import _SSA_FAMILIES
from lazymem.data.synthetic.facts_multi import _ms
from lazymem.data.synthetic.facts_preference import _SSP_FAMILIES
from lazymem.data.synthetic.facts_temporal import _tr
from lazymem.data.synthetic.facts_update import _ku
from lazymem.data.synthetic.facts_user import _SSU_FAMILIES
from lazymem.data.synthetic.model import _Draw, _Exhausted, _Fact
from lazymem.errors import ConfigError

_FAMILIES: dict[str, tuple[Callable[[_Draw], _Fact | None], ...]] = {
    "single-session-user": _SSU_FAMILIES,
    "single-session-assistant": _SSA_FAMILIES,
    "single-session-preference": _SSP_FAMILIES,
}
# Type order of the question slots (cycled); every 12th slot is an abstention.
_TYPE_CYCLE = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
_ABS_TYPES = ("single-session-user", "multi-session", "temporal-reasoning", "knowledge-update")


def _make_fact(d: _Draw, qtype: str, n_sessions: int) -> _Fact | None:
    try:
        if qtype == "multi-session":
            return _ms(d, d.rng.randint(2, min(4, max(2, n_sessions // 2))))
        if qtype == "temporal-reasoning":
            variant = d.pick(("between", "first", "ago", "when") if n_sessions >= 2 else ("ago", "when"))
            return _tr(d, variant)
        if qtype == "knowledge-update":
            return _ku(d)
    except _Exhausted:
        return None
    families = list(_FAMILIES[qtype])
    d.rng.shuffle(families)
    for make in families:
        try:
            fact = make(d)
        except _Exhausted:
            continue
        if fact is not None:
            return fact
    return None


def _plan(d: _Draw, n_questions: int, n_sessions: int) -> list[_Fact]:
    """One fact per question slot; a slot whose type has run out of distinct facts takes the next type."""
    facts = []
    for i in range(n_questions):
        if i % 12 == 11:
            try:
                fact = _abs(d, d.pick(_ABS_TYPES))
            except _Exhausted:
                fact = None
            if fact is not None:
                facts.append(fact)
                continue
        for shift in range(len(_TYPE_CYCLE)):
            fact = _make_fact(d, _TYPE_CYCLE[(i + shift) % len(_TYPE_CYCLE)], n_sessions)
            if fact is not None:
                break
        else:
            raise ConfigError(
                f"questions_per_history={n_questions} is too many: ran out of distinct facts after "
                f"{len(facts)} questions (a history holds about 200; past about 60 the type mix "
                "is uneven)"
            )
        facts.append(fact)
    return facts
