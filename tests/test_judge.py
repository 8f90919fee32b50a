"""LoCoMo token F1 (hand-worked on LoCoMo's own QA pairs) and the official judge prompts/parsers."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.eval import (
    answer_tokens,
    locomo_f1,
    locomo_judge_prompt,
    longmemeval_judge_prompt,
    longmemeval_judge_template,
    multi_answer_f1,
    normalize_answer,
    parse_correct_wrong,
    parse_yes_no,
    token_f1,
)
from lazymem.prompts import PROMPTS
from lazymem.records import LONGMEMEVAL_TYPES, Question

# LoCoMo's official F1 stems with NLTK's PorterStemmer; find_spec avoids importing nltk
# (~3 s) while collecting.
needs_nltk = pytest.mark.skipif(importlib.util.find_spec("nltk") is None, reason="nltk is not installed")


@pytest.fixture(scope="module")
def conv26_qa(shared_data) -> list[dict]:
    data = json.loads((shared_data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    sample = next(s for s in data if s["sample_id"] == "conv-26")
    return sample["qa"]


@needs_nltk
def test_normalisation_matches_official_rules():
    # commas removed, lowercased, ASCII punctuation stripped, a/an/the/and dropped (whole words only)
    assert normalize_answer("The Rainbow flag, and a Transgender symbol!") == "rainbow flag transgender symbol"
    assert normalize_answer("Andy ate an anchovy; THE end.") == "andy ate anchovy end"
    assert normalize_answer("\u201cTrans Lives Matter\u201d") == "\u201ctrans lives matter\u201d"  # curly quotes stay
    assert answer_tokens("Counseling, psychology and running") == ["counsel", "psycholog", "run"]


# Real QA pairs of LoCoMo conv-26 with predictions and F1 computed by hand.
# (index, prediction, expected)
HAND_WORKED = [
    # cat 2, gold "7 May 2023" -> [7, may, 2023]. prediction -> [carolin, went, to, lgbtq,
    # support, group, on, 7, may, 2023]: 3 common, P = 3/10, R = 1, F1 = 0.6/1.3 = 6/13.
    (0, "Caroline went to the LGBTQ support group on 7 May 2023.", 6 / 13),
    # cat 1, gold "Rainbow flag, transgender symbol": parts scored 1 and 0 -> mean 0.5.
    (56, "The rainbow flag", 0.5),
    # cat 1, both parts matched ("symbols" stems to "symbol") -> 1.0.
    (56, "transgender symbols, a rainbow flag", 1.0),
    # cat 3, gold "LIkely no; though she likes reading, ..." cut at ";" -> [like, no];
    # prediction [no, like, not]: P = 2/3, R = 1, F1 = 0.8.
    (27, "No, likely not.", 0.8),
    # cat 4, gold "love, faith, and strength" -> [love, faith, strength]; prediction
    # [it, symbol, love, faith, strength]: P = 3/5, R = 1, F1 = 0.75.
    (91, "It symbolizes love, faith and strength.", 0.75),
    # cat 2, numeric gold 2022 (an int in the JSON).
    (49, "In 2022.", 2 / 3),
    # cat 5: credit only for the two abstention phrases, gold ignored.
    (154, "No information available about the agency.", 1.0),
    (154, "LGBTQ+ individuals", 0.0),
    (161, "This was NOT MENTIONED in our chats.", 1.0),
]


@needs_nltk
@pytest.mark.parametrize("index,prediction,expected", HAND_WORKED)
def test_locomo_f1_on_locomo_examples(conv26_qa, index, prediction, expected):
    qa = conv26_qa[index]
    answer = qa.get("answer", qa.get("adversarial_answer"))
    assert locomo_f1(prediction, answer, qa["category"]) == pytest.approx(expected)


def test_hand_worked_examples_are_the_intended_questions(conv26_qa):
    assert conv26_qa[0]["answer"] == "7 May 2023" and conv26_qa[0]["category"] == 2
    assert conv26_qa[56]["answer"] == "Rainbow flag, transgender symbol" and conv26_qa[56]["category"] == 1
    assert conv26_qa[27]["answer"].startswith("LIkely no;") and conv26_qa[27]["category"] == 3
    assert conv26_qa[91]["answer"] == "love, faith, and strength" and conv26_qa[91]["category"] == 4
    assert conv26_qa[49]["answer"] == 2022 and conv26_qa[154]["category"] == 5


@needs_nltk
def test_category_rules():
    # 1: the prediction is split on "," too; each gold part takes its best-matching prediction part.
    assert multi_answer_f1("a cat, dogs", "dog, cat, bird") == pytest.approx((1 + 1 + 0) / 3)
    assert locomo_f1("dogs and cats", "dog, cat", 1) == pytest.approx(2 / 3)  # one part: F1 2/3 per gold part
    # 3: only the part before the first ";" is gold.
    assert locomo_f1("yes", "Yes; since she collects books", 3) == 1.0
    assert locomo_f1("since she collects books", "Yes; since she collects books", 3) == 0.0
    # 2 and 4: plain F1; no overlap gives exactly 0.
    assert locomo_f1("Paris", "Lisbon", 4) == 0.0 and locomo_f1("", "Lisbon", 2) == 0.0
    # 5: substring, case-insensitive.
    assert locomo_f1("info is not mentioned", "x", 5) == 1.0 and locomo_f1("I don't know", "x", 5) == 0.0
    with pytest.raises(ValueError):
        locomo_f1("x", "x", 6)


@needs_nltk
@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.sampled_from([1, 2, 3, 4, 5]))
def test_f1_bounds_and_symmetry(pred, gold, category):
    score = locomo_f1(pred, gold, category)
    assert 0.0 <= score <= 1.0
    assert token_f1(pred, gold) == pytest.approx(token_f1(gold, pred))
    if answer_tokens(gold):
        assert token_f1(gold, gold) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------
# LongMemEval judge.
# ---------------------------------------------------------------------------------------
def _q(qtype: str, abstention: bool = False) -> Question:
    return Question(
        id="q1" + ("_abs" if abstention else ""),
        type=qtype,
        text="How many days?",
        answer="18 days",
        history_id="h",
        abstention=abstention,
    )


def test_longmemeval_prompt_per_type():
    expected = {
        "single-session-user": "longmemeval_judge",
        "single-session-assistant": "longmemeval_judge",
        "multi-session": "longmemeval_judge",
        "temporal-reasoning": "longmemeval_judge_temporal",
        "knowledge-update": "longmemeval_judge_knowledge_update",
        "single-session-preference": "longmemeval_judge_preference",
    }
    assert set(expected) == set(LONGMEMEVAL_TYPES)
    for qtype, name in expected.items():
        assert longmemeval_judge_template(qtype).name == name
        assert longmemeval_judge_template(qtype, abstention=True).name == "longmemeval_judge_abstention"
    with pytest.raises(ValueError, match="no LongMemEval judge prompt"):
        longmemeval_judge_template("multi-hop")


def test_longmemeval_prompt_text():
    text = longmemeval_judge_prompt(_q("temporal-reasoning"), "19 days")
    assert text.endswith(
        "Question: How many days?\n\nCorrect Answer: 18 days\n\nModel Response: 19 days\n\n"
        "Is the model response correct? Answer yes or no only."
    )
    assert "do not penalize off-by-one errors" in text
    abs_text = longmemeval_judge_prompt(_q("temporal-reasoning", abstention=True), "I don't know")
    assert "Explanation: 18 days" in abs_text and abs_text.endswith("as unanswerable? Answer yes or no only.")


def test_parse_yes_no_is_the_official_substring_rule():
    assert parse_yes_no("Yes") and parse_yes_no("  yes.") and parse_yes_no("YES, correct")
    assert not parse_yes_no("No") and not parse_yes_no("")
    assert parse_yes_no("No, not yes")  # official quirk, kept on purpose
    assert parse_yes_no("eyes")  # ditto


# ---------------------------------------------------------------------------------------
# LoCoMo LLM judge (Mem0 prompt).
# ---------------------------------------------------------------------------------------
def test_locomo_judge_prompt():
    q = Question(
        id="conv-26:q0",
        type="temporal",
        text="When did Caroline go to the LGBTQ support group?",
        answer="7 May 2023",
        history_id="conv-26",
        category=2,
    )
    text = locomo_judge_prompt(q, "On May 7th, 2023 {braces}")
    assert text == PROMPTS["locomo_judge"].template.replace("{question}", q.text).replace(
        "{gold_answer}", "7 May 2023"
    ).replace("{generated_answer}", "On May 7th, 2023 {braces}")
    adversarial = Question(id="conv-26:q154", type="adversarial", text="?", answer="", history_id="conv-26", category=5)
    with pytest.raises(ValueError, match="category 5"):
        locomo_judge_prompt(adversarial, "x")


@pytest.mark.parametrize(
    "reply,strict,expected",
    [
        ('{"label": "CORRECT"}', True, True),
        ('{"label": "WRONG"}', True, False),
        ('```json\n{"label": "CORRECT"}\n```', True, True),
        ('  {"reason": "same date", "label": "CORRECT"} ', True, True),
        ('{"label": "correct"}', True, False),  # official: exact "CORRECT" only
        ('{"label": 1}', True, False),
        ("The answer matches. CORRECT", True, None),  # Mem0 would raise: not JSON
        ('{"verdict": "CORRECT"}', True, None),
        ("[1, 2]", True, None),
        ("The answer matches. CORRECT", False, True),
        ("Not CORRECT at all: WRONG", False, False),  # last label word wins
        ("INCORRECT", False, None),  # whole words only
        ("", False, None),
    ],
)
def test_parse_correct_wrong(reply, strict, expected):
    assert parse_correct_wrong(reply, strict=strict) is expected
