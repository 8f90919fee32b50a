"""Text helpers every stage shares: one word tokenizer with one stopword list, one text hash.

BM25 (``lazymem.retrieve.sparse``) ranks on ``tokenize``; the extractive processor
(``lazymem.construct.extractive``) compares ``content_tokens`` (the same words, crudely
stemmed); caches and deletion key message texts by ``text_hash``.

>>> tokenize("I'm moving to Lisbon in 2024, aren't I?")
['moving', 'lisbon', '2024']
>>> sorted(content_tokens("When did I move to Lisbon? I moved!"))
['lisbon', 'mov']
>>> text_hash("hi")[:12]
'8f434346648f'
"""

from __future__ import annotations

import hashlib
import re

# A small English stopword list: function words that carry no topic (NLTK's core list and the
# stems of its contractions). BM25's two backends see exactly the same tokens, so their rankings
# can be compared; the extractive processor's relevance uses the same words.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t d ll m re ve don didn doesn isn wasn aren weren won can't
""".split()
)
_WORD = re.compile(r"[^\W_]+")
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def text_hash(text: str) -> str:
    """sha256 hex digest of a message text: the key of its embedding and of its deletion."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens (letters and digits) without stopwords, in order."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def crude_stem(token: str) -> str:
    """Strip one common suffix and a final "e" (moved/move/moves -> mov): cheap and good
    enough to match inflections for a relevance threshold; not a linguistic stemmer.

    >>> [crude_stem(t) for t in ("moved", "move", "moves", "tiny")]
    ['mov', 'mov', 'mov', 'tiny']
    """
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 3 else token


def content_tokens(text: str) -> set[str]:
    """The set of ``tokenize(text)``'s words, crudely stemmed."""
    return {crude_stem(t) for t in tokenize(text)}
