"""Answer scoring: LoCoMo's official token F1, and the official LLM judges' prompts and parsers.

No model is called here: build a prompt, send it with any client (using the settings in
LONGMEMEVAL_JUDGE_SETTINGS / LOCOMO_JUDGE_SETTINGS), and parse the reply.

>>> round(locomo_f1("She went on 7 May 2023.", "7 May 2023", category=2), 3)
0.667
>>> parse_yes_no("Yes.")
True
"""
from __future__ import annotations

import functools
import json
import re
import string
from collections import Counter

from lazymem.prompts import PROMPTS, PromptTemplate
from lazymem.records import Question

# Request settings of the official scripts (only the judge model is swapped, as in the paper).
LONGMEMEVAL_JUDGE_SETTINGS = {"temperature": 0, "max_tokens": 10, "n": 1}
LOCOMO_JUDGE_SETTINGS = {"temperature": 0.0, "response_format": {"type": "json_object"}}

# ---------------------------------------------------------------------------------------
# LoCoMo token F1: a port of task_eval/evaluation.py in snap-research/locomo (commit
# 92286325; normalize_answer, f1_score, f1 and the per-category rules of
# eval_question_answering). The official code stems with NLTK's PorterStemmer() in its
# default NLTK_EXTENSIONS mode, which is what _stem uses.
# ---------------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")  # official: "and" is dropped too
_PUNCTUATION = frozenset(string.punctuation)  # ASCII only, as official
ABSTAIN_PHRASES = ("no information available", "not mentioned")  # category 5 credit


@functools.lru_cache(maxsize=1)
def _stemmer():
    try:
        from nltk.stem import PorterStemmer  # imported on first use (~3 s): `import lazymem` stays light
    except ImportError as err:
        raise ImportError("LoCoMo's official F1 stems with NLTK's PorterStemmer: pip install nltk") from err
    return PorterStemmer()


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def normalize_answer(s: str) -> str:
    """LoCoMo's normalisation: drop commas, lowercase, strip punctuation, articles and "and".

    >>> normalize_answer("The Rainbow flag, and a Transgender symbol!")
    'rainbow flag transgender symbol'
    """
    s = s.replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def answer_tokens(s: str) -> list[str]:
    """Normalised, Porter-stemmed tokens.

    >>> answer_tokens("Counseling and psychology")
    ['counsel', 'psycholog']
    """
    return [_stem(w) for w in normalize_answer(s).split()]


def token_f1(prediction: str, ground_truth: str) -> float:
    """Official f1_score: bag-of-stemmed-tokens F1 (0 when nothing overlaps).

    >>> token_f1("Psychology and counseling", "Psychology, counseling certification")
    0.8
    """
    pred, gold = answer_tokens(prediction), answer_tokens(ground_truth)
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, ground_truth: str) -> float:
    """Official f1 (category 1): split both on ","; mean over gold parts of the best match.

    >>> multi_answer_f1("rainbow flag", "Rainbow flag, transgender symbol")
    0.5
    """
    predictions = [p.strip() for p in prediction.split(",")]
    truths = [g.strip() for g in ground_truth.split(",")]
    return sum(max(token_f1(p, g) for p in predictions) for g in truths) / len(truths)


def locomo_f1(prediction: str, answer: object, category: int) -> float:
    """LoCoMo's per-question score by category, as eval_question_answering computes it.

    1 (multi-hop): multi_answer_f1. 2, 4 (temporal, single-hop): token_f1. 3 (open-domain):
    token_f1 against the gold cut at its first ";". 5 (adversarial): 1.0 if the prediction
    contains "no information available" or "not mentioned" (case-insensitive), else 0.0;
    the gold answer is not used. ``answer`` is str()-ed (some gold answers are numbers).

    >>> locomo_f1("Likely no", "LIkely no; though she likes reading", category=3)
    1.0
    >>> locomo_f1("That was not mentioned.", "", category=5)
    1.0
    """
    if category == 5:
        low = prediction.lower()
        return 1.0 if any(p in low for p in ABSTAIN_PHRASES) else 0.0
    gold = str(answer)
    if category == 1:
        return float(multi_answer_f1(prediction, gold))
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category in (2, 3, 4):
        return token_f1(prediction, gold)
    raise ValueError(f"LoCoMo category must be 1-5, got {category!r}")


