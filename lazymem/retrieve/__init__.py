"""Retrieve broadly (paper Sec. 3.1) and window the hits (Sec. 3.2): sparse, dense, fusion, rerank, windows."""

from lazymem.retrieve.dense import (  # noqa: F401
    DenseEncoder,
    EmbeddingCache,
    OFFLINE_MINILM,
    default_cache_dir,
    model_slug,
    text_hash,
)
from lazymem.retrieve.retriever import (  # noqa: F401
    BM25Index,
    HistoryIndex,
    Hit,
    Pool,
    RetrievalConfig,
    Retriever,
    SPARSE_BACKENDS,
    history_fingerprint,
    reciprocal_rank_fusion,
    retrieve_many,
    tokenize,
    top_k,
)
from lazymem.retrieve.window import (  # noqa: F401
    Window,
    WindowConfig,
    build_windows,
    merge_spans,
    session_starts,
    split_span,
    window_stats,
)
