"""Paired bootstrap intervals: known cases (identical systems, a constructed difference)."""

from __future__ import annotations

import random

import pytest

from lazymem.stats import paired_bootstrap


def _systems(n=300, seed=0):
    r = random.Random(seed)
    b = [float(r.random() < 0.5) for _ in range(n)]
    # a is right wherever b is, and on ~40% of b's misses: a true gain of ~0.2
    a = [1.0 if x == 1.0 or r.random() < 0.4 else 0.0 for x in b]
    return a, b


def test_identical_systems_interval_contains_zero():
    _, b = _systems()
    res = paired_bootstrap(b, b)
    assert res["delta"] == 0.0 and res["low"] <= 0.0 <= res["high"]
    r = random.Random(1)
    noisy = [x if r.random() < 0.9 else 1.0 - x for x in b]  # b with 10% of answers flipped either way
    res = paired_bootstrap(noisy, b, n_resamples=2000)
    assert res["low"] < 0.0 < res["high"]


def test_constructed_difference_is_recovered():
    a, b = _systems()
    true = sum(a) / len(a) - sum(b) / len(b)
    res = paired_bootstrap(a, b, n_resamples=2000)
    assert res["delta"] == pytest.approx(true)
    assert 0.0 < res["low"] < true < res["high"] and res["high"] - res["low"] < 0.15
    flipped = paired_bootstrap(b, a, n_resamples=2000)
    assert flipped["high"] < 0.0
    again = paired_bootstrap(a, b, n_resamples=2000, seed=3)["low"]
    assert paired_bootstrap(a, b, n_resamples=2000, seed=3)["low"] == again


def test_pairs_by_question_id_and_rejects_mismatched_lengths():
    res = paired_bootstrap({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q3": 0.0, "q2": 0.0, "q1": 0.0, "q4": 1.0})
    assert res["n"] == 3 and res["unpaired"] == 1 and res["delta"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap([1.0, 0.0], [1.0])
