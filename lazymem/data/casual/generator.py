"""Casual two-person conversations in the LoCoMo schema: the generator, its bytes and its specs.

``casual_samples(conversations, sessions, seed, questions)`` builds one LoCoMo sample per
conversation, each from its own ``random.Random`` seeded by a string (the same spec gives the
same bytes, and conversation i is the same whatever ``conversations`` is). ``casual_dataset``
loads them with the project's LoCoMo parser (``locomo.parse_locomo``), so roles are the
speakers' names as in real LoCoMo. ``parse_casual_spec`` / ``casual_spec_string`` convert
between arguments and "synthetic-casual:conversations=8,sessions=12,seed=1,questions=20".
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta

from lazymem.data.casual import chatter as C
from lazymem.data.casual import pools as P
from lazymem.data.casual.facts import CYCLE, MAKERS, Draw, Exhausted, Fact, asked_turns
from lazymem.errors import ConfigError

PER_SESSION = 3  # planted statements one session holds at most
_FALLBACK = (4, 2, 5, 1, 3)  # categories tried when a question slot's own category has run out


def stamp(dt: datetime) -> str:
    """LoCoMo's session date format.

    >>> stamp(datetime(2023, 5, 8, 13, 56)), stamp(datetime(2023, 5, 8, 0, 5))
    ('1:56 pm on 8 May, 2023', '12:05 am on 8 May, 2023')
    """
    return (
        f"{(dt.hour - 1) % 12 + 1}:{dt.minute:02d} {'am' if dt.hour < 12 else 'pm'} on {dt.day} "
        f"{P.MONTHS[dt.month - 1]}, {dt.year}"
    )


def _times(rng: random.Random, n: int) -> list[datetime]:
    """Session datetimes: days to weeks apart, at waking hours."""
    t = datetime(2022, 3, 1) + timedelta(days=rng.randint(0, 500))
    out = []
    for _ in range(n):
        out.append(t.replace(hour=rng.randint(8, 21), minute=rng.randint(0, 59)))
        t += timedelta(days=rng.randint(2, 25))
    return out


class _Fill(dict):
    """format_map slots of small talk and distractors: values no fact of the conversation uses."""

    _POOLS = {
        "pet": P.PETS,
        "pname": P.PET_NAMES,
        "cls": P.CLASSES,
        "place": P.PLACES,
        "instrument": P.INSTRUMENTS,
        "book": P.BOOKS,
        "food": P.FOODS,
        "workplace": P.WORKPLACES,
        "hobby": P.HOBBIES,
        "photo": P.PHOTOS,
        "show": P.SHOWS,
        "outing": P.OUTINGS,
        "weather": P.WEATHER,
        "month": P.MONTHS,
        "circle": P.CIRCLE,
        "feeling": P.FEELINGS,
    }

    def __init__(self, rng: random.Random, used: set[str], speakers: dict[str, str]):
        super().__init__(speakers)
        self.rng, self.used = rng, used

    def __missing__(self, key: str) -> str:
        if key in ("other", "their", "their_cap", "event"):
            she = self.rng.random() < 0.5
            names = [n for n in (P.OTHERS_SHE if she else P.OTHERS_HE) if n not in self.used]
            poss = "her" if she else "his"
            events = [e for e, _ in P.EVENTS if e not in self.used]
            self.update(
                other=self.rng.choice(names),
                their=poss,
                their_cap=poss.capitalize(),
                event=self.rng.choice(events).format(poss=poss),
            )
            return self[key]
        pool = self._POOLS[key]
        value = self.rng.choice([v for v in pool if v not in self.used] or list(pool))
        self[key] = value
        return value


def _plan(rng: random.Random, d: Draw, speakers, n_questions: int, where: str) -> list[Fact]:
    facts = []
    for i in range(n_questions):
        who = rng.randrange(2)
        fact = None
        for cat in (CYCLE[i % len(CYCLE)], *_FALLBACK):
            try:
                fact = MAKERS[cat](d, speakers, who) or MAKERS[cat](d, speakers, 1 - who)
            except Exhausted:
                fact = None
            if fact is not None:
                break
        if fact is None:
            raise ConfigError(
                f"synthetic-casual: {where} cannot hold {n_questions} distinct questions "
                f"(ran out after {i}; use questions <= {i})"
            )
        facts.append(fact)
    return facts


def _place(rng: random.Random, facts: list[Fact], n_sessions: int, where: str) -> list[list[int]]:
    """Session of each statement: distinct sessions in order within a fact, PER_SESSION at most per session."""
    free = [PER_SESSION] * n_sessions
    out: list[list[int]] = [[] for _ in facts]
    for f in sorted(range(len(facts)), key=lambda f: -len(facts[f].stmts)):
        cands = [s for s in range(n_sessions) if free[s] > 0]
        k = len(facts[f].stmts)
        if len(cands) < k:
            need = sum(len(x.stmts) for x in facts)
            raise ConfigError(
                f"synthetic-casual: {where} has too few sessions for {len(facts)} questions "
                f"({need} planted statements, {PER_SESSION} per session: sessions >= "
                f"{-(-need // PER_SESSION) + 1})"
            )
        out[f] = sorted(rng.sample(cands, k))
        for s in out[f]:
            free[s] -= 1
    return out


def _planted_block(rng: random.Random, text: str, who: int, names: tuple[str, str]) -> list[tuple[int, str, bool]]:
    """The statement (evidence), a reaction, and sometimes the speaker's follow-up."""
    block = [
        (who, _longer(rng, text, 0.7), True),
        (1 - who, _longer(rng, rng.choice(C.REACTIONS).replace("{O}", names[who]), 0.3), False),
    ]
    if rng.random() < 0.5:
        block.append(
            (
                who,
                _longer(rng, rng.choice(C.FOLLOWUPS).format(O=names[1 - who], feeling=rng.choice(P.FEELINGS)), 0.3),
                False,
            )
        )
    return block


