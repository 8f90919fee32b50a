"""The gold answer's tokens, read the way LoCoMo's official evaluation reads them, and how much of them a text
holds: ground, so that the evaluation (``lazymem.eval``: token F1, the memory measures) and the training side's
window evaluation (``lazymem.train.heldout``: answer recall of what a window keeps) share one rule.

``normalize_answer`` and ``answer_tokens`` are a port of task_eval/evaluation.py in snap-research/locomo (commit
92286325): drop commas, lowercase, strip ASCII punctuation, articles and "and", then NLTK's PorterStemmer() in its
default NLTK_EXTENSIONS mode. ``answer_recall``: the share of the gold answer's distinct tokens found in a text.

>>> answer_recall("[2023/05/01] user: I moved to Lisbon, Portugal.", "The Lisbon and Porto")
0.5
"""

from __future__ import annotations

import atexit
import functools
import json
import re
import string
import threading
from typing import Any

# snap-research/locomo task_eval/evaluation.py (commit 92286325): normalize_answer, and the stemming its f1_score
# does with NLTK's PorterStemmer() in its default NLTK_EXTENSIONS mode, which is what _stem uses.
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")  # official: "and" is dropped too
_PUNCTUATION = frozenset(string.punctuation)  # ASCII only, as official


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


def answer_text(answer: Any, category: int | None = None) -> str:
    """The gold answer as the measure reads it: lists joined with ", ", numbers str()-ed, category 3 cut at ";".

    >>> answer_text(["Lisbon", "Porto"]), answer_text(3), answer_text("Likely no; she reads", 3)
    ('Lisbon, Porto', '3', 'Likely no')
    """
    if answer is None:
        return ""
    text = ", ".join(str(a) for a in answer) if isinstance(answer, (list, tuple)) else str(answer)
    return text.split(";")[0].strip() if category == 3 else text


def answer_recall(memory: str, answer: Any, category: int | None = None, abstention: bool = False) -> float | None:
    """Share of the gold answer's distinct normalised tokens found among the memory's (module docstring).

    >>> answer_recall("[2023/05/01] user: I moved to Lisbon, Portugal.", "The Lisbon and Porto")
    0.5
    >>> answer_recall("He has 3 dogs.", 3), answer_recall("anything", "The, and!"), answer_recall("x", "", 5)
    (1.0, None, None)
    """
    if abstention or category == 5:
        return None
    gold = set(answer_tokens(answer_text(answer, category)))
    if not gold:
        return None
    return len(gold & set(answer_tokens(memory))) / len(gold)
