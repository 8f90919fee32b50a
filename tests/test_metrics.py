"""Retrieval metrics against LongMemEval's official code, and All@k coverage (paper Table 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.eval import (
    all_at_k,
    all_covered,
    coverage_table,
    dcg,
    gold_in_windows,
    mean_skip_none,
    ndcg_any,
    recall_all,
    recall_any,
    retrieval_metrics,
)
from lazymem.records import Dataset, History, Message, Question
from lazymem.retrieve import WindowConfig, build_windows

# --- independent reference: LongMemEval src/retrieval/eval_utils.py (MIT, Di Wu) -------
# Verbatim except np.asfarray (removed in NumPy 2) -> np.asarray(..., dtype=float).


def ref_dcg(relevances, k):
    """Discounted Cumulative Gain at k."""
    relevances = np.asarray(relevances, dtype=float)[:k]
    if relevances.size:
        return relevances[0] + np.sum(relevances[1:] / np.log2(np.arange(2, relevances.size + 1)))
    return 0.0


def ref_ndcg(rankings, correct_docs, corpus_ids, k=10):
    """Normalized Discounted Cumulative Gain at k."""
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = ref_dcg(ideal_relevance, k)
    actual_dcg = ref_dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.0
    return actual_dcg / ideal_dcg


def ref_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=10):
    recalled_docs = set(corpus_ids[idx] for idx in rankings[:k])
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    ndcg_score = ref_ndcg(rankings, correct_docs, corpus_ids, k)
    return recall_any, recall_all, ndcg_score


# --- hand-worked retrieval metrics ------------------------------------------------------


def test_hand_computed_values():
    ranked, gold = [3, 1, 2], {1, 2}
    assert recall_any(ranked, gold, 1) == 0.0
    assert recall_any(ranked, gold, 2) == 1.0
    assert recall_all(ranked, gold, 2) == 0.0
    assert recall_all(ranked, gold, 3) == 1.0
    # Official DCG: rank 0 weight 1, rank i >= 1 weight 1/log2(i + 1), so ranks 0 and 1
    # both weigh 1. Actual @3: 0 + 1 + 1/log2(3) = 1.63093; ideal [1, 1, 0]: 2.
    assert ndcg_any(ranked, gold, 1) == 0.0  # ideal@1 = 1, actual 0
    assert ndcg_any(ranked, gold, 2) == pytest.approx(0.5)
    assert ndcg_any(ranked, gold, 3) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert ndcg_any(ranked, gold, 3) == pytest.approx(0.8154648767857288)
    # k beyond the list is the whole list, as the official slicing does.
    assert ndcg_any(ranked, gold, 50) == ndcg_any(ranked, gold, 3)


def test_dcg_weights():
    assert dcg([1, 1, 1, 1], 4) == pytest.approx(1 + 1 + 1 / math.log2(3) + 1 / 2)
    assert dcg([1, 0, 0, 1], 3) == 1.0
    assert dcg([], 5) == 0.0


def test_ideal_ranking_caps_at_k():
    # One gold item at rank 0 of three gold: ideal@1 is 1 (not 3), so NDCG@1 = 1.
    assert ndcg_any([7, 1, 2], {7, 8, 9}, 1) == 1.0
    # @2: actual 1, ideal 2.
    assert ndcg_any([7, 1, 2], {7, 8, 9}, 2) == pytest.approx(0.5)
    assert ndcg_any([1, 2], {9}, 2) == 0.0


def test_retrieval_metrics_keys_follow_the_official_script():
    m = retrieval_metrics(list(range(60)), {0, 40})
    assert list(m) == [
        f"{name}@{k}" for k in (1, 3, 5, 10, 30, 50) for name in ("recall_any", "recall_all", "ndcg_any")
    ]
    assert m["recall_any@1"] == 1.0 and m["recall_all@30"] == 0.0 and m["recall_all@50"] == 1.0


def test_no_gold_gives_none_and_means_skip_it():
    assert recall_any([1, 2], set(), 5) is None
    assert recall_all([1, 2], [], 5) is None
    assert ndcg_any([1, 2], (), 5) is None
    assert set(retrieval_metrics([1, 2], ()).values()) == {None}
    assert mean_skip_none([None, None]) is None
    assert mean_skip_none([1.0, None, 0.0]) == 0.5


def test_bad_inputs():
    with pytest.raises(ValueError, match="repeats item 2"):
        recall_any([1, 2, 3, 2], {1}, 2)
    with pytest.raises(ValueError, match="k must"):
        ndcg_any([1, 2], {1}, 0)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 80), st.randoms(use_true_random=False), st.integers(1, 8), st.data())
def test_matches_official_code_on_random_rankings(n, rng, n_gold, data):
    corpus_ids = [f"doc{i}" for i in range(n)]
    rankings = rng.sample(range(n), rng.randint(1, n))  # a retriever may return only its top pool
    gold = {corpus_ids[i] for i in rng.sample(range(n), min(n_gold, n))}
    k = data.draw(st.sampled_from([1, 3, 5, 10, 30, 50]) | st.integers(1, 100))
    ranked = [corpus_ids[i] for i in rankings]
    want = ref_evaluate_retrieval(rankings, list(gold), corpus_ids, k)
    got = (recall_any(ranked, gold, k), recall_all(ranked, gold, k), ndcg_any(ranked, gold, k))
    assert got[:2] == want[:2]
    assert got[2] == pytest.approx(want[2], abs=1e-12)


# --- All@k -------------------------------------------------------------------------------


def test_all_covered_hand_cases():
    pool = [40, 10, 70, 3]
    # w=0: membership in the top k
    assert all_covered(pool, {10}, k=2, w=0, n_messages=100) is True
    assert all_covered(pool, {10}, k=1, w=0, n_messages=100) is False
    assert all_covered(pool, {11}, k=4, w=0, n_messages=100) is False
    # w=2: neighbours within 2 are covered, 3 away is not
    assert all_covered(pool, {12, 38}, k=2, w=2, n_messages=100) is True
    assert all_covered(pool, {13}, k=4, w=2, n_messages=100) is False
    assert all_covered(pool, {13}, k=4, w=3, n_messages=100) is True
    # every gold item must be covered
    assert all_covered(pool, {12, 90}, k=4, w=3, n_messages=100) is False
    # clipping and no evidence
    assert all_covered([0], {0, 2}, k=1, w=2, n_messages=3) is True
    assert all_covered(pool, set(), k=4, w=2, n_messages=100) is None


def test_all_covered_respects_sessions():
    # sessions [0, 10), [10, 20): 11 is next to 9 but in another session
    kw = dict(k=1, w=2, n_messages=20)
    assert all_covered([9], {11}, **kw) is True
    assert all_covered([9], {11}, cross_sessions=False, boundaries=[0, 10], **kw) is False
    assert all_covered([9], {8}, cross_sessions=False, boundaries=[0, 10], **kw) is True
    with pytest.raises(ValueError, match="boundaries"):
        all_covered([9], {11}, cross_sessions=False, **kw)


def test_all_covered_validates():
    from lazymem.errors import ConfigError

    with pytest.raises(ValueError, match="gold position 100"):
        all_covered([1], {100}, k=1, w=0, n_messages=100)
    with pytest.raises(ValueError, match="hit 100"):
        all_covered([100], {1}, k=1, w=0, n_messages=100)
    with pytest.raises(ConfigError):
        all_covered([1], {1}, k=1, w=-1, n_messages=100)
    with pytest.raises(ValueError, match="k must"):
        all_covered([1], {1}, k=0, w=0, n_messages=100)


def test_all_at_k_and_gold_in_windows():
    assert all_at_k([True, True, False, None]) == pytest.approx(2 / 3)
    assert all_at_k([None]) is None
    ws = build_windows(100, [10, 50])
    assert gold_in_windows(ws, [8, 12, 13, 52]) == 0.75
    assert gold_in_windows(ws, []) is None


@st.composite
def pools(draw):
    n = draw(st.integers(1, 150))
    pool = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=60))
    gold = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=6))
    bounds = sorted({0} | draw(st.sets(st.integers(1, max(1, n - 1)), max_size=6)) - {n})
    return n, pool, gold, bounds


@settings(max_examples=200, deadline=None)
@given(pools(), st.booleans())
def test_all_covered_is_monotone_in_w_and_k(case, cross):
    n, pool, gold, bounds = case
    kw = dict(n_messages=n, cross_sessions=cross, boundaries=bounds)
    for k in (1, 5, 10, 50):
        row = [all_covered(pool, gold, k=k, w=w, **kw) for w in range(5)]
        assert row == sorted(row)  # False < True: never loses coverage as w grows
    for w in range(4):
        col = [all_covered(pool, gold, k=k, w=w, **kw) for k in (1, 3, 5, 10, 30, 50)]
        assert col == sorted(col)


@settings(max_examples=200, deadline=None)
@given(pools(), st.integers(0, 4), st.integers(1, 60), st.booleans())
def test_all_covered_agrees_with_the_built_windows(case, w, k, cross):
    n, pool, gold, bounds = case
    cfg = WindowConfig(w=w, L=3, s=2, cross_sessions=cross)
    ws = build_windows(n, pool[:k], cfg, boundaries=bounds)
    got = all_covered(pool, gold, k=k, w=w, n_messages=n, L=3, s=2, cross_sessions=cross, boundaries=bounds)
    assert got == (gold_in_windows(ws, gold) == 1.0)
    if w == 0:
        assert got == gold.issubset(pool[:k])


# --- coverage_table ------------------------------------------------------------------------


def _dataset():
    # h1: sessions a (0-9) and b (10-19); h2: one session of 30.
    def hist(hid, sessions):
        msgs, pos = [], 0
        for sid, length in sessions:
            for t in range(length):
                msgs.append(Message(pos, f"{sid}#{t}", sid, t, "user", "", ""))
                pos += 1
        return History(hid, tuple(msgs))

    histories = {"h1": hist("h1", [("a", 10), ("b", 10)]), "h2": hist("h2", [("c", 30)])}
    questions = (
        Question("q1", "multi-session", "?", "", "h1", evidence=(11, 15)),
        Question("q2", "multi-session", "?", "", "h2", evidence=(5,)),
        Question("q3", "knowledge-update", "?", "", "h2", evidence=(20,)),
        Question("q4_abs", "knowledge-update", "?", "", "h2", evidence=(7,), abstention=True),
        Question("q5", "knowledge-update", "?", "", "h1"),
    )
    return Dataset("tiny", histories, questions)


POOLS = {"q1": [9, 15, 2], "q2": [5, 20], "q3": [22, 1], "q4_abs": [7], "q5": [3]}


def test_coverage_table_hand_computed():
    t = coverage_table(POOLS, _dataset(), k=2, radii=(0, 1, 2), ks=(1, 2))
    assert json.loads(json.dumps(t)) == t  # JSON-safe
    assert (t["n_questions"], t["n_with_evidence"], t["k"]) == (5, 3, 2)
    # q1: gold 11, 15 from top-2 [9, 15]: 11 needs w >= 2. q2: 5 is a hit. q3: 20 is 2 from 22.
    assert t["all_at_k"] == {"0": pytest.approx(1 / 3), "1": pytest.approx(1 / 3), "2": 1.0}
    assert t["by_type"]["multi-session"] == {"n": 2, "all_at_k": {"0": 0.5, "1": 0.5, "2": 1.0}}
    assert t["by_type"]["knowledge-update"] == {"n": 1, "all_at_k": {"0": 0.0, "1": 0.0, "2": 1.0}}
    # recall over q1, q2, q3 only (q4 is an abstention, q5 has no evidence)
    assert t["recall"]["recall_any@1"] == pytest.approx(1 / 3)  # q2
    assert t["recall"]["recall_any@2"] == pytest.approx(2 / 3)  # q1, q2
    assert t["recall"]["recall_all@2"] == pytest.approx(1 / 3)  # q2
    # window stats over all 5 questions at w=2 (top-2 pools):
    # q1 [9, 15] -> [7, 11], [13, 17]; q2 [5, 20]; q3 [22, 1]; q4 [7]; q5 [3]: P=2,2,2,1,1; q3 clips at 0
    assert t["window_stats"]["2"] == {
        "P": 1.6,
        "M": 1.6,
        "processed": pytest.approx(7.8),
        "covered": pytest.approx(7.8),
    }


def test_coverage_table_within_sessions():
    cfg = WindowConfig(cross_sessions=False)
    t = coverage_table(POOLS, _dataset(), k=2, radii=(2,), ks=(1,), config=cfg)
    # q1: 11 is 2 from 9 but in the other session, so q1 is no longer covered.
    assert t["all_at_k"]["2"] == pytest.approx(2 / 3)


def test_coverage_table_needs_every_pool():
    with pytest.raises(KeyError, match="q3"):
        coverage_table({k: v for k, v in POOLS.items() if k != "q3"}, _dataset())
