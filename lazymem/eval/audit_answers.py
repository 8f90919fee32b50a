"""The judge audit's test set: candidate answers of five kinds for a question, built without a model.

``candidates(question, pool)`` gives the golden answer and ``per_kind`` of each other kind; every
choice is seeded by the seed and the question id, so the test set is the same on every run and
machine (``lazymem judge-audit``, ``lazymem.eval.judge_audit``, judges them).

====================  ==============================================================================
kind                  templates (``{answer}``: the gold answer without its final full stop)
====================  ==============================================================================
golden (a)            ``{answer}`` verbatim
paraphrase (b)        ``It was {answer}.`` / ``The answer is {answer}.`` / ``{answer}`` lower-cased /
                      ``{answer}!`` / ``From the conversation: {answer}.`` / ``"{answer}"`` (inside a
                      sentence an answer opening with a function word is lower-cased at its first
                      letter: "It was his old Prius."; one that reads exactly as the gold is left out)
vague (c)             ``Something related to {topic}.`` / ``{subject} did several things around that
                      time.`` / ``{subject} mentioned {topic} a few times, but the details are
                      unclear.`` / ``It depends; {topic} came up more than once.`` / ``Mostly things
                      about {topic}, in general.``
specific (d)          the gold answer of another selected question of the same type (LoCoMo
                      category), and the gold answer with its first number moved by 2-4 (never 1:
                      LongMemEval's judge forgives off-by-one day counts), else its first month name
                      moved by one; the moved answer comes first for temporal questions, last for others
abstain (e)           ``I don't know.`` / the empty answer
====================  ==============================================================================

``{topic}``: the last three content words of the question as written (no stop words, no question or
auxiliary words, not the subject) that share no stem with the gold answer, or "that";
``{subject}``: "You" for a question in the first person, else the first capitalised word after the
question's first word (a LoCoMo speaker), else "They". Wrong by construction: a vague candidate that
shares a content word with the gold answer, another question's answer that normalises to the gold
answer or whose content words hold all of the gold answer's or are all among them (a partial answer:
"Prius" for "new Prius"), and any wrong candidate (c, d, e) whose normalised words contain the gold
answer's in order are left out.

>>> q = Question("conv-1:q1", "temporal", "When did Evan buy a bike in Lisbon?", "7 May 2023", "h", category=2)
>>> for c in candidates(q, {"temporal": ["7 May 2023", "June 2022"]}, per_kind=1):
...     print(f"{c.kind:10} {c.template:14} {c.text!r}")
golden     gold           '7 May 2023'
paraphrase answer_is      'The answer is 7 May 2023.'
vague      depends        'It depends; buy bike Lisbon came up more than once.'
specific   shifted        '11 May 2023'
abstain    dont_know      "I don't know."
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lazymem.answers import normalize_answer
from lazymem.records import Question
from lazymem.text import STOPWORDS, crude_stem, tokenize

RIGHT_KINDS = ("golden", "paraphrase")
WRONG_KINDS = ("vague", "specific", "abstain")
KINDS = RIGHT_KINDS + WRONG_KINDS
PARAPHRASES = {
    "it_was": "It was {inner}.",
    "answer_is": "The answer is {inner}.",
    "lower": "{lower}",
    "exclaimed": "{answer}!",
    "from_conversation": "From the conversation: {inner}.",
    "quoted": '"{answer}"',
}
VAGUE = {
    "related": "Something related to {topic}.",
    "several_things": "{subject} did several things around that time.",
    "mentioned": "{subject} mentioned {topic} a few times, but the details are unclear.",
    "depends": "It depends; {topic} came up more than once.",
    "in_general": "Mostly things about {topic}, in general.",
}
ABSTAIN = {"dont_know": "I don't know.", "empty": ""}
# Question and auxiliary words that carry no topic (beside lazymem.text.STOPWORDS).
_GENERIC = frozenset(
    "many much long often kind kinds type types sort time times thing things date day year ago get got go went "
    "make made take took say "
    "said tell told think like would could might likely".split()
)
_MONTHS = "January February March April May June July August September October November December".split()
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Candidate:
    """One candidate answer to a question: its kind (``KINDS``), template name and text."""

    kind: str
    template: str
    text: str


def _stems(text: str) -> set[str]:
    return {crude_stem(w) for w in tokenize(text)}


def _contains(haystack: str, needle: str) -> bool:
    """Whether ``needle``'s normalised words occur, in order and adjacent, in ``haystack``'s.

    >>> _contains("It was 14 days.", "14 days"), _contains("114 days", "14 days")
    (True, False)
    """
    h, n = normalize_answer(haystack).split(), normalize_answer(needle).split()
    return bool(n) and any(h[i : i + len(n)] == n for i in range(len(h) - len(n) + 1))


def topic_words(question: Question, most: int = 3) -> list[str]:
    """The question's last ``most`` content words, as written, that share no stem with its gold answer
    and are not its subject (``subject_of``).

    >>> topic_words(Question("q", "t", "How many days passed before my half marathon?", "14 days", "h"))
    ['passed', 'half', 'marathon']
    """
    gold, subject = _stems(question.answer), subject_of(question)
    words = [
        w
        for w in _WORD.findall(question.text)
        if w.lower() not in STOPWORDS and w.lower() not in _GENERIC and crude_stem(w.lower()) not in gold
    ]
    return [w for w in dict.fromkeys(words) if w != subject][-most:]


def subject_of(question: Question) -> str:
    """Who the question is about: "You" for a first-person question, else its first capitalised word
    after the first that is not in the answer (a LoCoMo speaker), else "They".

    >>> subject_of(Question("q", "t", "When did Caroline go hiking?", "May", "h", category=2))
    'Caroline'
    """
    if re.search(r"\b(I|my|me|mine)\b", question.text):
        return "You"
    gold = _stems(question.answer)
    for w in re.findall(r"[A-Za-z][\w'-]*", question.text)[1:]:
        if w[0].isupper() and crude_stem(w.lower()) not in gold:
            return w
    return "They"


def shifted(answer: str, rng: random.Random) -> str | None:
    """The answer with its first number moved by 2-4 (down when that would pass 28 for a day of the
    month), else its first month name moved by one; None when it has neither.

    >>> shifted("14 days", random.Random(0)), shifted("in May", random.Random(0)), shifted("Lisbon", random.Random(0))
    ('17 days', 'in June', None)
    """
    m = _NUMBER.search(answer)
    if m:
        n, delta = int(m.group()), rng.choice((2, 3, 4))
        new = n - delta if 28 < n + delta and n <= 31 and n > delta else n + delta
        return answer[: m.start()] + str(new) + answer[m.end() :]
    m = _MONTH.search(answer)
    if m:
        month = _MONTHS[(_MONTHS.index(m.group()) + 1) % 12]
        return answer[: m.start()] + month + answer[m.end() :]
    return None


def _nested(a: set[str], b: set[str]) -> bool:
    """Whether one non-empty set of stems holds the other ("Prius" and "new Prius": a partial answer)."""
    return bool(a and b) and (a <= b or b <= a)


def _is_temporal(question: Question) -> bool:
    return question.type in ("temporal", "temporal-reasoning")


def _specific(question: Question, pool: Sequence[str], rng: random.Random) -> list[Candidate]:
    """Kind d: the shifted answer (first for temporal questions) and other questions' answers, shuffled."""
    gold, same = _stems(question.answer), normalize_answer(question.answer)
    others = sorted({a for a in pool if normalize_answer(a) not in ("", same) and not _nested(gold, _stems(a))})
    rng.shuffle(others)
    out = [Candidate("specific", "other_answer", a) for a in others]
    moved = shifted(question.answer, rng)
    if moved is not None:
        c = Candidate("specific", "shifted", moved)
        out = [c, *out] if _is_temporal(question) else [*out, c]
    return out


