"""Long turns for training data (spec key ``long``): LongMemEval_S-like answers of hundreds of
words (an intro, numbered steps or bullet points, a closing paragraph).

``lengthen`` rewrites a generated history in place with its own ``random.Random`` (so the
plain data set of a seed is unchanged, byte for byte). Turns are chosen at random,
distractors and planted ones alike (so length is never a clue); each keeps its text verbatim
as the first paragraph and gains text built from the templates below, so evidence strings
stay verbatim in their turns. The added text is topic-neutral: nothing in it states a fact
about the user.

- ``long=1`` (v2's training data): about ``SHARE`` of the assistant turns gain 3-``MAX_ITEMS``
  list items (~100-280 words); user turns are unchanged.
- ``long=2`` (real lengths): about ``SHARE_2`` of the assistant turns gain a list whose length
  follows LongMemEval_S's assistant turns (median ~310 words, p90 ~480, up to ~660); about
  ``USER_SHARE_2`` of the user turns gain one to four sentences of context and
  ``USER_PASTE_2`` of them a pasted note of ~150-300 words (LongMemEval_S users: median 35
  words, p90 67, p99 ~250). ``docs/results/message_lengths/lengths.md`` sets them side by side.

>>> import random
>>> turns = [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there."}]]
>>> lengthen(random.Random(0), turns, share=1.0)
>>> turns[0][1]["content"].startswith("Hello there."), len(turns[0][1]["content"].split()) > 80
(True, True)
"""

from __future__ import annotations

import random

SHARE = 0.5  # long=1: share of assistant turns made long
MAX_ITEMS = 7  # long=1: list items at most: keeps a long turn under ~350 words
SHARE_2 = 0.92  # long=2: share of assistant turns made long
ITEMS_2 = (9.5, 4.5, 3)  # long=2: list items ~ round(gauss(mean, sd)), at least the minimum, at most len(ITEMS_ALL)
USER_SHARE_2 = 0.75  # long=2: share of user turns that gain context sentences
USER_PASTE_2 = 0.03  # long=2: share of user turns that gain a pasted note
LEVELS = (1, 2)

INTROS = (
    "Here's a more detailed breakdown so you can pick what fits your situation:",
    "If it helps, here is how I would approach it step by step:",
    "A few things are worth keeping in mind here:",
    "Let me expand on that a bit, since there are several moving parts:",
    "To make this easier to act on, here is a short plan:",
)
ITEMS = (
    (
        "Start with what you already have",
        "Take stock of the resources, time and budget you can realistically "
        "commit before buying or booking anything new. It is easy to overspend on a fresh start.",
    ),
    (
        "Set a simple goal",
        "Pick one concrete outcome for the next two to four weeks, write it down, and check in "
        "on it once a week rather than every day.",
    ),
    (
        "Keep a short list",
        "Write the three most important tasks on a sticky note or in your phone. A short list "
        "gets done; a long one mostly gets rewritten.",
    ),
    (
        "Ask someone who has done it",
        "A friend, a coworker or an online community can save you hours. People are "
        "usually happy to share what worked and what they would skip next time.",
    ),
    (
        "Budget a little slack",
        "Plans rarely go exactly as expected, so leave about ten to twenty percent of your "
        "time and money unassigned for surprises.",
    ),
    (
        "Compare two or three options",
        "Read recent reviews, look at the return or cancellation policy, and compare "
        "total cost rather than the headline price.",
    ),
    (
        "Build a routine",
        "Doing something at the same time each day makes it much easier to keep going once the "
        "initial excitement wears off.",
    ),
    (
        "Track what happens",
        "A simple note with the date and a sentence or two is enough. After a few weeks you "
        "will see patterns you would otherwise miss.",
    ),
    (
        "Mind the timing",
        "Seasons, holidays and weekday versus weekend can change prices, crowds and availability "
        "a lot, so check the calendar before you commit.",
    ),
    (
        "Take care of the basics",
        "Sleep, water and regular meals make every other part of a plan easier, and "
        "they are the first things to slip when life gets busy.",
    ),
    (
        "Prepare the night before",
        "Lay out what you need, charge your devices and check directions or opening "
        "hours, so the morning starts without a scramble.",
    ),
    (
        "Keep it enjoyable",
        "If a step feels like a chore every single time, look for a version of it you actually "
        "like; consistency matters more than intensity.",
    ),
    (
        "Know when to get help",
        "If something involves health, money or legal questions, a short consultation "
        "with a professional is usually worth it.",
    ),
    (
        "Review and adjust",
        "After a couple of weeks, look back at what worked and drop whatever did not. Small changes add up.",
    ),
)
MORE_ITEMS = (
    (
        "Write down the why",
        "A sentence about why this matters to you is surprisingly useful on the days when "
        "motivation is low and the original reason feels far away.",
    ),
    (
        "Start earlier than you think",
        "Most things take longer than planned, especially the first time, so give "
        "yourself a head start instead of relying on a last-minute push.",
    ),
    (
        "Keep the costs visible",
        "A quick running total in a note or spreadsheet stops small purchases from "
        "quietly adding up to something much larger than you intended.",
    ),
    (
        "Try a small test first",
        "Before committing fully, do a short trial run. It tells you more than hours of "
        "research and costs very little if it does not work out.",
    ),
    (
        "Protect your time",
        "Block the time in your calendar as if it were an appointment with someone else; "
        "it is much easier to keep a commitment that already has a slot.",
    ),
    (
        "Reduce friction",
        "Put what you need where you will see it and remove one or two obstacles up front, so "
        "the easy choice and the right choice are the same.",
    ),
    (
        "Check the fine print",
        "Terms such as delivery windows, deposits, warranties and cancellation fees are "
        "where most unpleasant surprises hide.",
    ),
    (
        "Plan for a bad day",
        "Decide in advance what the minimum version looks like, so a busy or tiring day "
        "does not undo the progress you have made.",
    ),
    (
        "Share the plan",
        "Telling one person what you intend to do adds a little accountability, and they may "
        "spot something you missed.",
    ),
    (
        "Celebrate small wins",
        "Noticing progress, even modest progress, makes it far more likely that you will "
        "keep going through the slower stretches.",
    ),
    (
        "Keep a backup option",
        "Have a second choice ready in case the first falls through; it takes the "
        "pressure off and usually costs nothing to prepare.",
    ),
    (
        "Stay flexible",
        "If circumstances change, it is fine to change the plan with them. The goal matters more "
        "than sticking to the exact steps you started with.",
    ),
)
ITEMS_ALL = ITEMS + MORE_ITEMS
USER_CONTEXT = (
    "I've been going back and forth on this for a few days now, so any input helps.",
    "Sorry if this is a bit of a ramble, I'm trying to get my thoughts in order.",
    "I read a couple of articles about it but they mostly contradicted each other.",
    "No rush on this, I'm just trying to plan ahead a little better than usual.",
    "Honestly I'm not sure where to start, so a rough outline would already be great.",
    "I'd rather keep things simple if possible, I don't have a lot of spare time lately.",
    "Feel free to be blunt if you think I'm overcomplicating it.",
    "I asked around a bit but everyone seems to have a different opinion on this.",
    "It's not urgent, but it has been on my mind for a while.",
    "I want to get this right the first time instead of redoing it later.",
    "Any tips or common mistakes to avoid would be really helpful.",
    "I'm open to suggestions, even ones that are a bit outside the box.",
)
PASTE_INTROS = (
    "For context, here are the notes I jotted down earlier, copied as they are:",
    "Here's what I have written so far, pasted below:",
    "I found this checklist somewhere and saved it, what do you think of it?",
)
CLOSINGS = (
    "None of this has to happen all at once. Pick the one or two points that feel most useful right now and "
    "come back to the rest later.",
    "I hope that helps! If you tell me a bit more about your situation, I can tailor these suggestions further.",
    "In short: start small, stay consistent and adjust as you learn. Let me know how it goes.",
    "Every situation is a little different, so treat this as a starting point rather than a rulebook. Happy to "
    "go deeper on any of these.",
)


