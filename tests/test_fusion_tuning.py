"""Weighted RRF with per-list depths and the fusion tuning that chooses on development questions only."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.errors import ConfigError
from lazymem.eval import fusion_tuning as ft
from lazymem.retrieve import RetrievalConfig, Retriever, reciprocal_rank_fusion, top_k

SPEC = "synthetic:messages=120,seed=2,histories=2,questions=6,varied=1"
SMALL_SPEC = "synthetic:messages=40,seed=2,histories=2,questions=4,varied=1"  # fewer messages for the real encoder


def reference_rrf(ranked_lists, k=60, depth=None):
    """RRF as the project computed it before weights existed (an independent copy)."""
    score, best = {}, {}
    for ranked in ranked_lists:
        seen = set()
        for rank, pos in enumerate(ranked[:depth] if depth is not None else ranked, start=1):
            if pos not in seen:
                seen.add(pos)
                score[pos] = score.get(pos, 0.0) + 1.0 / (k + rank)
                best[pos] = min(best.get(pos, rank), rank)
    return sorted(score.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


class HashEncoder:
    """Deterministic unit vectors from the text's sha256: dense lists without loading a model."""

    model_name = namespace = "hash-test"
    dim = 8

    def encode_docs(self, texts, progress=False):
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts
        ]
        m = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    encode_queries = encode_docs


def hash_retriever(**kw) -> Retriever:
    return Retriever(RetrievalConfig(disk_cache=False, **kw), encoder=HashEncoder())


@pytest.fixture(scope="module")
def dataset():
    from lazymem.data import load_dataset

    return load_dataset(SPEC)


# --- weighted RRF -------------------------------------------------------------------------------


def test_weighted_rrf_hand_example():
    # k=0, weights 2:1. 10: 2/1; 30: 2/3 + 1/1; 20: 2/2; 40: 1/2.
    fused = reciprocal_rank_fusion([[10, 20, 30], [30, 40]], k=0, weights=[2, 1])
    assert fused == [(10, 2.0), (30, pytest.approx(5 / 3)), (20, 1.0), (40, 0.5)]
    # the same lists unweighted: 30 (1/3 + 1) wins
    assert reciprocal_rank_fusion([[10, 20, 30], [30, 40]], k=0)[0] == (30, pytest.approx(4 / 3))
    with pytest.raises(ValueError, match="1 weights for 2 ranked lists"):
        reciprocal_rank_fusion([[1], [2]], weights=[1])


lists = st.lists(st.integers(0, 40), max_size=25, unique=True)


@settings(max_examples=200, deadline=None)
@given(a=lists, b=lists, k=st.sampled_from([0, 1, 10, 60, 2.5]), depth=st.sampled_from([None, 1, 5, 100]))
def test_zero_weight_gives_the_other_list_and_equal_weights_give_todays_rrf(a, b, k, depth):
    cut = slice(None) if depth is None else slice(depth)
    assert [p for p, _ in reciprocal_rank_fusion([a, b], k=k, depth=depth, weights=[1, 0])] == a[cut]
    assert [p for p, _ in reciprocal_rank_fusion([a, b], k=k, depth=depth, weights=[0, 3])] == b[cut]
    ref = reference_rrf([a, b], k=k, depth=depth)
    assert reciprocal_rank_fusion([a, b], k=k, depth=depth) == ref  # bit-identical scores, same order
    assert reciprocal_rank_fusion([a, b], k=k, depth=depth, weights=(1.0, 1.0)) == ref
    assert [p for p, _ in reciprocal_rank_fusion([a, b], k=k, depth=depth, weights=[2, 2])] == [p for p, _ in ref]


