"""Long assistant turns for training data (spec key ``long=1``): LongMemEval_S-like answers of
hundreds of words (an intro, numbered steps or bullet points, a closing paragraph).

``lengthen`` rewrites a generated history in place with its own ``random.Random`` (so the
plain data set of a seed is unchanged, byte for byte): about ``SHARE`` of the assistant
turns, distractors and planted ones alike (so length is never a clue), keep their text
verbatim as the first paragraph and gain a list and a closing built from the templates below.
Evidence strings therefore stay verbatim in their turns. The list items are topic-neutral
advice; nothing in them states a fact about the user.

>>> import random
>>> turns = [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there."}]]
>>> lengthen(random.Random(0), turns, share=1.0)
>>> turns[0][1]["content"].startswith("Hello there."), len(turns[0][1]["content"].split()) > 80
(True, True)
"""
from __future__ import annotations

import random

SHARE = 0.5  # share of assistant turns made long
MAX_ITEMS = 7  # list items at most: keeps a long turn under ~350 words

INTROS = (
    "Here's a more detailed breakdown so you can pick what fits your situation:",
    "If it helps, here is how I would approach it step by step:",
    "A few things are worth keeping in mind here:",
    "Let me expand on that a bit, since there are several moving parts:",
    "To make this easier to act on, here is a short plan:",
)
ITEMS = (
    ("Start with what you already have", "Take stock of the resources, time and budget you can realistically "
     "commit before buying or booking anything new. It is easy to overspend on a fresh start."),
    ("Set a simple goal", "Pick one concrete outcome for the next two to four weeks, write it down, and check in "
     "on it once a week rather than every day."),
    ("Keep a short list", "Write the three most important tasks on a sticky note or in your phone. A short list "
     "gets done; a long one mostly gets rewritten."),
    ("Ask someone who has done it", "A friend, a coworker or an online community can save you hours. People are "
     "usually happy to share what worked and what they would skip next time."),
    ("Budget a little slack", "Plans rarely go exactly as expected, so leave about ten to twenty percent of your "
     "time and money unassigned for surprises."),
    ("Compare two or three options", "Read recent reviews, look at the return or cancellation policy, and compare "
     "total cost rather than the headline price."),
    ("Build a routine", "Doing something at the same time each day makes it much easier to keep going once the "
     "initial excitement wears off."),
    ("Track what happens", "A simple note with the date and a sentence or two is enough. After a few weeks you "
     "will see patterns you would otherwise miss."),
    ("Mind the timing", "Seasons, holidays and weekday versus weekend can change prices, crowds and availability "
     "a lot, so check the calendar before you commit."),
    ("Take care of the basics", "Sleep, water and regular meals make every other part of a plan easier, and "
     "they are the first things to slip when life gets busy."),
    ("Prepare the night before", "Lay out what you need, charge your devices and check directions or opening "
     "hours, so the morning starts without a scramble."),
    ("Keep it enjoyable", "If a step feels like a chore every single time, look for a version of it you actually "
     "like; consistency matters more than intensity."),
    ("Know when to get help", "If something involves health, money or legal questions, a short consultation "
     "with a professional is usually worth it."),
    ("Review and adjust", "After a couple of weeks, look back at what worked and drop whatever did not. "
     "Small changes add up."),
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
    items = rng.sample(ITEMS, rng.randint(3, MAX_ITEMS))
    numbered = rng.random() < 0.6
    lines = [f"{i}. **{head}.** {body}" if numbered else f"- **{head}:** {body}"
             for i, (head, body) in enumerate(items, start=1)]
    return "\n\n".join([text, rng.choice(INTROS), "\n".join(lines), rng.choice(CLOSINGS)])


def lengthen(rng: random.Random, sessions: list[list[dict]], share: float = SHARE) -> None:
    """Make about ``share`` of the assistant turns long, in place (their text kept as the first paragraph)."""
    for session in sessions:
        for turn in session:
            if turn["role"] == "assistant" and rng.random() < share:
                turn["content"] = long_answer(rng, turn["content"])