def candidates(question: Question, pool: Mapping[str, Sequence[str]], per_kind: int = 2, seed: int = 0) -> list:
    """The candidate answers of one question: the golden answer, then ``per_kind`` of each other kind.

    ``pool``: question type -> the gold answers of the selected questions of that type (kind d).
    """
    rng = random.Random(f"judge-audit:{seed}:{question.id}")
    gold = str(question.answer)
    bare = gold.strip().rstrip(".")
    first = bare.split(" ", 1)[0]
    inner = bare[:1].lower() + bare[1:] if first.lower() in STOPWORDS else bare  # "His old Prius" -> "his old Prius"
    topic = " ".join(topic_words(question)) or "that"
    subject = subject_of(question)

    def fill(template: str) -> str:
        return template.format(answer=bare, inner=inner, lower=bare.lower(), topic=topic, subject=subject)

    def draw(kind: str, templates: Mapping[str, str]) -> list[Candidate]:
        names = list(templates)
        rng.shuffle(names)
        return [Candidate(kind, n, fill(templates[n])) for n in names]

    vague = [c for c in draw("vague", VAGUE) if not _stems(c.text) & _stems(gold)]
    wrong = vague + _specific(question, pool.get(question.type, ()), rng) + draw("abstain", ABSTAIN)
    wrong = [c for c in wrong if not _contains(c.text, gold)]
    out = [Candidate("golden", "gold", gold)]
    para = [c for c in draw("paraphrase", PARAPHRASES) if c.text != gold]
    for kind, items in (("paraphrase", para), *((k, wrong) for k in WRONG_KINDS)):
        out += [c for c in items if c.kind == kind][:per_kind]
    return out


def skip_reason(question: Question) -> str | None:
    """Why a question has no candidates (no gold answer to vary), or None."""
    if question.category == 5:
        return "LoCoMo category 5 (adversarial): no gold answer; the judge skips it"
    if question.abstention:
        return "LongMemEval abstention question: the gold is 'unanswerable'"
    if not str(question.answer).strip():
        return "empty gold answer"
    return None
