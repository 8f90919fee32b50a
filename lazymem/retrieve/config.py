"""Settings of the retrieval stage (paper Section 3.1): one frozen ``RetrievalConfig``.

>>> RetrievalConfig(n=20, sparse="bm25s").depth
100
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lazymem.errors import check_fields
from lazymem.fields import h, require
from lazymem.retrieve.dense import OFFLINE_MINILM

SPARSE_BACKENDS = ("rank_bm25", "bm25s")
RERANKER_BACKENDS = ("flag", "sentence-transformers")
# Fields added after runs were recorded; None (their default) keeps the behaviour those runs had.
_ADDED_LATER = (
    "rrf_weights",
    "sparse_depth",
    "dense_depth",
    "dense_base_url",
    "dense_api_key_env",
    "dense_concurrency",
)


@dataclass(frozen=True)
class RetrievalConfig:
    """Settings of the hybrid retrieval stage; the same keys as configs/*.yaml ``retrieval:``."""

    n: int = field(default=50, metadata=h("pool size kept after (re)ranking; the paper uses 50"))
    depth: int | None = field(default=100, metadata=h("length of each ranked list before fusion; None = whole history"))
    rrf_k: float = field(default=60, metadata=h("RRF constant k in 1/(k + rank); 60 as in Cormack et al."))
    rrf_weights: tuple[float, float] | None = field(
        default=None,
        metadata=h(
            "[w_sparse, w_dense] in score = sum w_l / (k + rank_l); None = equal weights; "
            "a weight of 0 leaves that list out of the fusion"
        ),
    )
    sparse_depth: int | None = field(default=None, metadata=h("length of the BM25 list before fusion; None = depth"))
    dense_depth: int | None = field(default=None, metadata=h("length of the dense list before fusion; None = depth"))
    sparse: str | None = field(
        default="bm25s",
        metadata=h(
            "'bm25s' (fast) or 'rank_bm25' (the paper's; the same ranking but for terms in most "
            "messages, sparse.py) or None"
        ),
    )
    dense_model: str | None = field(
        default=OFFLINE_MINILM,
        metadata=h(
            "'minilm-offline' (all-MiniLM-L6-v2 shipped on PyPI), a hub name such as "
            "'Qwen/Qwen3-Embedding-8B' (online), a local path, or None"
        ),
    )
    dense_base_url: str | None = field(
        default=None,
        metadata=h(
            "an OpenAI-compatible server's URL ending in /v1 (vLLM --task embed, TEI): dense_model is then the name "
            "it serves and embeddings come from it (lazymem.retrieve.remote); None = sentence-transformers here"
        ),
    )
    dense_api_key_env: str | None = field(
        default=None,
        metadata=h("NAME of the environment variable with the embedding server's key (never the key); None = no key"),
    )
    dense_concurrency: int | None = field(
        default=None, metadata=h("embedding requests in flight at once with dense_base_url; None = 4")
    )
    reranker: str | None = field(
        default=None,
        metadata=h("None = no rerank (fused order); 'BAAI/bge-reranker-v2-m3' (online) or a local cross-encoder dir"),
    )
    reranker_backend: str = field(
        default="flag", metadata=h("'flag' (FlagEmbedding FlagReranker) or 'sentence-transformers' (CrossEncoder)")
    )
    rerank_depth: int = field(default=100, metadata=h("how many fused candidates the reranker scores (>= n)"))
    cache_dir: str | None = field(
        default=None,
        metadata=h("embedding cache root; None = $LAZYMEM_CACHE/embeddings or ~/.cache/lazymem/embeddings"),
    )
    disk_cache: bool = field(default=True, metadata=h("keep message embeddings on disk between runs"))
    batch_size: int = field(default=64, metadata=h("encoder / reranker batch size"))
    device: str = field(default="cpu", metadata=h("torch device for encoder and reranker"))
    query_prefix: str = field(default="", metadata=h("literal text put before each query (encoder prompt)"))
    doc_prefix: str = field(default="", metadata=h("literal text put before each message (encoder prompt)"))
    query_prompt_name: str | None = field(
        default=None,
        metadata=h("named prompt in the model config for queries; None = the model's 'query' prompt if any"),
    )
    doc_prompt_name: str | None = field(
        default=None, metadata=h("named prompt for messages; None = the model's 'document' prompt if any")
    )
    bm25_k1: float = field(default=1.5, metadata=h("BM25 k1 (rank-bm25's default)"))
    bm25_b: float = field(default=0.75, metadata=h("BM25 b (rank-bm25 default)"))
    bm25_epsilon: float = field(
        default=0.25,
        metadata=h("rank_bm25 only: idf floor (epsilon * mean idf) for terms in > half the messages; bm25s acts as 0"),
    )
    num_threads: int | None = field(
        default=None, metadata=h("torch threads while embedding messages and reranking; None = torch's setting")
    )
    query_threads: int | None = field(
        default=1,
        metadata=h("torch threads while embedding one query; 1 avoids OpenMP stalls on shared cores; None = torch's"),
    )

    def __post_init__(self):
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        require(is_int(self.n) and self.n >= 1, "RetrievalConfig", "n", self.n, "must be an integer >= 1")
        require(
            self.depth is None or (is_int(self.depth) and self.depth >= 1),
            "RetrievalConfig",
            "depth",
            self.depth,
            "must be None or an integer >= 1",
        )
        require(
            isinstance(self.rrf_k, (int, float))
            and not isinstance(self.rrf_k, bool)
            and math.isfinite(self.rrf_k)
            and self.rrf_k >= 0,
            "RetrievalConfig",
            "rrf_k",
            self.rrf_k,
            "must be a number >= 0",
        )
        if isinstance(self.rrf_weights, list):  # YAML gives a list; keep the frozen config hashable
            object.__setattr__(self, "rrf_weights", tuple(self.rrf_weights))
        require(
            self.rrf_weights is None
            or (
                isinstance(self.rrf_weights, tuple)
                and len(self.rrf_weights) == 2
                and all(
                    isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
                    for w in self.rrf_weights
                )
            ),
            "RetrievalConfig",
            "rrf_weights",
            self.rrf_weights,
            "must be None or [w_sparse, w_dense], numbers >= 0",
        )
        for name in ("sparse_depth", "dense_depth"):
            v = getattr(self, name)
            require(
                v is None or (is_int(v) and v >= 1),
                "RetrievalConfig",
                name,
                getattr(self, name),
                "must be None (= depth) or an integer >= 1",
            )
        require(
            self.sparse is None or self.sparse in SPARSE_BACKENDS,
            "RetrievalConfig",
            "sparse",
            self.sparse,
            f"must be one of {SPARSE_BACKENDS} or None",
        )
        require(
            self.dense_model is None or (isinstance(self.dense_model, str) and self.dense_model.strip() != ""),
            "RetrievalConfig",
            "dense_model",
            self.dense_model,
            "must be a model name/path or None",
        )
        require(
            self.dense_base_url is None
            or (isinstance(self.dense_base_url, str) and self.dense_base_url.startswith(("http://", "https://"))),
            "RetrievalConfig",
            "dense_base_url",
            self.dense_base_url,
            "must be None or a server URL starting with http:// or https:// (ending in /v1)",
        )
        require(
            self.dense_base_url is None or self.dense_model is not None,
            "RetrievalConfig",
            "dense_base_url",
            self.dense_base_url,
            "needs dense_model: the name of the model the server serves",
        )
        require(
            self.dense_base_url is None or (self.query_prompt_name is None and self.doc_prompt_name is None),
            "RetrievalConfig",
            "dense_base_url",
            self.dense_base_url,
            "takes literal query_prefix/doc_prefix only: a server knows no named prompts",
        )
        require(
            self.dense_api_key_env is None
            or (
                isinstance(self.dense_api_key_env, str)
                and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", self.dense_api_key_env) is not None
                and not self.dense_api_key_env.lower().startswith("sk")
            ),
            "RetrievalConfig",
            "dense_api_key_env",
            self.dense_api_key_env,
            "must be the NAME of an environment variable (e.g. EMBED_API_KEY), not the key itself",
        )
        require(
            self.dense_concurrency is None or (is_int(self.dense_concurrency) and self.dense_concurrency >= 1),
            "RetrievalConfig",
            "dense_concurrency",
            self.dense_concurrency,
            "must be None or an integer >= 1",
        )
        require(
            self.sparse is not None or self.dense_model is not None,
            "RetrievalConfig",
            "sparse",
            self.sparse,
            "sparse and dense_model cannot both be None: nothing would retrieve",
        )
        if self.rrf_weights is not None:
            on = [w for w, used in zip(self.rrf_weights, (self.sparse, self.dense_model)) if used is not None]
            require(
                any(w > 0 for w in on),
                "RetrievalConfig",
                "rrf_weights",
                self.rrf_weights,
                "needs a weight > 0 for a list that runs: nothing would retrieve",
            )
        require(
            self.reranker is None or (isinstance(self.reranker, str) and self.reranker.strip() != ""),
            "RetrievalConfig",
            "reranker",
            self.reranker,
            "must be None, a model name or a local directory",
        )
        require(
            self.reranker_backend in RERANKER_BACKENDS,
            "RetrievalConfig",
            "reranker_backend",
            self.reranker_backend,
            f"must be one of {RERANKER_BACKENDS}",
        )
        require(
            is_int(self.rerank_depth) and self.rerank_depth >= 1,
            "RetrievalConfig",
            "rerank_depth",
            self.rerank_depth,
            "must be an integer >= 1",
        )
        require(
            self.reranker is None or self.rerank_depth >= self.n,
            "RetrievalConfig",
            "rerank_depth",
            self.rerank_depth,
            f"must be >= n ({self.n}) when a reranker is set, or the pool could not be filled",
        )
        require(
            self.cache_dir is None or (isinstance(self.cache_dir, str) and self.cache_dir.strip() != ""),
            "RetrievalConfig",
            "cache_dir",
            self.cache_dir,
            "must be a path string or None (an empty string would mean the working directory)",
        )
        require(
            isinstance(self.disk_cache, bool), "RetrievalConfig", "disk_cache", self.disk_cache, "must be true or false"
        )
        require(
            is_int(self.batch_size) and self.batch_size >= 1,
            "RetrievalConfig",
            "batch_size",
            self.batch_size,
            "must be an integer >= 1",
        )
        require(
            isinstance(self.device, str) and self.device != "",
            "RetrievalConfig",
            "device",
            self.device,
            "must be a torch device string such as 'cpu'",
        )
        for name in ("query_prefix", "doc_prefix"):
            require(
                isinstance(getattr(self, name), str),
                "RetrievalConfig",
                name,
                getattr(self, name),
                "must be a string ('' for none)",
            )
        for name in ("query_prompt_name", "doc_prompt_name"):
            require(
                getattr(self, name) is None or isinstance(getattr(self, name), str),
                "RetrievalConfig",
                name,
                getattr(self, name),
                "must be a string or None",
            )
        require(
            isinstance(self.bm25_k1, (int, float)) and self.bm25_k1 >= 0,
            "RetrievalConfig",
            "bm25_k1",
            self.bm25_k1,
            "must be a number >= 0",
        )
        require(
            isinstance(self.bm25_b, (int, float)) and 0 <= self.bm25_b <= 1,
            "RetrievalConfig",
            "bm25_b",
            self.bm25_b,
            "must be in [0, 1]",
        )
        require(
            isinstance(self.bm25_epsilon, (int, float)) and self.bm25_epsilon >= 0,
            "RetrievalConfig",
            "bm25_epsilon",
            self.bm25_epsilon,
            "must be >= 0",
        )
        for name in ("num_threads", "query_threads"):
            v = getattr(self, name)
            require(
                v is None or (is_int(v) and v >= 1),
                "RetrievalConfig",
                name,
                getattr(self, name),
                "must be None or an integer >= 1",
            )

    def list_depths(self) -> tuple[int | None, int | None]:
        """(sparse, dense) list lengths before fusion: each per-list depth, else ``depth``.

        >>> RetrievalConfig(sparse_depth=50).list_depths()
        (50, 100)
        """
        return (
            self.depth if self.sparse_depth is None else self.sparse_depth,
            self.depth if self.dense_depth is None else self.dense_depth,
        )

    def as_dict(self) -> dict:
        """Plain JSON-ready values; fields added later are left out while unset, so config
        fingerprints (``lazymem.eval.config_fingerprint``) from before they existed stay valid.

        >>> "rrf_weights" in RetrievalConfig().as_dict(), RetrievalConfig(rrf_weights=(2, 1)).as_dict()["rrf_weights"]
        (False, [2, 1])
        """
        d = dataclasses.asdict(self)
        for name in _ADDED_LATER:
            if d[name] is None:
                del d[name]
        if d.get("rrf_weights") is not None:
            d["rrf_weights"] = list(d["rrf_weights"])
        return d

    @classmethod
    def from_dict(cls, values: Mapping) -> RetrievalConfig:
        """Build from a mapping (a YAML section); unknown keys raise ConfigError naming them."""
        check_fields(cls, values, "RetrievalConfig")
        return cls(**values)
