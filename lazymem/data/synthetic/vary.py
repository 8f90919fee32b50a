"""Surface variety for training data (spec key ``varied=1``): paraphrased questions, varied turn
openings, and hard-negative turns that share the question's topic but not its answer.

A model trained on the plain generator could learn its templates (each fact has three
phrasings, each question one). ``vary`` rewrites a generated history in place, with its own
``random.Random`` (so the plain data set of a seed is unchanged, byte for byte):

- every question gets one of several paraphrase frames ("Remind me: what ...", "... Do you
  remember?"), the answer unchanged;
- about a third of the user turns (evidence and distractors alike, so an opening is never a
  clue) start with a casual opener ("Hey! ", "Okay, so ");
- for each question, one to three distractor user turns in other sessions get a sentence that
  names the question's topic ("my sister", "my dog") about someone else or without the value:
  hard negatives that share words with the query but carry no answer. Evidence turns, and the
  sessions that hold evidence, are never touched by this step, and no value (name, city,
  price, date) is written into a distractor, so nothing contradicts a fact.

Template text apart from logic is kept short here: the frames and sentences below are data.

>>> frame_question("What is my sister's name?", 1)
"Remind me, what is my sister's name?"
>>> question_topic("What is the name of my golden retriever?"), question_topic("Where did I buy my Pixel 8?")
('golden retriever', 'pixel 8')
>>> question_topic("How many days passed between the day I ran my first 10k and today?")
'first 10k'
"""

from __future__ import annotations

import random
import re

# {q}: the question with a lower-case first letter; {Q}: as written.
QUESTION_FRAMES = (
    "{Q}",
    "Remind me, {q}",
    "Quick question: {q}",
    "{Q} I can't remember.",
    "Do you remember this? {Q}",
    "I forgot. {Q}",
    "Can you check for me: {q}",
    "{Q} I think I mentioned it before.",
    "Hey, {q}",
    "One thing I need to know: {q}",
)
OPENERS = (
    "Hey! ",
    "Hi again. ",
    "Okay, so ",
    "Quick one: ",
    "Morning! ",
    "So, ",
    "Random thought: ",
    "Back again. ",
    "Hmm, ",
    "Good evening! ",
    "Alright, ",
    "Question for you. ",
)
# {topic}: the question's topic ("sister", "golden retriever", "first yoga class").
HARD_NEGATIVES = (
    "My friend keeps telling me about her {topic}, which reminded me of this.",
    "A coworker asked me about my {topic} today, but we got distracted.",
    "I was reading an article about someone's {topic} earlier.",
    "My neighbor has been going on about his {topic} all week.",
    "Not related to my {topic} at all, by the way.",
    "I'll tell you about my {topic} some other time.",
    "Someone in my group chat posted about their {topic} this morning.",
    "This has nothing to do with my {topic}, just so you know.",
)
_TOPIC = re.compile(
    r"\bmy ((?:[a-z0-9-]+ ){0,2}?[a-z0-9-]+?)(?:'s\b|\?|,|\.| (?:is|was|were|are|and|or|did|do|does|"
    r"have|has|had|for|in|at|on|from|to|cost|called|named|live|work|go|take|get|buy|start|"
    r"today|last|this)\b)",
    re.IGNORECASE,
)
_HOPS_P = (0.2, 0.5, 0.3)  # how many distractor turns get a hard negative: 1, 2 or 3


def frame_question(question: str, k: int) -> str:
    """The question in paraphrase frame ``k`` (0 = unchanged)."""
    q = question[:1].lower() + question[1:] if question[:2] != "I " else question
    return QUESTION_FRAMES[k % len(QUESTION_FRAMES)].format(Q=question, q=q)


def question_topic(question: str) -> str | None:
    """The noun phrase after the question's first "my" (lower case), or None."""
    m = _TOPIC.search(question)
    return m.group(1).lower() if m else None


def vary(
    rng: random.Random,
    sessions: list[list[dict]],
    questions: list[str],
    evidence: list[list[tuple[int, int, tuple[str, ...]]]],
) -> list[str]:
    """Rewrite ``sessions`` in place (openers, hard negatives) and return the paraphrased questions.

    ``evidence[i]`` lists question i's gold turns as (session, turn, contains) tuples.
    """
    gold = {(s, t) for ev in evidence for s, t, _ in ev}
    gold_sessions = {s for ev in evidence for s, _, _ in ev}
    for turns in sessions:
        for turn in turns:
            if turn["role"] == "user" and rng.random() < 1 / 3:
                turn["content"] = rng.choice(OPENERS) + turn["content"]
    free = [
        (s, t)
        for s, turns in enumerate(sessions)
        if s not in gold_sessions
        for t, turn in enumerate(turns)
        if turn["role"] == "user" and (s, t) not in gold
    ]
    out = []
    for question, _ev in zip(questions, evidence):
        out.append(frame_question(question, rng.randrange(len(QUESTION_FRAMES))))
        topic = question_topic(question)
        if topic is None or not free:
            continue
        hops = rng.choices((1, 2, 3), weights=_HOPS_P)[0]
        for s, t in rng.sample(free, min(hops, len(free))):
            sessions[s][t]["content"] += " " + rng.choice(HARD_NEGATIVES).format(topic=topic)
    return out