# ---------------------------------------------------------------------------------------
# LongMemEval LLM judge (src/evaluation/evaluate_qa.py in xiaowu0162/LongMemEval).
# ---------------------------------------------------------------------------------------
_LONGMEMEVAL_PROMPT_BY_TYPE = {
    "single-session-user": "longmemeval_judge",
    "single-session-assistant": "longmemeval_judge",
    "multi-session": "longmemeval_judge",
    "temporal-reasoning": "longmemeval_judge_temporal",
    "knowledge-update": "longmemeval_judge_knowledge_update",
    "single-session-preference": "longmemeval_judge_preference",
}


def longmemeval_judge_template(question_type: str, abstention: bool = False) -> PromptTemplate:
    """The official prompt for a question type; abstention questions all share one prompt.

    >>> longmemeval_judge_template("multi-session", abstention=True).name
    'longmemeval_judge_abstention'
    """
    if abstention:
        return PROMPTS["longmemeval_judge_abstention"]
    try:
        return PROMPTS[_LONGMEMEVAL_PROMPT_BY_TYPE[question_type]]
    except KeyError:
        raise ValueError(f"no LongMemEval judge prompt for question type {question_type!r}"
                         f" (known: {', '.join(_LONGMEMEVAL_PROMPT_BY_TYPE)})") from None


def longmemeval_judge_prompt(question: Question, response: str) -> str:
    """The judge's user message for one LongMemEval prediction (sent as the only message)."""
    template = longmemeval_judge_template(question.type, question.abstention)
    return template.render(question=question.text, answer=question.answer, response=response)


def parse_yes_no(response: str) -> bool:
    """Official label: ``'yes' in response.lower()`` (so "no, not yes" is True, as official).

    >>> parse_yes_no("No."), parse_yes_no("YES")
    (False, True)
    """
    return "yes" in response.lower()


# ---------------------------------------------------------------------------------------
# LoCoMo LLM judge: Mem0's ACCURACY_PROMPT (see lazymem.prompts) and its parsing.
# ---------------------------------------------------------------------------------------
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)  # mem0.memory.utils.extract_json
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")


def locomo_judge_prompt(question: Question, response: str) -> str:
    """The LLM judge's user message for one LoCoMo prediction (categories 1-4)."""
    if question.category == 5:
        raise ValueError(f"{question.id}: category 5 has no gold answer; the Mem0 judge skips it")
    return PROMPTS["locomo_judge"].render(question=question.text, gold_answer=question.answer,
                                          generated_answer=response)


def parse_correct_wrong(response: str, strict: bool = True) -> bool | None:
    """Mem0's reading of the judge reply: JSON (optionally fenced) whose "label" is "CORRECT".

    Mem0's script raises when the reply is not such JSON; here that gives None. With
    ``strict=False`` such a reply falls back to its last standalone CORRECT/WRONG word (our
    addition, off by default), still None when there is none.

    >>> parse_correct_wrong('```json\\n{"label": "CORRECT"}\\n```')
    True
    >>> parse_correct_wrong("The dates differ. WRONG"), parse_correct_wrong("... WRONG", strict=False)
    (None, False)
    """
    text = response.strip()
    fenced = _FENCED.search(text)
    try:
        return json.loads(fenced.group(1) if fenced else text)["label"] == "CORRECT"
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        pass  # where Mem0's script would raise
    if strict:
        return None
    words = _LABEL_WORD.findall(response)
    return words[-1] == "CORRECT" if words else None
