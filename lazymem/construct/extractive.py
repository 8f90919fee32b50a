"""A training-free memory processor: keep the messages that share enough of the query's words.

It answers like a model would, with a gate-valid JSON decision array, so the pipeline runs
it through the same gate and merge; ``mode="key_span"`` keeps a message's best sentence
instead of its whole text. Relevance is ``lexical_scores`` (lazymem.text.content_tokens
overlap) unless another scorer is given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from lazymem.errors import ConfigError
from lazymem.records import Message
from lazymem.text import content_tokens


class MemoryProcessor(Protocol):
    """Anything that annotates one window: returns the raw output the gate will judge."""

    def process(self, query: str, query_time: str, window_messages: Sequence[Message]) -> str: ...


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """A text's sentences, split after ``.``, ``!`` or ``?`` and whitespace (each a verbatim span).

    >>> split_sentences("We went to the Rockies. [shares a photo] Fun!")
    ['We went to the Rockies.', '[shares a photo] Fun!']
    """
    return [s for s in _SENTENCE.split(text.strip()) if s.strip()]


def lexical_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Share of the query's content tokens that each text contains, in [0, 1].

    >>> lexical_scores("When did I move to Lisbon?", ["I moved to Lisbon", "Lisbon is sunny"])
    [1.0, 0.5]
    """
    q = content_tokens(query)
    if not q:
        return [0.0 for _ in texts]
    return [len(q & content_tokens(t)) / len(q) for t in texts]


Scorer = Callable[[str, Sequence[str]], Sequence[float]]  # (query, texts) -> one score per text


def extractive_keeps(query: str, texts: Sequence[str], config: ExtractiveConfig | None = None) -> list[bool]:
    """Which of ``texts`` the extractive processor KEEPs for ``query`` (lexical score at least the threshold, a
    non-empty text): its decisions without writing them, for counting what it would keep.

    >>> extractive_keeps("When did I move to Lisbon?", ["I moved to Lisbon", "Nice!", "  "])
    [True, False, False]
    """
    rule = config or ExtractiveConfig()
    return [rule.keeps(x) and bool(t.strip()) for t, x in zip(texts, lexical_scores(query, texts))]


def query_key_span(query: str, text: str, scorer: Scorer = lexical_scores) -> str:
    """The sentence of ``text`` scoring highest against ``query`` (the first of the best), verbatim; the whole text
    when it is one sentence or no sentence scores above 0.

    >>> query_key_span("Where did I move?", "Great news! I moved to Lisbon.")
    'I moved to Lisbon.'
    >>> query_key_span("Where did I move?", "Great news! Sunny here.")
    'Great news! Sunny here.'
    """
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return text
    scores = list(scorer(query, sentences))
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))  # first of the best
    return sentences[best] if scores[best] > 0 else text


@dataclass(frozen=True)
class ExtractiveConfig:
    """Settings of the training-free extractive processor."""

    threshold: float = 0.25  # keep a message whose relevance score is at least this
    mode: str = "verbatim"  # "verbatim": keep the whole text; "key_span": keep the best sentence

    def __post_init__(self) -> None:
        if self.mode not in ("verbatim", "key_span"):
            raise ConfigError(f"ExtractiveConfig.mode must be 'verbatim' or 'key_span', got {self.mode!r}")
        if not isinstance(self.threshold, (int, float)) or not math.isfinite(self.threshold):
            raise ConfigError(f"ExtractiveConfig.threshold must be a finite number, got {self.threshold!r}")

    def keeps(self, score: float) -> bool:
        """The processor's one decision rule: KEEP a message scoring at least the threshold.

        >>> ExtractiveConfig(threshold=0.25).keeps(0.25), ExtractiveConfig(threshold=0.25).keeps(0.2)
        (True, False)
        """
        return score >= self.threshold


class ExtractiveProcessor:
    """Keep messages that score at least a threshold against the query; never rewrites text.

    The scorer defaults to lexical overlap (lexical_scores); pass any ``(query, texts) ->
    scores`` callable, e.g. a dense cosine similarity, with a threshold on its scale. The
    output is always a gate-valid decision array.

    >>> p = ExtractiveProcessor(ExtractiveConfig(threshold=0.5))
    >>> ms = [Message(0, "s#0", "s", 0, "user", "I moved to Lisbon.", "d"),
    ...       Message(1, "s#1", "s", 1, "assistant", "Nice!", "d")]
    >>> [d["op"] for d in json.loads(p.process("Where did I move?", "d", ms))]
    ['KEEP', 'DROP']
    """

    def __init__(self, config: ExtractiveConfig = ExtractiveConfig(), scorer: Scorer | None = None):
        self.config = config
        self.scorer: Scorer = scorer or lexical_scores

    def _key_span(self, query: str, text: str) -> str:
        return query_key_span(query, text, self.scorer)

    def process(self, query: str, query_time: str, window_messages: Sequence[Message]) -> str:
        """A JSON decision array, one item per non-empty message, in order."""
        messages = [m for m in window_messages if m.text.strip()]
        scores = list(self.scorer(query, [m.text for m in messages]))
        if len(scores) != len(messages):
            raise ValueError(f"scorer returned {len(scores)} scores for {len(messages)} texts")
        out = []
        for m, score in zip(messages, scores):
            if self.config.keeps(score):
                content = m.text if self.config.mode == "verbatim" else self._key_span(query, m.text)
                out.append({"op": "KEEP", "compressed_content": content, "reason": f"score {score:.3f}"})
            else:
                out.append({"op": "DROP", "compressed_content": "", "reason": f"score {score:.3f}"})
        return json.dumps(out, ensure_ascii=False)
