"""LoCoMo's official token F1 (per category), plus the containment proxy for runs without a judge.

>>> round(locomo_f1("She went on 7 May 2023.", "7 May 2023", category=2), 3)
0.667
"""

from __future__ import annotations

from collections import Counter

from lazymem.answers import answer_tokens, normalize_answer  # noqa: F401  (normalize_answer: the official name, here too)

# ---------------------------------------------------------------------------------------
# LoCoMo token F1: a port of task_eval/evaluation.py in snap-research/locomo (commit
# 92286325; f1_score, f1 and the per-category rules of eval_question_answering; its
# normalize_answer and NLTK Porter stemming are lazymem.answers', shared with the training side).
# ---------------------------------------------------------------------------------------
ABSTAIN_PHRASES = ("no information available", "not mentioned")  # category 5 credit


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


def contains_gold(prediction: str, answer: str) -> bool:
    """Whether the normalised gold answer occurs, as whole words, in the normalised prediction.

    A quick proxy for runs without a judge (the ``answer_contains`` of a record), not a
    metric of the paper.

    >>> contains_gold("He works in Porto, Portugal.", "Porto"), contains_gold("Portos", "Porto")
    (True, False)
    """
    gold = normalize_answer(answer)
    return bool(gold) and f" {gold} " in f" {normalize_answer(prediction)} "
