"""LoCoMo's official token F1 (per category), plus the containment proxy for runs without a judge.

>>> round(locomo_f1("She went on 7 May 2023.", "7 May 2023", category=2), 3)
0.667
"""
from __future__ import annotations

import atexit
import functools
import json
import re
import string
import threading
from collections import Counter

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


class _StemMemo:
    """Porter stems kept on disk beside the other caches, so a rerun whose answers and gold
    were all seen before never imports NLTK (its package init pulls scipy and sklearn: ~2.5 s,
    most of a warm eval). One JSON file per NLTK version; a stem is a pure function of the word
    and that version. New stems are merged into the file at exit (atomic replace); an
    unwritable cache only loses the speed-up."""

    def __init__(self):
        self._lock = threading.Lock()
        self._path = None
        self._stems: dict[str, str] | None = None
        self._new = 0

    def path(self):
        if self._path is None:
            from importlib.metadata import PackageNotFoundError, version

            from lazymem.paths import cache_root

            try:
                v = version("nltk")
            except PackageNotFoundError:
                v = "missing"
            self._path = cache_root() / "stems" / f"porter-nltk{v}.json"
        return self._path

    def _load(self) -> dict[str, str]:
        if self._stems is None:
            try:
                self._stems = dict(json.loads(self.path().read_text()))
            except (OSError, ValueError, TypeError):
                self._stems = {}
            atexit.register(self.save)
        return self._stems

    def stem(self, word: str) -> str:
        with self._lock:
            stems = self._load()
            out = stems.get(word)
            if out is None:
                out = stems[word] = _stemmer().stem(word)
                self._new += 1
            return out

    def save(self) -> None:
        """Merge this process's new stems into the file (other processes may have added theirs)."""
        from lazymem.files import write_atomic

        with self._lock:
            if not self._new or self._stems is None:
                return
            path = self.path()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    merged = {**dict(json.loads(path.read_text())), **self._stems}
                except (OSError, ValueError, TypeError):
                    merged = dict(self._stems)
                write_atomic(path, json.dumps(merged, sort_keys=True))
                self._new = 0
            except OSError:
                pass


_STEMS = _StemMemo()


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMS.stem(word)


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


def contains_gold(prediction: str, answer: str) -> bool:
    """Whether the normalised gold answer occurs, as whole words, in the normalised prediction.

    A quick proxy for runs without a judge (the ``answer_contains`` of a record), not a
    metric of the paper.

    >>> contains_gold("He works in Porto, Portugal.", "Porto"), contains_gold("Portos", "Porto")
    (True, False)
    """
    gold = normalize_answer(answer)
    return bool(gold) and f" {gold} " in f" {normalize_answer(prediction)} "