# --- config -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"rrf_weights": [1]}, "rrf_weights"),
        ({"rrf_weights": [1, 2, 3]}, "rrf_weights"),
        ({"rrf_weights": [1, -0.5]}, "rrf_weights"),
        ({"rrf_weights": [0, 0]}, "rrf_weights"),
        ({"rrf_weights": ["1", 1]}, "rrf_weights"),
        ({"rrf_weights": [True, 1]}, "rrf_weights"),
        ({"rrf_weights": [float("inf"), 1]}, "rrf_weights"),
        ({"rrf_weights": 2}, "rrf_weights"),
        ({"rrf_weights": [1, 0], "sparse": None}, "rrf_weights"),  # the only list that runs would weigh 0
        ({"sparse_depth": 0}, "sparse_depth"),
        ({"sparse_depth": 2.5}, "sparse_depth"),
        ({"dense_depth": -1}, "dense_depth"),
        ({"dense_depth": True}, "dense_depth"),
    ],
)
def test_new_fields_are_validated_by_name(kw, field):
    with pytest.raises(ConfigError, match=rf"RetrievalConfig\.{field}="):
        RetrievalConfig(**kw)


def test_new_fields_from_yaml_and_their_depths():
    c = RetrievalConfig.from_dict({"rrf_weights": [2, 1], "sparse_depth": 50, "depth": None})
    assert c.rrf_weights == (2, 1) and hash(c)  # a YAML list becomes a tuple: the frozen config stays hashable
    assert c.list_depths() == (50, None)
    assert RetrievalConfig(rrf_weights=[0, 1], sparse=None).rrf_weights == (0, 1)
    assert RetrievalConfig().list_depths() == (100, 100)


def test_default_retriever_is_todays_bit_for_bit(dataset):
    """The default config fuses exactly as before: the old lists, the old RRF, the old scores."""
    r = hash_retriever(n=20)
    explicit = hash_retriever(n=20, rrf_weights=(1, 1), sparse_depth=100, dense_depth=100)
    for q in dataset.questions:
        idx = r.index(dataset.history(q))
        depth = min(100, len(idx))
        sims = idx.embeddings @ HashEncoder().encode_queries([q.text])[0]
        old = reference_rrf([[p for p, _ in idx.bm25.search(q.text, depth)], [int(p) for p in top_k(sims, depth)]])
        for pool in (r.search(idx, q.text), explicit.search(explicit.index(dataset.history(q)), q.text)):
            assert [(h.pos, h.rrf_score) for h in pool.hits] == old[:20]


def test_unset_new_fields_leave_config_fingerprints_unchanged():
    from lazymem.eval import EvalConfig, config_fingerprint
    from lazymem.pipeline import PipelineConfig

    c = EvalConfig.from_dict({"dataset": "synthetic:messages=50,seed=0", "pipeline": {"method": "rag"}})
    d = c.to_dict()["pipeline"]["retrieval"]
    assert not {"rrf_weights", "sparse_depth", "dense_depth"} & set(d)  # as before the fields existed
    assert json.loads(json.dumps(d)) == {
        f.name: getattr(c.pipeline.retrieval, f.name) for f in dataclasses.fields(RetrievalConfig) if f.name in d
    }
    assert PipelineConfig.from_dict(c.pipeline.to_dict()) == c.pipeline  # still round-trips
    for change in ({"rrf_weights": (2, 1)}, {"sparse_depth": 50}, {"dense_depth": 50}):
        p = dataclasses.replace(c.pipeline, retrieval=dataclasses.replace(c.pipeline.retrieval, **change))
        assert config_fingerprint(dataclasses.replace(c, pipeline=p)) != config_fingerprint(c), change
    assert RetrievalConfig(rrf_weights=(2, 1)).as_dict()["rrf_weights"] == [2, 1]


# --- the tuning -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        ft.FusionSetting(60, (1, 1), 100, 100),
        ft.FusionSetting(10, (3, 1), 50, None),
        ft.FusionSetting(30, (1, 2), None, 50),
        ft.FusionSetting(60, (1, 0), 100, 100),
        ft.FusionSetting(5, (2, 1), 7, 3),
    ],
)
def test_cheap_fusion_equals_the_real_retriever(dataset, setting):
    """fused_top over whole lists cut per setting == Retriever.search under retrieval_fields()."""
    whole = hash_retriever(n=10)
    real = hash_retriever(n=10, **setting.retrieval_fields())
    assert ft.FusionSetting.from_config(real.config) == setting
    for case in ft.build_cases(dataset, whole, ft.WindowConfig()):
        q = dataset.question(case.qid)
        assert ft.fused_top(case.sparse, case.dense, setting, 10) == real.retrieve(dataset.history(q), q.text).positions


