"""knowledge-update facts (templates): a value stated, then changed in a later session; the answer is the new one.

``_ku`` claims one attribute not yet used in the history and calls its maker from
``_KU_MAKERS`` (abstention reuses them for its near-misses).
"""

from __future__ import annotations

from lazymem.data.synthetic.model import _a, _Draw, _Fact, _money, _Stmt
from lazymem.data.synthetic.pools import CAFES, CARS, CITIES, COMPANIES, JOBS, NAMES, PHONES


# --- knowledge-update: (old statement, new statement) about one attribute
def _ku(d: _Draw) -> _Fact | None:
    kinds = ["city", "job", "5k", "car", "gym", "rent", "phone", "plants", "goal", "cafe", "deadlift", "manager"]
    d.rng.shuffle(kinds)
    for kind in kinds:
        key = "rel:manager" if kind == "manager" else f"ku:{kind}"
        if key in d.claimed:
            continue
        d.claimed.add(key)
        return _KU_MAKERS[kind](d)
    return None


def _ku_fact(theme: str, old: tuple[str, str, str], new: tuple[str, str, str], question: str, answer: str) -> _Fact:
    return _Fact(
        "knowledge-update",
        [_Stmt(theme, old[0], old[1], (old[2],)), _Stmt(theme, new[0], new[1], (new[2],))],
        question,
        answer,
    )


def _ku_city(d):
    c1, c2 = d.one(CITIES), d.one(CITIES)
    return _ku_fact(
        "home",
        (
            f"I moved to {c1} a couple of months ago and still don't know many people here. What are good ways to "
            "meet people in a new city?",
            "Join a club built around something you already enjoy, like a running group, a climbing gym or a "
            "volunteer shift, and say yes to invitations early on.",
            c1,
        ),
        (
            f"Update on my life: I just relocated from {c1} to {c2}. Can you help me make a checklist for the first "
            "week after a move?",
            "Of course. Set up utilities and internet, update your address with your bank and employer, find a "
            "local doctor, and unpack the kitchen first so you can cook.",
            c2,
        ),
        "Which city do I live in now?",
        c2,
    )


def _ku_job(d):
    j1, j2, company = d.one(JOBS), d.one(JOBS), d.one(COMPANIES)
    return _ku_fact(
        "work",
        (
            f"I work as {_a(j1)} {j1} at {company}, and my days are packed with meetings. How can I protect time for deep "
            "work?",
            "Block two mornings a week on your calendar, decline meetings without an agenda, and batch your "
            "messages into a few fixed times.",
            j1,
        ),
        (
            f"Big change at work: I switched roles and I'm now {_a(j2)} {j2}. Any advice for my first month in a new "
            "position?",
            "Listen more than you talk, ask each teammate what they wish the last person had done differently, and "
            "pick one small early win.",
            j2,
        ),
        "What is my current job title?",
        j2,
    )


def _ku_5k(d):
    t1 = d.rng.randint(22 * 60, 32 * 60)
    t2 = t1 - d.rng.randint(15, 120)
    mmss = lambda t: f"{t // 60}:{t % 60:02d}"  # noqa: E731
    return _ku_fact(
        "fitness",
        (
            f"My 5K personal best is {mmss(t1)}, and I'd love to get faster this season. What kind of interval "
            "workouts would help?",
            "Try 400-meter repeats at goal pace with equal rest, plus one tempo run a week.",
            mmss(t1),
        ),
        (
            f"I ran a new 5K personal best this morning: {mmss(t2)}! How should I recover before my next hard workout?",
            "Congratulations! Take an easy day or two, stretch, and refuel with carbohydrates and protein.",
            mmss(t2),
        ),
        "What is my current 5K personal best?",
        mmss(t2),
    )


def _ku_car(d):
    c1, c2 = d.one(CARS), d.one(CARS)
    return _ku_fact(
        "money",
        (
            f"I drive a {c1}, and the check engine light just came on. Is it safe to keep driving for a few days?",
            "If it's steady rather than flashing, it's usually safe for a short while, but get the code read soon.",
            c1,
        ),
        (
            f"I finally traded in my {c1} and bought a {c2}. What maintenance should I keep track of with a new car?",
            "Oil changes, tire rotations and the first scheduled service; the manual lists the intervals.",
            c2,
        ),
        "What car do I drive now?",
        c2,
    )


def _ku_gym(d):
    n1 = d.rng.randint(2, 5)
    n2 = d.pick([n for n in range(2, 7) if n != n1])
    return _ku_fact(
        "fitness",
        (
            f"I'm going to the gym {n1} times a week right now. How should I split my workouts across those days?",
            "Alternate upper- and lower-body days, and keep one day lighter if you feel run down.",
            f"{n1} times a week",
        ),
        (
            f"I've changed my routine and I'm now going to the gym {n2} times a week. Can you help me rebalance my "
            "plan?",
            "Sure. Spread the hardest sessions apart and make sure each muscle group gets a rest day.",
            f"{n2} times a week",
        ),
        "How many times a week do I go to the gym now?",
        f"{n2} times a week",
    )


