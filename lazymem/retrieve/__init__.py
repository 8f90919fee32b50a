"""Retrieve broadly (paper Sec. 3.1) and window the hits (Sec. 3.2).

Modules, in the order a query passes through them:

- ``config``: ``RetrievalConfig``, the stage's settings (n, depth, rrf_k, sparse, dense, reranker ...);
- ``sparse``: BM25 over a history (rank-bm25 or bm25s) on ``lazymem.text.tokenize``;
- ``dense``: the sentence-transformers bi-encoder; ``remote``: the same from an OpenAI-compatible
  ``/v1/embeddings`` server (vLLM, TEI); ``embcache``: the on-disk message and query vectors;
- ``fusion``: Reciprocal Rank Fusion of the ranked lists (optionally weighted);
- ``rerank``: the optional cross-encoder;
- ``retriever``: ``Retriever(config).retrieve(history, query) -> Pool`` and its records (Hit, Pool);
- ``window``: history windows W_1..W_P around the pool (radius w, max length L, stride s).
"""

from lazymem.retrieve.config import RERANKER_BACKENDS, SPARSE_BACKENDS, RetrievalConfig
from lazymem.retrieve.dense import OFFLINE_MINILM, DenseEncoder, model_slug
from lazymem.retrieve.embcache import EmbeddingCache, default_cache_dir
from lazymem.retrieve.fusion import reciprocal_rank_fusion
from lazymem.retrieve.rerank import Reranker
from lazymem.retrieve.retriever import HistoryIndex, Hit, Pool, Retriever, history_fingerprint, retrieve_many
from lazymem.retrieve.sparse import BM25Index, top_k
from lazymem.retrieve.window import (
    Window,
    WindowConfig,
    build_windows,
    merge_spans,
    session_starts,
    split_span,
    window_stats,
)

__all__ = [
    "RERANKER_BACKENDS",
    "SPARSE_BACKENDS",
    "RetrievalConfig",
    "OFFLINE_MINILM",
    "DenseEncoder",
    "EmbeddingCache",
    "default_cache_dir",
    "model_slug",
    "reciprocal_rank_fusion",
    "Reranker",
    "Hit",
    "HistoryIndex",
    "Pool",
    "Retriever",
    "history_fingerprint",
    "retrieve_many",
    "BM25Index",
    "top_k",
    "Window",
    "WindowConfig",
    "build_windows",
    "merge_spans",
    "session_starts",
    "split_span",
    "window_stats",
]
