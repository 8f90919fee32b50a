"""Sparse retrieval: Okapi BM25 over a history's messages, with rank-bm25 or bm25s underneath.

``bm25s`` (method="robertson") and rank-bm25's ``BM25Okapi`` score with the same formula up
to the constant factor (k1 + 1), so they rank alike, with one difference: a term in more
than half of the messages has a negative Robertson idf, which bm25s clips to 0 while
rank-bm25 replaces it by ``epsilon * mean idf`` (epsilon = 0.25). Such terms are rare once
stopwords are removed; with ``bm25_epsilon=0`` the two backends give identical rankings
(tested). Only messages with a positive BM25 score enter the sparse list. Both backends see
the tokens of ``lazymem.text.tokenize`` (one stopword list for the whole project).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lazymem.errors import ConfigError
from lazymem.retrieve.config import SPARSE_BACKENDS
from lazymem.text import tokenize


def top_k(scores: np.ndarray, k: int | None) -> np.ndarray:
    """Positions of the k highest scores, by score descending then position (deterministic ties).

    >>> top_k(np.array([0.5, 0.9, 0.5, 0.1]), 2).tolist()
    [1, 0]
    """
    scores = np.asarray(scores)
    n = len(scores)
    if k is None or k >= n:
        cand = np.arange(n)
    elif k <= 0:
        return np.zeros(0, dtype=np.int64)
    else:
        # argpartition is O(n); keep every tie of the k-th score so the cut is by position.
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        cand = np.flatnonzero(scores >= kth)
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][: n if k is None else k]


class BM25Index:
    """Okapi BM25 over a history's messages, with rank-bm25 or bm25s underneath."""

    def __init__(
        self,
        texts: Sequence[str],
        backend: str = "rank_bm25",
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        tokens: Sequence[list[str]] | None = None,
    ):
        if backend not in SPARSE_BACKENDS:
            raise ConfigError(f"BM25 backend {backend!r}: must be one of {SPARSE_BACKENDS}")
        self.backend, self.n = backend, len(texts)
        corpus = list(tokens) if tokens is not None else [tokenize(t) for t in texts]
        # rank-bm25 divides by the mean length and the vocabulary size: no tokens, no index.
        self._empty = not any(corpus)
        if self._empty:
            return
        if backend == "rank_bm25":
            from rank_bm25 import BM25Okapi

            self._bm25 = BM25Okapi(corpus, k1=k1, b=b, epsilon=epsilon)
        else:
            import bm25s

            # float64 so scores match rank-bm25's up to the constant (k1 + 1).
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="robertson", dtype="float64")
            self._bm25.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every message for the query (zeros when nothing matches)."""
        q = tokenize(query)
        if self._empty or not q:
            return np.zeros(self.n)
        if self.backend == "rank_bm25":
            return self._bm25.get_scores(q)
        ids = self._bm25.get_tokens_ids(q)
        return self._bm25.get_scores_from_ids(ids) if ids else np.zeros(self.n)

    def search(self, query: str, depth: int | None = None) -> list[tuple[int, float]]:
        """(position, score) of the best `depth` messages with a positive score, best first."""
        s = self.scores(query)
        top = top_k(s, min(depth, self.n) if depth is not None else None)
        return [(int(p), float(s[p])) for p in top if s[p] > 0]