def _longer(rng: random.Random, text: str, p: float) -> str:
    """``text`` with, at probability ``p``, one or two extra sentences (LoCoMo turns run 10-70 words)."""
    if rng.random() < p:
        text = " ".join([text, *rng.sample(C.EXTRAS, rng.randint(1, 2))])
    return text


def _filler_block(rng: random.Random, fill: _Fill) -> list[tuple[int, str, bool]]:
    who, kind = rng.randrange(2), rng.random()
    if kind < 0.35:
        pair = rng.choice(C.DISTRACTORS)
    elif kind < 0.65:
        pair = rng.choice(C.SMALL_TALK)
    elif kind < 0.85:
        pair = rng.choice(C.PHOTOS)
    else:
        return [(who, rng.choice(C.SHORT), False), (1 - who, rng.choice(C.SHORT), False)]
    return [
        (who, _longer(rng, pair[0], 0.5).format_map(fill), False),
        (1 - who, _longer(rng, pair[1], 0.5).format_map(fill), False),
    ]


def _echo_block(
    rng: random.Random,
    fact: Fact,
    fill: _Fill,
    answers: tuple[str, ...],
    first: int | None = None,
    pool: dict | None = None,
) -> list[tuple[int, str, bool]]:
    """A topical echo of ``fact`` (chatter.ECHOES, or ``pool``): a (turn, reply) pair sharing the question's
    words, never an answer-bearing string of the conversation, opened by speaker ``first`` (None: either);
    [] when every template of the topic would hold one."""
    options = list((C.ECHOES if pool is None else pool).get(fact.topic, ()))
    rng.shuffle(options)
    for turn, reply in options:
        texts = []
        for t in (turn, reply):
            for k, v in fact.slots.items():
                t = t.replace("{" + k + "}", v)
            texts.append(t.format_map(fill))
        if not any(a.lower() in t.lower() for a in answers for t in texts):
            who = rng.randrange(2) if first is None else first
            if rng.random() < 0.3:  # LoCoMo's speakers often open with the other's name
                texts[0] = "{O}! " + texts[0]  # the turn loop writes the name
            return [(who, texts[0], False), (1 - who, texts[1], False)]
    return []


