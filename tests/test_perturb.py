"""Memory perturbation study on a hand-made history with a scripted answerer."""
from __future__ import annotations

import pytest

from lazymem.eval.perturb import CONDITIONS, perturbation_markdown, perturbation_study, variants
from lazymem.llm import FakeBackend, Sampling
from lazymem.records import History, Message, Question

TEXTS = ["I adopted Biscuit.", "Nice.", "Biscuit loves the beach.", "Cool.", "I live in Porto.", "Ok.", "Rain today.",
         "Sure.", "I like tea.", "Fine."]


def history() -> History:
    return History("h", tuple(Message(i, f"m{i}", "s", i, "user", t, "2023/05/01") for i, t in enumerate(TEXTS)))


def test_variants_draw_local_nongold_reproducibly():
    assert variants([2, 0], [1, 2, 3], "full_gold") == [[0, 2]]
    assert variants([0, 2], [1, 3], "drop_all_gold") == [[]]
    assert variants([0, 2], [1, 3, 0], "add_all_nongold") == [[0, 1, 2, 3]]
    five = variants([0], list(range(1, 10)), "add_5_nongold", draws=3, seed=1)
    assert len(five) == 3 and all(len(v) == 6 and 0 in v for v in five)
    assert five == variants([0], list(range(1, 10)), "add_5_nongold", draws=3, seed=1)
    with pytest.raises(ValueError, match="one of"):
        variants([0], [], "shuffle")


def test_study_recovers_a_known_sensitivity():
    h = history()
    qs = [Question(f"q{i}", "t", "Where does Biscuit go?", "beach", "h", evidence=(0, 2)) for i in range(6)]
    qs.append(Question("nogold", "t", "?", "x", "h"))  # skipped: no gold evidence

    def answerer(prompt, sampling):
        memory = prompt[-1]["content"]
        return "beach" if "I adopted Biscuit." in memory and "loves the beach" in memory else "no idea"

    fake = FakeBackend(answerer)
    study = perturbation_study([(h, q, list(range(10))) for q in qs], fake, Sampling(max_tokens=8),
                               lambda q, a: float(a == q.answer), draws=2, count_tokens=lambda m: len(m.split()),
                               n_resamples=500)
    rows = {r["condition"]: r for r in study["rows"]}
    assert list(rows) == list(CONDITIONS) and rows["full_gold"]["accuracy"] == 1.0
    assert rows["drop_one_gold"]["accuracy"] == 0.0 and rows["drop_one_gold"]["delta"] == -1.0
    assert rows["drop_one_gold"]["c_to_i"] == 1.0 and rows["drop_all_gold"]["tokens"] == 0
    assert rows["add_5_nongold"]["accuracy"] == 1.0 and rows["add_5_nongold"]["low"] == rows["add_5_nongold"]["high"] == 0.0
    assert rows["add_all_nongold"]["tokens"] > rows["add_5_nongold"]["tokens"] > rows["full_gold"]["tokens"]
    assert rows["full_gold"]["questions"] == 6
    assert len(fake.calls) == 6 * (1 + 2 + 1 + 2 + 2 + 1)  # every variant answered once
    assert "| drop_one_gold | 6 | 0.0 | -100.0 [-100.0, -100.0] | 100.0 |" in perturbation_markdown(study)
