"""Message and query embeddings from an OpenAI-compatible ``/v1/embeddings`` server.

For histories too large to embed on one CPU: point ``RetrievalConfig.dense_base_url`` at a
vLLM (``vllm serve MODEL --task embed``), Hugging Face TEI or any server that speaks the
OpenAI embeddings API, and ``dense_model`` at the name it serves. ``RemoteEncoder`` has the
interface of ``DenseEncoder`` (the retriever and the disk cache use either): texts go out in
requests of ``batch_size``, grouped by length so a padding server wastes little, several
requests in flight at once (``concurrency``), and come back L2-normalised in input order.

The server knows no prompts: ``query_prefix``/``doc_prefix`` are put before the texts here,
and a *named* prompt (``query_prompt_name``) is refused. Vectors are cached under
``openai-<model>`` (never under the local model's name: a server's numbers differ in the
last digits), so serve different weights under different names. The API key is read from
the environment variable named by ``api_key_env`` and never written anywhere.

>>> RemoteEncoder("BAAI/bge-m3", "http://gpu-node:8000/v1").namespace
'openai-BAAI__bge-m3'
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from lazymem.errors import ConfigError
from lazymem.retrieve.dense import model_slug, prompt_tag


class RemoteEncoder:
    """Unit-norm embeddings from an OpenAI-compatible server; counts requests and texts."""

    device = None  # no torch device: the retriever checks none

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str | None = None,
        batch_size: int = 64,
        concurrency: int = 4,
        query_prefix: str = "",
        doc_prefix: str = "",
        timeout: float = 120.0,
        max_retries: int = 3,
    ):
        if not (isinstance(base_url, str) and base_url.startswith(("http://", "https://"))):
            raise ConfigError(f"embedding server URL {base_url!r}: must start with http:// or https:// and end in /v1")
        if not (isinstance(batch_size, int) and batch_size >= 1 and isinstance(concurrency, int) and concurrency >= 1):
            raise ConfigError(
                f"RemoteEncoder: batch_size and concurrency must be integers >= 1, got {batch_size!r}, {concurrency!r}"
            )
        self.model_name, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.batch_size, self.concurrency = batch_size, concurrency
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.timeout, self.max_retries = timeout, max_retries
        self.n_encode_calls = 0  # encode_* calls
        self.n_requests = 0  # HTTP requests sent
        self.n_texts_encoded = 0
        self.load_s = 0.0  # nothing to load here
        self._dim: int | None = None
        self._client = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return True

    @property
    def model(self) -> Any:
        """The openai client (made on first use; no request is sent until texts are encoded)."""
        if self._client is None:
            try:
                from openai import OpenAI
            except ImportError as e:  # pragma: no cover - openai is a core dependency
                raise RuntimeError(f"dense_base_url needs the openai package ({e}): pip install openai") from e
            key = "EMPTY"  # vLLM and TEI accept any key unless started with one
            if self.api_key_env:
                key = os.environ.get(self.api_key_env) or ""
                if not key:
                    raise ConfigError(
                        f"embedding server {self.base_url}: the environment variable "
                        f"{self.api_key_env} (dense_api_key_env) is not set"
                    )
            self._client = OpenAI(
                base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_retries
            )
        return self._client

    @property
    def namespace(self) -> str:
        slug = f"openai-{model_slug(self.model_name)}"
        return f"{slug}-doc{prompt_tag(self.doc_prefix, None)}" if self.doc_prefix else slug

    @property
    def query_namespace(self) -> str:
        return f"openai-{model_slug(self.model_name)}-query{prompt_tag(self.query_prefix, None)}"

    @property
    def dim(self) -> int:
        """Embedding dimension (asks the server once, with a one-word text, if nothing was encoded yet)."""
        if self._dim is None:
            self._request(["dimension"])
        return int(self._dim)

    def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        try:
            resp = self.model.embeddings.create(model=self.model_name, input=texts, encoding_format="float")
        except openai.APIConnectionError as e:
            raise ConnectionError(
                f"embedding server {self.base_url} unreachable ({e}); is it running and "
                f"serving {self.model_name!r} (vllm serve ... --task embed, or TEI)?"
            ) from e
        except openai.APIStatusError as e:
            raise RuntimeError(
                f"embedding server {self.base_url} refused {len(texts)} texts for model "
                f"{self.model_name!r}: HTTP {e.status_code} {e.message}"
            ) from e
        data = sorted(resp.data, key=lambda d: d.index)
        if [d.index for d in data] != list(range(len(texts))):
            raise RuntimeError(
                f"embedding server {self.base_url} returned indexes {[d.index for d in data]} for {len(texts)} texts"
            )
        mat = np.asarray([d.embedding for d in data], dtype=np.float32)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        if mat.ndim != 2 or not np.all(norms > 0):
            raise RuntimeError(
                f"embedding server {self.base_url} returned a zero or malformed vector "
                f"(shape {mat.shape}) for model {self.model_name!r}"
            )
        with self._lock:
            self.n_requests += 1
            self._dim = mat.shape[1]
        return mat / norms

    def _encode(self, texts: Sequence[str], prefix: str, progress: bool) -> np.ndarray:
        texts = [prefix + t for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.n_encode_calls += 1
        self.n_texts_encoded += len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths share a request
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        out: list[np.ndarray | None] = [None] * len(texts)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc=f"embedding via {self.base_url}", unit="msg")

        def run(batch: list[int]) -> None:
            vecs = self._request([texts[i] for i in batch])
            for i, v in zip(batch, vecs):
                out[i] = v
            if bar is not None:
                bar.update(len(batch))

        try:
            if len(batches) == 1 or self.concurrency == 1:
                for b in batches:
                    run(b)
            else:
                with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                    list(pool.map(run, batches))  # re-raises the first failure
        finally:
            if bar is not None:
                bar.close()
        return np.ascontiguousarray(np.stack(out), dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, unit rows."""
        return self._encode(texts, self.query_prefix, progress=False)

    def encode_docs(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """(len(texts), dim) float32, unit rows."""
        return self._encode(texts, self.doc_prefix, progress=progress)