def _conversation(seed: int, c: int, n_sessions: int, n_questions: int, topical: int = 0, asked: int = 0):
    """One LoCoMo sample and, per question, its evidence as (dia_id, answer-bearing strings). ``topical``
    adds topical echoes (``_echo_block``): after every planted statement the two talk on about the
    same topic for one or two exchanges without restating the answer (as LoCoMo's gold turns sit among
    turns on their topic), and every session gets one to three echoes of other facts of the conversation.
    ``topical=2`` adds, besides, first-person echoes (chatter.SELF_ECHOES: a fact's own speaker on its
    topic in a session where it is not stated) and puts half the planted statements after a lead-in
    sentence (chatter.LEAD_INS), so the point of a gold turn is not always at its start. ``asked=1`` tells half
    the single-hop and adversarial statements as the answer to the other speaker's question (facts.ASKED): the
    question turn has the question's words, the answer turn (the evidence) the value, as LoCoMo's gold often
    sits next to the turn retrieval finds."""
    rng = random.Random(f"lazymem-casual:{seed}:{c}")
    sid = f"syncasual{seed}-c{c}"
    she_first = rng.random() < 0.5
    a = rng.choice(P.SHE if she_first else P.HE)
    b = rng.choice([n for n in (P.HE if she_first else P.SHE + P.HE) if n != a])
    speakers = ((a, "her" if a in P.SHE else "his"), (b, "her" if b in P.SHE else "his"))
    names = (a, b)
    times = _times(rng, n_sessions)
    d = Draw(rng)
    d.used.update(names)
    facts = _plan(rng, d, speakers, n_questions, sid)
    where = _place(rng, facts, n_sessions, sid)
    planted: dict[int, list[tuple[int, int]]] = {}
    for f, sessions in enumerate(where):
        for j, s in enumerate(sessions):
            planted.setdefault(s, []).append((f, j))
    callbacks: dict[int, list[tuple[int, tuple[str, str]]]] = {}
    conv: dict = {"speaker_a": a, "speaker_b": b}
    evidence: list[list[tuple[str, tuple[str, ...]]]] = [[] for _ in facts]
    answers = tuple(a for f in facts for st in f.stmts for a in st.contains if a) if topical else ()
    for s in range(n_sessions):
        fill = _Fill(rng, d.used, {})
        blocks: list[tuple[list[tuple[int, str, bool]], tuple[int, int] | None]] = []
        for f, j in planted.get(s, []):
            st = facts[f].stmts[j]
            text = f"{rng.choice(C.LEAD_INS)} {st.text}" if topical >= 2 and rng.random() < 0.5 else st.text
            pair = asked_turns(facts[f], rng) if asked and rng.random() < 0.5 else None
            if pair is None:
                block = _planted_block(rng, text, st.who, names)
            else:  # the other asks (not evidence), the speaker answers with the value (the evidence)
                block = [(1 - st.who, pair[0], False), *_planted_block(rng, pair[1], st.who, names)]
            for _ in range(rng.choice((1, 1, 2)) if topical else 0):
                block += _echo_block(rng, facts[f], _Fill(rng, d.used, {}), answers, first=1 - block[-1][0])
            blocks.append((block, (f, j)))
            if st.callback and s + 1 < n_sessions:
                callbacks.setdefault(rng.randint(s + 1, min(s + 3, n_sessions - 1)), []).append((st.who, st.callback))
        for who, (ask, answer) in callbacks.get(s, []):
            blocks.append(([(1 - who, ask, False), (who, answer, False)], None))
        fillers = [_filler_block(rng, fill) for _ in range(rng.randint(2, 5))]
        if topical:
            for _ in range(rng.randint(1, 3)):
                echo = _echo_block(rng, rng.choice(facts), _Fill(rng, d.used, {}), answers)
                fillers += [echo] if echo else []
        if topical >= 2:  # the fact's own speaker on its topic, in a session where it is not stated
            away = [f for f, ss in enumerate(where) if s not in ss and facts[f].topic in C.SELF_ECHOES]
            for f in rng.sample(away, min(len(away), rng.randint(1, 2))):
                echo = _echo_block(
                    rng, facts[f], _Fill(rng, d.used, {}), answers, first=facts[f].stmts[0].who, pool=C.SELF_ECHOES
                )
                blocks += [(echo, None)] if echo else []
        flexible = {id(b): True for b in fillers}
        blocks += [(b, None) for b in fillers]
        rng.shuffle(blocks)
        starter = rng.randrange(2)
        turns = [(starter, rng.choice(C.OPENERS), None), (1 - starter, rng.choice(C.OPENER_REPLIES), None)]
        for block, ref in blocks:
            if block[0][0] == turns[-1][0] and id(block) in flexible:
                block = [(1 - w, t, g) for w, t, g in block]  # small talk: either speaker may start it
            if block[0][0] == turns[-1][0]:
                turns.append((1 - block[0][0], rng.choice(C.BRIDGES), None))
            turns += [(w, t, ref if gold else None) for w, t, gold in block]
        if rng.random() < 0.7:
            closer = rng.choice(C.CLOSERS)
            first = 1 - turns[-1][0]
            turns += [(first, closer[0], None), (1 - first, closer[1], None)]
        key = f"session_{s + 1}"
        conv[f"{key}_date_time"] = stamp(times[s])
        conv[key] = []
        for t, (w, text, ref) in enumerate(turns):
            dia = f"D{s + 1}:{t + 1}"
            text = text.replace("{O}", names[1 - w]).replace("{S}", names[w])
            text = text.format_map(fill) if "{" in text else text
            conv[key].append({"speaker": names[w], "dia_id": dia, "text": text})
            if ref is not None:
                evidence[ref[0]].append((dia, facts[ref[0]].stmts[ref[1]].contains))
    qa = []
    for f, fact in enumerate(facts):
        ev = [dia for dia, _ in evidence[f]]
        answer = fact.resolve([times[s] for s in where[f]]) if fact.resolve else fact.answer
        item = {"question": fact.question, "evidence": ev, "category": fact.category}
        item.update({"adversarial_answer": fact.adversarial} if fact.category == 5 else {"answer": answer})
        qa.append(item)
    return {"sample_id": sid, "conversation": conv, "qa": qa}, evidence


