"""Cross-encoder reranking of the fused candidates (FlagEmbedding FlagReranker or sentence-transformers)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lazymem.errors import ConfigError, ModelLoadError
from lazymem.retrieve.config import RERANKER_BACKENDS


class RerankerMissing(ModelLoadError, OSError):
    """The cross-encoder cannot load: the run stops (every question would fail alike), exit 2."""


class Reranker:
    """A cross-encoder scoring (query, message) pairs: FlagEmbedding or sentence-transformers."""

    def __init__(
        self,
        model: str,
        backend: str = "flag",
        device: str = "cpu",
        batch_size: int = 64,
        num_threads: int | None = None,
    ):
        if backend not in RERANKER_BACKENDS:
            raise ConfigError(f"reranker_backend {backend!r}: must be one of {RERANKER_BACKENDS}")
        self.model_id, self.backend, self.device = model, backend, device
        self.batch_size, self.num_threads = batch_size, num_threads
        self._model = None
        self.n_pairs_scored = 0

    def load(self) -> Reranker:
        """Load the model now; a hub name that cannot be fetched raises, never falls back."""
        if self._model is not None:
            return self
        from lazymem.retrieve.dense import check_model_folder

        check_model_folder(self.model_id, "reranker", RerankerMissing)
        try:
            if self.backend == "flag":
                from FlagEmbedding import FlagReranker

                self._model = FlagReranker(
                    self.model_id, use_fp16=False, devices=self.device, batch_size=self.batch_size
                )
            else:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_id, device=self.device)
        except Exception as e:  # any failure to load stops the run: every question would fail alike
            raise RerankerMissing(
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
        from lazymem.runtime import torch_threads

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
