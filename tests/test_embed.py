"""Dense encoder and the on-disk embedding cache (lazymem.retrieve.dense)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from lazymem.retrieve import (
    OFFLINE_MINILM,
    DenseEncoder,
    EmbeddingCache,
    default_cache_dir,
    model_slug,
)
from lazymem.text import text_hash


class FakeEncoder:
    """Deterministic unit vectors from the text's hash; counts like DenseEncoder."""

    model_name = "fake"
    namespace = "fake"
    dim = 8

    def __init__(self):
        self.n_encode_calls = 0
        self.n_texts_encoded = 0

    def encode_docs(self, texts, progress=False):
        self.n_encode_calls += 1
        self.n_texts_encoded += len(texts)
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts
        ]
        m = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return m / np.linalg.norm(m, axis=1, keepdims=True) if len(m) else m


def test_text_hash_is_sha256_and_matches_the_store():
    from lazymem.data import text_hash as store_hash

    assert text_hash("hi") == hashlib.sha256(b"hi").hexdigest()
    assert store_hash is text_hash  # one hash: what the store purges is what the cache keyed


def test_model_slug_is_filesystem_safe(tmp_path):
    assert model_slug("BAAI/bge-reranker-v2-m3") == "BAAI__bge-reranker-v2-m3"
    local = tmp_path / "my model"
    local.mkdir()
    slug = model_slug(str(local))
    assert slug.startswith("my_model-") and "/" not in slug


def test_default_cache_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "embeddings"
    monkeypatch.delenv("LAZYMEM_CACHE")
    assert default_cache_dir().parts[-3:] == (".cache", "lazymem", "embeddings")


def test_cache_computes_once_and_reloads_from_disk(tmp_path):
    texts = ["I moved to Lisbon.", "ok", "My cat is Miso.", "ok"]
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path)
    first = cache.embed(enc, texts, key="h1")
    assert first.shape == (4, 8) and first.dtype == np.float32
    # "ok" twice: encoded once.
    assert enc.n_texts_encoded == 3 and cache.n_computed == 3
    np.testing.assert_array_equal(first[1], first[3])
    # A new cache object (as in a new process) loads the same matrix without encoding.
    enc2, cache2 = FakeEncoder(), EmbeddingCache(tmp_path)
    again = cache2.embed(enc2, texts, key="h1")
    assert enc2.n_texts_encoded == 0 and cache2.n_loaded == 4
    np.testing.assert_array_equal(first, again)
    assert cache2.info("fake", "h1")["encoded"] == 3


def test_changed_history_reuses_stored_rows(tmp_path):
    enc, cache = FakeEncoder(), EmbeddingCache(tmp_path)
    cache.embed(enc, ["a", "b", "c"], key="v1")
    # An appended message: only it is encoded; a deletion: nothing is.
    m2 = cache.embed(enc, ["a", "b", "c", "d"], key="v2")
    assert enc.n_texts_encoded == 4
    m3 = cache.embed(enc, ["a", "c"], key="v3")
    assert enc.n_texts_encoded == 4
    np.testing.assert_array_equal(m3, m2[[0, 2]])
    # Stored hashes must match row for row, or the matrix is not used.
    assert cache.load("fake", "v1", [text_hash(t) for t in ["a", "b", "x"]]) is None
    assert cache.load("fake", "v1", [text_hash(t) for t in ["a", "b", "c"]]) is not None


def test_purge_removes_rows_everywhere(tmp_path):
    enc, cache = FakeEncoder(), EmbeddingCache(tmp_path)
    cache.embed(enc, ["secret", "b"], key="v1")
    cache.embed(enc, ["secret", "b", "c"], key="v2")
    assert cache.purge([text_hash("secret")]) == 2
    for key in ("v1", "v2"):
        stored = np.load(tmp_path / "fake" / f"{key}.hashes.npy")
        assert text_hash("secret").encode() not in set(stored.tolist())
        assert len(np.load(tmp_path / "fake" / f"{key}.npy")) == len(stored)
    # The purged text must be encoded again; the others come from disk.
    n = enc.n_texts_encoded
    cache.embed(enc, ["secret", "b"], key="v1")
    assert enc.n_texts_encoded == n + 1
    assert cache.purge([]) == 0


def test_purge_history_deletes_its_files(tmp_path):
    enc, cache = FakeEncoder(), EmbeddingCache(tmp_path)
    cache.embed(enc, ["a"], key="v1")
    cache.embed(enc, ["a"], key="v2")
    assert cache.purge_history("v1") == 3
    assert cache.keys("fake") == ["v2"]
    assert cache.purge_history("v1") == 0


def test_empty_texts(tmp_path):
    out = EmbeddingCache(tmp_path).embed(FakeEncoder(), [], key="empty")
    assert out.shape == (0, 8)


@pytest.mark.slow
def test_minilm_encoder_normalised_and_shared():
    a = DenseEncoder(OFFLINE_MINILM)
    b = DenseEncoder(OFFLINE_MINILM)
    q = a.encode_queries(["where do I live?"])
    d = a.encode_docs(["I live in Lisbon.", "The cat sleeps."])
    assert q.shape == (1, 384) and d.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, rtol=1e-5)
    assert (a.n_encode_calls, a.n_texts_encoded) == (2, 3)
    assert a.model is b.model  # loaded once per (model, device)
    assert float(d[0] @ q[0]) > float(d[1] @ q[0])
    # A document prompt changes the vectors, so it gets its own cache namespace.
    assert DenseEncoder(OFFLINE_MINILM, doc_prefix="passage: ").namespace != a.namespace
    assert DenseEncoder(OFFLINE_MINILM, query_prefix="query: ").namespace == a.namespace