def test_split_and_choice_use_development_questions_only(dataset, monkeypatch):
    report_history = sorted(dataset.histories)[1]
    dev, report = ft.split_dev_report(dataset, [report_history])
    assert set(report.histories) == {report_history} and report_history not in dev.histories
    assert len(dev.questions) + len(report.questions) == len(dataset.questions)
    seen = []
    real_choose = ft.choose_setting

    def spy(settings, dev_cases, *args):
        seen.extend(c.qid for c in dev_cases)
        return real_choose(settings, dev_cases, *args)

    monkeypatch.setattr(ft, "choose_setting", spy)
    grid = ft.grid(rrf_ks=(10, 60), weights=((1, 1), (1, 0), (0, 1)), depths=(5, None))
    out = ft.tune(
        dev,
        report,
        RetrievalConfig(n=5, disk_cache=False),
        grid,
        k=5,
        radii=(0, 1),
        retriever=hash_retriever(),
        verify=True,
    )
    dev_ids = {q.id for q in dev.questions if q.evidence and not q.abstention}
    assert set(seen) == dev_ids and not set(seen) & {q.id for q in report.questions}
    # the choice is the dev argmax (first in grid order on ties), never informed by the report set
    best = max(out["grid_dev"], key=lambda r: r["covered"])["covered"]
    first = next(
        s
        for s in grid
        if ft.coverage(s, ft.build_cases(dev, hash_retriever(), ft.WindowConfig()), 5, (0, 1))["covered"] == best
    )
    assert out["chosen"]["label"] == first.label and out["table"]["chosen"]["dev"]["covered"] == best
    assert out["verify"]["matches"], out["verify"]
    assert out["table"]["old_fusion"]["label"] == "k=60 w=1:1 depth=100/100"
    assert out["sets"]["report"]["histories"] == [report_history] and len(out["grid_dev"]) == len(grid) == 24
    assert set(out["seconds"]) >= {"lists_dev", "lists_report", "grid_dev", "total"}
    for row in out["table"].values():
        for part in ("dev", "report"):
            assert all(0 <= v <= 1 for v in row[part]["all_at_k"].values())
    with pytest.raises(ValueError, match="not in"):
        ft.split_dev_report(dataset, ["no-such-history"])
    with pytest.raises(ValueError, match="report-histories"):
        ft.load_split(SPEC)


@pytest.mark.slow  # loads the MiniLM (~10 s on 2 busy cores)
def test_end_to_end_with_real_bm25_and_minilm(tmp_path, capsys, monkeypatch):
    """The command on a tiny synthetic set with the offline MiniLM; the JSON it writes is complete."""
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache"))  # embeddings land in tmp_path
    out = tmp_path / "tuning.json"
    from lazymem.cli import main

    main(
        [
            "fusion-tuning",
            SMALL_SPEC,
            "--report-histories",
            "syn2-h1-q0",
            "--k",
            "5",
            "--w",
            "0,2",
            "--rrf-k",
            "10,60",
            "--weights",
            "1:1,2:1",
            "--depths",
            "5,none",
            "--verify",
            "--out",
            str(out),
            "--json",
        ]
    )
    rec = json.loads(out.read_text())
    assert rec == json.loads(capsys.readouterr().out)
    assert rec["retrieval"]["dense_model"] == "minilm-offline" and rec["retrieval"]["sparse"] == RetrievalConfig.sparse
    assert len(rec["grid_dev"]) == 16 and rec["verify"]["matches"]
    assert rec["sets"]["dev"]["histories"] == ["syn2-h0-q0"] and rec["command"][-1] == "--json"
    assert set(rec["table"]) == {"bm25", "dense", "old_fusion", "chosen"}
    assert "report:" in ft.summary_text(rec) and "chosen on dev" in ft.summary_text(rec)


def test_locomo_split_is_the_paper_subset_and_the_other_conversations(shared_data):
    dev, report = ft.load_split(str(shared_data / "locomo" / "locomo10.json") + "#paper")
    assert sorted(report.histories) == ["conv-49", "conv-50"] and len(report.questions) == 314
    assert len(dev.histories) == 8 and not set(dev.histories) & set(report.histories)
    assert {q.category for q in dev.questions} == {1, 2, 3, 4} and len(dev.questions) == 1226
