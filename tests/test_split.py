"""The paper's stratified split (Appendix "Dataset and Split Construction")."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.data import allocate, stratified_split
from lazymem.records import Question

# Table "Question-type statistics for the LongMemEval splits": total, train, validation, test.
PAPER_TABLE = {
    "single-session-user": (70, 50, 6, 14),
    "single-session-assistant": (56, 40, 5, 11),
    "single-session-preference": (30, 22, 2, 6),
    "multi-session": (133, 96, 10, 27),
    "temporal-reasoning": (133, 96, 11, 26),
    "knowledge-update": (78, 56, 6, 16),
}


def _questions(counts, prefix="q"):
    out = []
    for t, n in counts.items():
        for i in range(n):
            out.append(Question(id=f"{prefix}-{t}-{i:04d}", type=t, text="?", answer="!", history_id="h"))
    return out


def test_reproduces_paper_table_exactly():
    qs = _questions({t: row[0] for t, row in PAPER_TABLE.items()})
    split = stratified_split(qs, seed=42)
    table = split.counts_by_type(qs)
    for t, (total, train, val, test) in PAPER_TABLE.items():
        assert table[t] == {"total": total, "train": train, "validation": val, "test": test}, t
    assert (len(split.train), len(split.validation), len(split.test)) == (360, 40, 100)


def test_split_is_a_partition_and_deterministic():
    qs = _questions({t: row[0] for t, row in PAPER_TABLE.items()})
    a, b = stratified_split(qs), stratified_split(list(reversed(qs)))
    assert a == b  # input order does not matter: ids are sorted before the seeded shuffle
    ids = a.train + a.validation + a.test
    assert sorted(ids) == sorted(q.id for q in qs)
    assert stratified_split(qs, seed=7) != a


def test_largest_remainder_hand_example():
    # 10 items at 50/25/25: train 5; val quota of the 5 left = 5 * 0.25/0.5 = 2.5 -> 2 (total 2.5 rounds to 2)
    assert allocate({"x": 10}, (0.5, 0.25, 0.25)) == {"x": (5, 2, 3)}
    # remainders decide: train quotas 2.16 / 5.04 / 7.2 -> floors 2,5,7 = 14 of 14
    assert allocate({"a": 3, "b": 7, "c": 10}, (Fraction(72, 100), Fraction(8, 100), Fraction(20, 100)))["a"][0] == 2


def test_bad_fractions_and_duplicates():
    with pytest.raises(ValueError, match="fractions"):
        allocate({"x": 3}, (0.5, 0.5, 0.5))
    q = Question(id="dup", type="t", text="", answer="", history_id="h")
    with pytest.raises(ValueError, match="duplicate question id 'dup'"):
        stratified_split([q, q])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 200), min_size=1))
def test_allocation_properties(counts):
    sizes = allocate(counts)
    n = sum(counts.values())
    assert sum(s[0] for s in sizes.values()) == round(n * 0.72)
    for t, (tr, va, te) in sizes.items():
        assert min(tr, va, te) >= 0 and tr + va + te == counts[t]
        # each type stays within one seat of its exact train quota
        assert abs(tr - counts[t] * 0.72) < 1 + 1e-9