def long_answer(rng: random.Random, text: str) -> str:
    """``text`` verbatim, then an intro, 3-``MAX_ITEMS`` numbered or bulleted items, and a closing.

    >>> out = long_answer(random.Random(1), "Short answer.")
    >>> out.startswith("Short answer.\\n\\n"), out.count("\\n\\n") >= 3
    (True, True)
    """
    return _with_list(rng, text, rng.sample(ITEMS, rng.randint(3, MAX_ITEMS)))


def _with_list(rng: random.Random, text: str, items) -> str:
    """``text``, an intro, ``items`` numbered or bulleted, a closing (the draws in the order v2's data used)."""
    numbered = rng.random() < 0.6
    lines = [
        f"{i}. **{head}.** {body}" if numbered else f"- **{head}:** {body}"
        for i, (head, body) in enumerate(items, start=1)
    ]
    return "\n\n".join([text, rng.choice(INTROS), "\n".join(lines), rng.choice(CLOSINGS)])


def long_answer_2(rng: random.Random, text: str) -> str:
    """``long=2``: ``text`` verbatim, an intro, a LongMemEval_S-sized list (``ITEMS_2``) and a closing.

    >>> words = [len(long_answer_2(random.Random(i), "Short answer.").split()) for i in range(200)]
    >>> 250 < sorted(words)[100] < 380, max(words) > 550
    (True, True)
    """
    mean, sd, least = ITEMS_2
    k = min(len(ITEMS_ALL), max(least, round(rng.gauss(mean, sd))))
    return _with_list(rng, text, rng.sample(ITEMS_ALL, k))


def long_question(rng: random.Random, text: str) -> str:
    """``long=2``: a user turn with its text verbatim first, then context sentences or (rarely) a pasted note.

    >>> long_question(random.Random(3), "Any ideas for a picnic?").startswith("Any ideas for a picnic? ")
    True
    """
    if rng.random() < USER_PASTE_2 / USER_SHARE_2:
        notes = [f"- {head}: {body}" for head, body in rng.sample(ITEMS_ALL, rng.randint(4, 8))]
        return "\n\n".join([text, rng.choice(PASTE_INTROS), "\n".join(notes)])
    return " ".join([text, *rng.sample(USER_CONTEXT, rng.randint(1, 4))])


def lengthen(rng: random.Random, sessions: list[list[dict]], share: float = SHARE, level: int = 1) -> None:
    """Make turns long, in place (their text kept as the first paragraph): ``level`` 1 or 2 (see the module).

    Level 1 draws exactly as it always has (v2's training data stays byte-identical).
    """
    if level not in LEVELS:
        raise ValueError(f"long must be one of {LEVELS}, got {level!r}")
    for session in sessions:
        for turn in session:
            if level == 1:
                if turn["role"] == "assistant" and rng.random() < share:
                    turn["content"] = long_answer(rng, turn["content"])
            elif turn["role"] == "assistant":
                if rng.random() < SHARE_2:
                    turn["content"] = long_answer_2(rng, turn["content"])
            elif rng.random() < USER_SHARE_2:
                turn["content"] = long_question(rng, turn["content"])
