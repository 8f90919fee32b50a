"""Planted facts of the casual generator: one maker per LoCoMo question category (templates).

A ``Fact`` is a question, its answer and the statements (``Stmt``) that answer it, each said by
one of the two speakers (0 = speaker_a, 1 = speaker_b) in its own session. Makers take a
``Draw`` (per-conversation values, each used once, and claimed keys) and the speakers, and
return None when what they need is taken. Categories follow LoCoMo: 1 multi-hop (two sessions),
2 temporal (an event said "yesterday", answered as a date), 3 open-domain (an inference from
two statements), 4 single-hop, 5 adversarial (asks about the speaker who did NOT say it).

>>> import random
>>> d = Draw(random.Random(0))
>>> f = single_hop(d, (("Maya", "her"), ("Daniel", "his")), 0)
>>> f.category, f.answer in f.stmts[0].text
(4, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lazymem.data.casual import pools as P

Speaker = tuple[str, str]  # (name, possessive pronoun)


@dataclass
class Stmt:
    """One planted turn; ``{when}`` in ``text`` becomes a relative day phrase (temporal facts)."""

    who: int  # 0 = speaker_a, 1 = speaker_b
    text: str
    contains: tuple[str, ...]  # answer-bearing strings the turn holds verbatim
    callback: tuple[str, str] | None = None  # (the other's question, the speaker's answer) for a later session


@dataclass
class Fact:
    """A question, its answer and the statements (chronological, distinct sessions) that answer it."""

    category: int
    stmts: list[Stmt]
    question: str
    answer: str
    adversarial: str = ""  # category 5: the answer that belongs to the other speaker
    # session datetimes of the statements -> answer (temporal facts)
    resolve: Callable[[list[datetime]], str] | None = field(default=None, repr=False)
    # what the question is about (a chatter.ECHOES key) and the non-answer values its echoes reuse
    topic: str = ""
    slots: dict[str, str] = field(default_factory=dict)


class Draw:
    """Per-conversation draws: each value once, each key (slot, person) claimed once."""

    def __init__(self, rng: random.Random):
        self.rng, self.used, self.claimed = rng, set(), set()

    def one(self, pool: tuple[str, ...]) -> str:
        free = [v for v in pool if v not in self.used]
        if not free:
            raise Exhausted(pool[0])
        v = self.rng.choice(free)
        self.used.add(v)
        return v

    def claim(self, *keys: str) -> bool:
        """Claim every key (all or none); False when one is taken."""
        if any(k in self.claimed for k in keys):
            return False
        self.claimed.update(keys)
        return True

    def pick(self, options):
        return self.rng.choice(options)


class Exhausted(Exception):
    """A pool ran out for this conversation."""


def long_date(dt: datetime) -> str:
    """LoCoMo's answer format: "7 May 2023".

    >>> long_date(datetime(2023, 5, 7))
    '7 May 2023'
    """
    return f"{dt.day} {P.MONTHS[dt.month - 1]} {dt.year}"


# slot -> (statement templates, question template about {X} with {xposs}, callback (question, answer) or None)
SINGLE = {
    "pet": (
        (
            "I finally did it, I adopted a {pet}! {pname} came home with me on Saturday.",
            "Meet the newest member of the family: a {pet} named {pname}. [shares a photo of a {pet} on a couch]",
            "So I have news... I adopted a {pet}. {Poss} name is {pname} and I'm obsessed.",
        ),
        "What is the name of {X}'s {pet}?",
        "{pname}",
        ("How's {pname} settling in?", "{pname} is doing great! Already stealing my socks."),
    ),
    "class": (
        (
            "I signed up for a {cls} class at the community center. First session is next week!",
            "Guess what, I'm taking a {cls} class now. I've wanted to try it for years.",
            "I started a {cls} class on Tuesdays. I'm terrible at it, but it's so much fun.",
        ),
        "What class did {X} sign up for?",
        "{cls}",
        ("How's the {cls} class going?", "I love it! I'm slowly getting less terrible."),
    ),
    "job": (
        (
            "Big news: I got a job at {workplace}! I start in two weeks.",
            "I accepted the offer at {workplace}. Still can't believe it.",
            "So I've been keeping this quiet, but I'm leaving my old job to work at {workplace}.",
        ),
        "Where did {X} get a new job?",
        "{workplace}",
        ("How's the new job at {workplace}?", "Honestly better than I hoped. The people are lovely."),
    ),
    "instrument": (
        (
            "I've been teaching myself the {instrument} with online videos. My fingers hurt!",
            "I bought a secondhand {instrument} and I practice every night now.",
        ),
        "What instrument is {X} learning?",
        "{instrument}",
        ("Still practicing the {instrument}?", "Every night! I can almost play a song."),
    ),
    "book": (
        (
            "I just finished {book} and I can't stop thinking about it.",
            "I stayed up way too late reading {book}. That ending!",
        ),
        "What book did {X} just finish?",
        "{book}",
        None,
    ),
    "family": (
        (
            "My {fam} {fname} is coming to stay with me next month. I haven't seen {fobj} in ages.",
            "I spent the whole weekend helping my {fam} {fname} move apartments. So many boxes.",
        ),
        "What is the name of {X}'s {fam}?",
        "{fname}",
        ("How's {fname} doing?", "Good! We talk almost every day now."),
    ),
    "food": (
        (
            "I made {food} from scratch last night and it actually turned out great.",
            "Okay, I've perfected my {food} recipe. I've made it three weekends in a row.",
        ),
        "What dish has {X} been making from scratch?",
        "{food}",
        None,
    ),
}
# `asked=1`: a planted single-hop/adversarial statement told as the answer to the other speaker's question. The
# question turn carries the question's words, the answer turn (the evidence) the value with few of them, as in
# LoCoMo, where the turn retrieval finds is often the one next to the gold turn. (the other's ask, the answer;
# {value} is the answer-bearing string, {pet}/{fam} the fact's slots, {fobj} the relative's object pronoun)
ASKED = {
    "pet": (
        (
            "Wait, didn't you say you were getting a {pet}? What's the name?",
            "{value}! Came home on Saturday and already owns the couch.",
        ),
        (
            "So is the {pet} finally happening or not? Does it have a name yet?",
            "It happened! Meet {value}. I'm completely obsessed.",
        ),
    ),
    "class": (
        (
            "Did you ever sign up for that class you kept talking about?",
            "I did, {value}! First session is next week, I'm nervous.",
        ),
        ("What class did you end up choosing in the end?", "{value}, on Tuesdays. I'm terrible at it so far."),
    ),
    "job": (
        (
            "So, any news on the new job front? Where did you end up?",
            "Yes!! {value}. I start in two weeks and I still can't believe it.",
        ),
        ("Did you get the job you interviewed for?", "I got an offer from {value} and took it!"),
    ),
    "instrument": (
        ("Are you still learning that instrument you mentioned?", "The {value}, yes! Every night, my fingers hurt."),
        ("What instrument did you pick up in the end?", "A secondhand {value}. I practice after dinner."),
    ),
    "book": (
        (
            "Finish any good books lately? I need something new to read.",
            "{value}. I stayed up way too late with it, that ending!",
        ),
        ("What was that book you just finished?", "{value}! I can't stop thinking about it."),
    ),
    "family": (
        (
            "Isn't your {fam} coming to stay soon? Remind me of the name?",
            "{value}! Next month. I haven't seen {fobj} in ages.",
        ),
        ("How's your {fam} doing? I forget the name.", "{value}, and doing well! We talk almost every day."),
    ),
    "food": (
        (
            "Have you been making anything from scratch lately? You mentioned a dish.",
            "{value}! Three weekends in a row now, I think I've perfected it.",
        ),
        ("What's the dish you keep making from scratch?", "{value}. It actually turned out great last night."),
    ),
}

_FAMILY_PRONOUN = {
    "sister": "her",
    "mom": "her",
    "aunt": "her",
    "grandma": "her",
    "niece": "her",
    "brother": "him",
    "dad": "him",
    "uncle": "him",
    "nephew": "him",
    "cousin": "them",
}
_FAMILY = tuple(_FAMILY_PRONOUN)


def asked_turns(fact: Fact, rng: random.Random) -> tuple[str, str] | None:
    """The (other speaker's question, answer holding the value) pair of a single-hop or adversarial fact
    (``ASKED``), or None for the other categories."""
    if fact.category not in (4, 5) or fact.topic not in ASKED:
        return None
    ask, answer = rng.choice(ASKED[fact.topic])
    values = dict(fact.slots, value=fact.stmts[0].contains[0])
    if "fam" in values:
        values["fobj"] = _FAMILY_PRONOUN[values["fam"]]
    return ask.format(**values), answer.format(**values)


# the pools each slot draws from ({fam} and {fname} are drawn together)
_NEEDS = {
    "pet": (("pet", P.PETS), ("pname", P.PET_NAMES)),
    "class": (("cls", P.CLASSES),),
    "job": (("workplace", P.WORKPLACES),),
    "instrument": (("instrument", P.INSTRUMENTS),),
    "book": (("book", P.BOOKS),),
    "family": (),
    "food": (("food", P.FOODS),),
}


def _relative(d: Draw, who: int, options: tuple[str, ...]) -> tuple[str, str] | None:
    """A family relation of speaker ``who`` not yet named (claimed), and a name for that relative."""
    free = [f for f in options if f"fam:{f}:{who}" not in d.claimed]
    if not free:
        return None
    fam = d.pick(free)
    d.claim(f"fam:{fam}:{who}")
    pron = _FAMILY_PRONOUN[fam]
    return fam, d.one(P.OTHERS_SHE if pron == "her" else P.OTHERS_HE if pron == "him" else P.OTHERS_SHE + P.OTHERS_HE)


def _single(d: Draw, speakers: tuple[Speaker, Speaker], who: int, adversarial: bool) -> Fact | None:
    keys = (lambda s: (f"{s}:{who}", f"{s}:{1 - who}")) if adversarial else (lambda s: (f"{s}:{who}",))
    slots = [s for s in SINGLE if not set(keys(s)) & d.claimed]
    if not slots:
        return None
    slot = d.pick(slots)
    values = {}
    if slot == "family":
        rel = _relative(d, who, _FAMILY)
        if rel is None:
            return None
        values.update(fam=rel[0], fname=rel[1], fobj=_FAMILY_PRONOUN[rel[0]])
    d.claim(*keys(slot))
    for key, pool in _NEEDS[slot]:
        values[key] = d.one(pool)
    values["Poss"] = d.pick(("Her", "His"))
    stmts, question, answer, callback = SINGLE[slot]
    value = answer.format(**values)
    text = d.pick(stmts).format(**values)
    cb = (callback[0].format(**values), callback[1].format(**values)) if callback else None
    asked = speakers[1 - who] if adversarial else speakers[who]
    q = question.format(X=asked[0], xposs=asked[1], **values)
    stmt = Stmt(who, text, (value,), cb)
    slots = {k: values[k] for k in ("pet", "fam") if k in values}  # in the question, not the answer
    if adversarial:
        return Fact(5, [stmt], q, "", adversarial=value, topic=slot, slots=slots)
    return Fact(4, [stmt], q, value, topic=slot, slots=slots)


def single_hop(d: Draw, speakers: tuple[Speaker, Speaker], who: int) -> Fact | None:
    """Category 4: one speaker states a detail once; the question asks it back."""
    return _single(d, speakers, who, False)


def adversarial(d: Draw, speakers: tuple[Speaker, Speaker], who: int) -> Fact | None:
    """Category 5: one speaker states a detail; the question asks it about the OTHER speaker."""
    return _single(d, speakers, who, True)


_WHEN = (("today", 0), ("yesterday", 1), ("two days ago", 2), ("this morning", 0), ("last night", 1))
_TEMPORAL = (
    "Guess what, I {event} {when}! I'm still {feeling}.",
    "I {event} {when}. It was such a good day.",
    "So {when} I {event}, and honestly it was one of the best things I've done all year.",
)


def temporal(d: Draw, speakers: tuple[Speaker, Speaker], who: int) -> Fact | None:
    """Category 2: an event said on the day ("yesterday"); the answer is its date ("7 May 2023")."""
    free = [e for e in P.EVENTS if e[0] not in d.used]
    if not free:
        return None
    past, base = d.pick(free)
    d.used.add(past)
    name, poss = speakers[who]
    when, back = d.pick(_WHEN)
    event = past.format(poss="my")
    text = d.pick(_TEMPORAL).format(event=event, when=when, feeling=d.pick(P.FEELINGS))
    return Fact(
        2,
        [Stmt(who, text, (event, when))],
        f"When did {name} {base.format(poss=poss)}?",
        "",
        resolve=lambda times, back=back: long_date(times[0] - timedelta(days=back)),
        topic="event",
        slots={"base": base.format(poss="{their}")},
    )


_TRAITS = {
    "outdoors": (
        (
            "I spent the whole weekend camping by the lake, no phone signal at all.",
            "Went on a sunrise hike again this morning. Best way to start the day.",
        ),
        ("camping by the lake", "sunrise hike"),
        "Would {X} rather spend a vacation in the mountains or in a big city?",
        "The mountains; {xposs} weekends go to camping and sunrise hikes",
    ),
    "animals": (
        (
            "I've been volunteering at the animal shelter every Saturday.",
            "We're fostering two kittens until they find a home. They're chaos.",
        ),
        ("animal shelter", "fostering two kittens"),
        "Would {X} enjoy working at a vet clinic?",
        "Likely yes; {X} volunteers at an animal shelter and fosters kittens",
    ),
    "books": (
        (
            "I joined a book club that meets at the library every other Thursday.",
            "I reorganized my bookshelves by color and ran out of room again.",
        ),
        ("book club", "bookshelves"),
        "Would a bookstore gift card be a good present for {X}?",
        "Yes; {X} is in a book club and has overflowing bookshelves",
    ),
    "cooking": (
        (
            "I hosted a dinner party and cooked five courses. Totally worth the chaos.",
            "I've been taking knife skills lessons at a cooking school downtown.",
        ),
        ("five courses", "knife skills lessons"),
        "Would {X} enjoy a cooking-themed vacation?",
        "Probably yes; {X} hosts dinner parties and takes cooking lessons",
    ),
    "music": (
        (
            "I went to three concerts this month, my ears are still ringing.",
            "I've been making playlists for every mood, I have like forty now.",
        ),
        ("three concerts", "playlists"),
        "Is {X} likely to enjoy a music festival?",
        "Yes; {X} goes to lots of concerts and makes playlists for every mood",
    ),
    "art": (
        (
            "I've been sketching at the park every evening after work.",
            "I turned the spare room into a little painting studio.",
        ),
        ("sketching at the park", "painting studio"),
        "What kind of creative hobby might {X} pursue further?",
        "Visual art such as painting or drawing; {X} sketches daily and set up a painting studio",
    ),
}


def open_domain(d: Draw, speakers: tuple[Speaker, Speaker], who: int) -> Fact | None:
    """Category 3: two statements in two sessions imply a trait; the question asks for an inference."""
    free = [t for t in sorted(_TRAITS) if f"trait:{t}" not in d.claimed]
    if not free:
        return None
    trait = d.pick(free)
    d.claim(f"trait:{trait}")
    texts, keys, question, answer = _TRAITS[trait]
    name, poss = speakers[who]
    stmts = [Stmt(who, t, (k,)) for t, k in zip(texts, keys)]
    return Fact(3, stmts, question.format(X=name), answer.format(X=name, xposs=poss), topic=f"trait:{trait}")


def multi_hop(d: Draw, speakers: tuple[Speaker, Speaker], who: int) -> Fact | None:
    """Category 1: two statements in two sessions, combined (two trips, a shared hobby, a relative's news)."""
    name, poss = speakers[who]
    other = speakers[1 - who][0]
    kinds = [k for k in ("trips", "hobby", "relative") if f"multi:{k}:{who}" not in d.claimed]
    if not kinds:
        return None
    kind = d.pick(kinds)
    d.claim(f"multi:{kind}:{who}")
    if kind == "trips":
        a, b = d.one(P.PLACES), d.one(P.PLACES)
        stmts = [
            Stmt(
                who,
                f"Just got back from {a}! The food alone was worth the flight.",
                (a,),
                (f"Are you still dreaming about {a}?", "Every single day. I want to go back already."),
            ),
            Stmt(who, f"I'm writing to you from {b}, believe it or not. Last-minute work trip turned vacation.", (b,)),
        ]
        return Fact(1, stmts, f"Which two places did {name} travel to?", f"{a} and {b}", topic="trips")
    if kind == "hobby":
        h = d.one(P.HOBBIES)
        stmts = [
            Stmt(who, f"I've gotten really into {h} lately. It's the only thing that clears my head.", (h,)),
            Stmt(1 - who, f"Okay, you've converted me, I tried {h} this weekend and loved it!", (h,)),
        ]
        return Fact(1, stmts, f"What hobby do {name} and {other} both enjoy?", h, topic="hobby")
    rel = _relative(d, who, ("sister", "brother", "cousin"))
    if rel is None:
        return None
    fam, r = rel
    stmts = [
        Stmt(who, f"My {fam} {r} is visiting this week, so the house is loud again.", (fam, r)),
        Stmt(who, f"Big family news: {r} got engaged! We're all over the moon.", (r, "engaged")),
    ]
    return Fact(1, stmts, f"Who in {name}'s family got engaged?", f"{poss} {fam} {r}", topic="relative")


MAKERS: dict[int, Callable[[Draw, tuple[Speaker, Speaker], int], Fact | None]] = {
    1: multi_hop,
    2: temporal,
    3: open_domain,
    4: single_hop,
    5: adversarial,
}
# Category of question slot i: single-hop most often, as in LoCoMo (4 > 2 > 5 > 1 > 3).
CYCLE = (4, 2, 1, 4, 5, 2, 4, 3, 1, 5)