def _ku_rent(d):
    r1 = d.rng.randrange(1200, 2800, 50)
    r2 = r1 + d.rng.randrange(50, 325, 25)
    return _ku_fact(
        "money",
        (
            f"My rent is {_money(r1)} a month, which is about a third of my take-home pay. Is that a reasonable ratio?",
            "A third is right at the common guideline, so you're in a reasonable spot.",
            _money(r1),
        ),
        (
            f"My landlord just raised my rent to {_money(r2)} a month. Should I try to negotiate or start looking "
            "elsewhere?",
            "It's worth asking; landlords often prefer a reliable tenant to a vacancy. Check local prices first.",
            _money(r2),
        ),
        "How much is my monthly rent now?",
        _money(r2),
    )


def _ku_phone(d):
    p1, p2 = d.one(PHONES), d.one(PHONES)
    return _ku_fact(
        "tech",
        (
            f"I'm using {_a(p1)} {p1} and the battery barely lasts until dinner. Any settings I should change?",
            "Lower the screen brightness, turn off background refresh for apps you rarely use, and check which app "
            "is using the most battery.",
            p1,
        ),
        (
            f"I gave up on my {p1} and upgraded to {_a(p2)} {p2}. What's the best way to move my photos and messages "
            "over?",
            "Use the built-in transfer tool during setup; it moves photos, messages and apps in one go.",
            p2,
        ),
        "What phone do I use now?",
        p2,
    )


def _ku_plants(d):
    n1 = d.rng.randint(4, 15)
    n2 = n1 + d.rng.randint(2, 9)
    return _ku_fact(
        "home",
        (
            f"I have {n1} houseplants in my apartment, and a few of them have yellow leaves. What am I doing wrong?",
            "Yellow leaves usually mean too much water. Let the soil dry out more between waterings.",
            f"{n1} houseplants",
        ),
        (
            f"My plant collection got out of hand: I'm up to {n2} houseplants now. Any tips for a watering schedule "
            "that scales?",
            "Group plants by how thirsty they are and check each group on a fixed day of the week.",
            f"{n2} houseplants",
        ),
        "How many houseplants do I have now?",
        str(n2),
    )


def _ku_goal(d):
    n1 = d.rng.randint(12, 30)
    n2 = n1 + d.rng.randint(5, 20)
    return _ku_fact(
        "books",
        (
            f"My reading goal for this year is {n1} books. How can I make sure I actually hit it?",
            "Always have the next book lined up, and read a few pages at the same time every day.",
            f"{n1} books",
        ),
        (
            f"I'm ahead of schedule, so I raised my reading goal to {n2} books this year. Can you suggest a way to "
            "track my progress?",
            "A simple spreadsheet or a reading app with a yearly challenge works well.",
            f"{n2} books",
        ),
        "What is my current reading goal for the year?",
        f"{n2} books",
    )


def _ku_cafe(d):
    s1, s2 = d.one(CAFES), d.one(CAFES)
    return _ku_fact(
        "work",
        (
            f"My go-to coffee shop is {s1}; I work from there most Fridays. How can I be a considerate laptop "
            "customer?",
            "Buy something every couple of hours, avoid the big tables at lunch, and use headphones.",
            s1,
        ),
        (
            f"{s1} closed, so my new go-to coffee shop is {s2}. Any tips for staying focused when working from a cafe?",
            "Pick a seat facing a wall, set a timer for focused blocks, and leave your phone in your bag.",
            s2,
        ),
        "What is my go-to coffee shop now?",
        s2,
    )


def _ku_deadlift(d):
    w1 = d.rng.randrange(135, 320, 5)
    w2 = w1 + d.rng.randrange(10, 45, 5)
    return _ku_fact(
        "fitness",
        (
            f"My deadlift max is {w1} pounds right now. How often should I test my one-rep max?",
            "Every eight to twelve weeks is plenty; test more often and you mostly just accumulate fatigue.",
            f"{w1} pounds",
        ),
        (
            f"I hit a new deadlift max today: {w2} pounds! How should I adjust my training percentages?",
            "Recalculate your working sets from the new max, but ease in over a week or two.",
            f"{w2} pounds",
        ),
        "What is my current deadlift max?",
        f"{w2} pounds",
    )


def _ku_manager(d):
    n1, n2 = d.one(NAMES), d.one(NAMES)
    return _ku_fact(
        "work",
        (
            f"My manager, {n1}, wants weekly status updates. What's a good format for them?",
            "Three short sections work well: done this week, planned next week, and anything blocked.",
            n1,
        ),
        (
            f"There was a reorg at work and I now report to a new manager, {n2}. How do I start off on the right foot?",
            "Ask how they like to communicate, share your current priorities, and agree on a regular check-in.",
            n2,
        ),
        "What is my current manager's name?",
        n2,
    )


_KU_MAKERS = {
    "city": _ku_city,
    "job": _ku_job,
    "5k": _ku_5k,
    "car": _ku_car,
    "gym": _ku_gym,
    "rent": _ku_rent,
    "phone": _ku_phone,
    "plants": _ku_plants,
    "goal": _ku_goal,
    "cafe": _ku_cafe,
    "deadlift": _ku_deadlift,
    "manager": _ku_manager,
}
