"""Embeddings from an OpenAI-compatible /v1/embeddings server (lazymem.retrieve.remote), against a
real local server that embeds with the shipped MiniLM: the same vectors and rankings as in process."""

from __future__ import annotations

import numpy as np
import pytest
from servers import EmbeddingServer, free_port

from lazymem.errors import ConfigError
from lazymem.retrieve import OFFLINE_MINILM, DenseEncoder, RetrievalConfig, Retriever

TEXTS = [
    "I moved to Lisbon in May.",
    "ok",
    "The cat sleeps on the sofa all afternoon, as cats do.",
    "My sister works as a nurse.",
    "thanks!",
    "We adopted a dog named Pixel last spring.",
    "Lisbon has great pastries.",
    "I started learning the cello.",
]


@pytest.fixture(scope="module")
def server():
    srv = EmbeddingServer(OFFLINE_MINILM)
    with srv as url:
        yield srv, url


def test_server_vectors_match_in_process_ones_in_input_order(server):
    from lazymem.retrieve.remote import RemoteEncoder

    srv, url = server
    srv.requests.clear()
    enc = RemoteEncoder(OFFLINE_MINILM, url, batch_size=3, concurrency=3)
    got = enc.encode_docs(TEXTS)
    want = DenseEncoder(OFFLINE_MINILM).encode_docs(TEXTS)
    assert got.shape == want.shape == (8, 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)  # normalised here
    np.testing.assert_allclose(got, want, atol=1e-5)  # order restored after length-sorted batches
    assert sorted(srv.requests) == [2, 3, 3] and enc.n_requests == 3 and enc.n_texts_encoded == 8
    q = enc.encode_queries(["where do I live?"])
    assert int(np.argmax(got @ q[0])) in (0, 6)  # a Lisbon line
    assert enc.dim == 384 and enc.namespace == "openai-minilm-offline" != DenseEncoder(OFFLINE_MINILM).namespace


def test_retriever_through_the_server_ranks_as_in_process(server, tmp_path):
    from lazymem.records import History, Message

    _, url = server
    hist = History("h", tuple(Message(i, f"s0#{i}", "s0", i, "user", t, "") for i, t in enumerate(TEXTS)))
    remote = Retriever(RetrievalConfig(n=5, sparse=None, dense_base_url=url, cache_dir=str(tmp_path))).warm_up()
    local = Retriever(RetrievalConfig(n=5, sparse=None, disk_cache=False))
    for q in ("Where does the user live?", "What pet did they get?"):
        assert [h.pos for h in remote.retrieve(hist, q).hits] == [h.pos for h in local.retrieve(hist, q).hits]
    assert (tmp_path / "openai-minilm-offline").is_dir()  # cached apart from the local model's vectors


def test_api_key_from_the_named_variable_and_errors_that_name_the_server(monkeypatch):
    from lazymem.retrieve.remote import RemoteEncoder

    srv = EmbeddingServer(OFFLINE_MINILM, api_key="s3cret-value")
    with srv as url:
        monkeypatch.delenv("EMBED_KEY", raising=False)
        with pytest.raises(ConfigError, match="EMBED_KEY"):
            RemoteEncoder(OFFLINE_MINILM, url, api_key_env="EMBED_KEY").encode_docs(["x"])
        monkeypatch.setenv("EMBED_KEY", "wrong")
        with pytest.raises(RuntimeError, match="HTTP 401") as e:
            RemoteEncoder(OFFLINE_MINILM, url, api_key_env="EMBED_KEY", max_retries=0).encode_docs(["x"])
        assert "wrong" not in str(e.value)
        monkeypatch.setenv("EMBED_KEY", "s3cret-value")
        assert RemoteEncoder(OFFLINE_MINILM, url, api_key_env="EMBED_KEY").encode_docs(["x"]).shape == (1, 384)
        with pytest.raises(RuntimeError, match="not served|404"):
            RemoteEncoder("other-model", url, api_key_env="EMBED_KEY", max_retries=0).encode_docs(["x"])
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ConnectionError, match="unreachable"):
        RemoteEncoder(OFFLINE_MINILM, dead, max_retries=0, timeout=5).encode_docs(["x"])


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"dense_base_url": "gpu-node:8000/v1"}, "dense_base_url"),
        ({"dense_base_url": "http://x/v1", "dense_model": None}, "dense_base_url"),
        ({"dense_base_url": "http://x/v1", "query_prompt_name": "query"}, "dense_base_url"),
        ({"dense_api_key_env": "sk-abc123"}, "dense_api_key_env"),
        ({"dense_concurrency": 0}, "dense_concurrency"),
    ],
)
def test_remote_settings_are_checked(bad, field):
    with pytest.raises(ConfigError, match=field):
        RetrievalConfig(**bad)


def test_remote_settings_leave_old_fingerprints_alone():
    assert "dense_base_url" not in RetrievalConfig().as_dict()
    assert RetrievalConfig(dense_base_url="http://x/v1").as_dict()["dense_base_url"] == "http://x/v1"