def _check(
    n_conversations: int, n_sessions: int, seed: int, n_questions: int, topical: int = 0, asked: int = 0
) -> None:
    if topical not in (0, 1, 2) or isinstance(topical, bool):
        raise ConfigError(f"synthetic-casual: topical must be 0, 1 or 2, got {topical!r}")
    if asked not in (0, 1) or isinstance(asked, bool):
        raise ConfigError(f"synthetic-casual: asked must be 0 or 1, got {asked!r}")
    for name, value, lo in (
        ("conversations", n_conversations, 1),
        ("sessions", n_sessions, 2),
        ("questions", n_questions, 1),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ConfigError(f"synthetic-casual: {name} must be an integer >= {lo}, got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"synthetic-casual: seed must be an integer, got {seed!r}")


def casual_samples_with_facts(
    n_conversations: int = 1,
    n_sessions: int = 12,
    seed: int = 0,
    n_questions: int = 20,
    topical: int = 0,
    asked: int = 0,
):
    """The LoCoMo samples and, per question id ("{sample_id}:q{j}"), its evidence (dia_id, strings)."""
    _check(n_conversations, n_sessions, seed, n_questions, topical, asked)
    samples, facts = [], {}
    for c in range(n_conversations):
        sample, evidence = _conversation(seed, c, n_sessions, n_questions, topical, asked)
        samples.append(sample)
        facts.update({f"{sample['sample_id']}:q{j}": ev for j, ev in enumerate(evidence)})
    return samples, facts


def casual_samples(
    n_conversations: int = 1,
    n_sessions: int = 12,
    seed: int = 0,
    n_questions: int = 20,
    topical: int = 0,
    asked: int = 0,
) -> list[dict]:
    """LoCoMo-schema samples (``sample_id`` ``syncasual{seed}-c{i}``), deterministic in the arguments.

    >>> s = casual_samples(1, 4, 0, 5)[0]
    >>> s["sample_id"], sorted(s["conversation"])[:3], len(s["qa"])
    ('syncasual0-c0', ['session_1', 'session_1_date_time', 'session_2'], 5)
    """
    return casual_samples_with_facts(n_conversations, n_sessions, seed, n_questions, topical, asked)[0]


def samples_sha256(samples: list[dict]) -> str:
    """sha256 of the canonical JSON (sorted keys, UTF-8, compact) of the samples."""
    data = json.dumps(samples, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def casual_dataset(
    n_conversations: int = 1,
    n_sessions: int = 12,
    seed: int = 0,
    n_questions: int = 20,
    topical: int = 0,
    asked: int = 0,
):
    """The samples loaded by the LoCoMo parser: a Dataset whose roles are the speakers' names."""
    from lazymem.data.locomo import parse_locomo

    samples = casual_samples(n_conversations, n_sessions, seed, n_questions, topical, asked)
    spec = casual_spec_string(n_conversations, n_sessions, seed, n_questions, topical, asked)
    return parse_locomo(samples, file=spec, name=spec, sha256=samples_sha256(samples), bad_evidence="error")


PREFIX = "synthetic-casual"
_KEYS = {
    "conversations": "n_conversations",
    "sessions": "n_sessions",
    "seed": "seed",
    "questions": "n_questions",
    "topical": "topical",
    "asked": "asked",
}


def casual_spec_string(
    n_conversations: int = 1,
    n_sessions: int = 12,
    seed: int = 0,
    n_questions: int = 20,
    topical: int = 0,
    asked: int = 0,
) -> str:
    """The canonical spec of a generator call (the Dataset's name and source); ``topical`` and ``asked`` only
    when on, so the specs (and bytes) of earlier data stay as they were.

    >>> casual_spec_string(8, 12, 1, 20), casual_spec_string(8, 12, 1, 20, topical=1, asked=1)[-18:]
    ('synthetic-casual:conversations=8,sessions=12,seed=1,questions=20', ',topical=1,asked=1')
    """
    spec = f"{PREFIX}:conversations={n_conversations},sessions={n_sessions},seed={seed},questions={n_questions}"
    return spec + (f",topical={topical}" if topical else "") + (f",asked={asked}" if asked else "")


def parse_casual_spec(spec: str) -> dict:
    """Parse "synthetic-casual[:conversations=C,sessions=S,seed=N,questions=Q,topical=T,asked=A]" into generator
    kwargs.

    Every key is optional (defaults 1, 12, 0, 20, topical 0: no topical echoes, asked 0: every statement told
    unprompted). A bad key or value raises ConfigError naming it.

    >>> parse_casual_spec("synthetic-casual:conversations=2,seed=3")
    {'n_conversations': 2, 'n_sessions': 12, 'seed': 3, 'n_questions': 20, 'topical': 0, 'asked': 0}
    >>> parse_casual_spec("synthetic-casual:turns=3")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: synthetic-casual spec: unknown key 'turns' (expected conversations, sessions, seed, questions, topical, asked)
    """  # noqa: E501  (a doctest's expected output is one line)
    head, _, body = str(spec).strip().partition(":")
    if head.strip() != PREFIX:
        raise ConfigError(f"synthetic-casual spec must start with {PREFIX!r}, got {spec!r}")
    out = {"n_conversations": 1, "n_sessions": 12, "seed": 0, "n_questions": 20, "topical": 0, "asked": 0}
    seen = set()
    for part in body.split(","):
        if not part.strip():
            continue
        key, eq, value = (x.strip() for x in part.partition("="))
        if key not in _KEYS:
            raise ConfigError(f"synthetic-casual spec: unknown key {key!r} (expected {', '.join(_KEYS)})")
        if not eq or not value:
            raise ConfigError(f"synthetic-casual spec: key {key!r} has no value (write {key}=...)")
        if key in seen:
            raise ConfigError(f"synthetic-casual spec: key {key!r} given twice")
        if not value.isdigit():
            raise ConfigError(f"synthetic-casual spec: {key}={value!r} is not a whole number")
        seen.add(key)
        out[_KEYS[key]] = int(value)
    if out["topical"] not in (0, 1, 2):
        raise ConfigError(f"synthetic-casual spec: topical={out['topical']} must be 0, 1 or 2")
    if out["asked"] not in (0, 1):
        raise ConfigError(f"synthetic-casual spec: asked={out['asked']} must be 0 or 1")
    return out
