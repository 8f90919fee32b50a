"""The GRPO reward: format gate, action reward, quality reward and judge, composite, TRL wrapper, diagnostic."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazymem.construct.gate import FAILURE_KINDS, STRUCTURAL_FAILURES, Decision
from lazymem.llm.base import LLMConfig
from lazymem.llm.fake import FakeBackend
from lazymem.prompts import PROMPTS, reward_judge_prompt
from lazymem.records import Message
from lazymem.train.diagnostics import RolloutScore, conflict_pairs, micro_reward, reward_ordering
from lazymem.train.quality import (
    CALL_ERROR,
    JUDGE_SAMPLING,
    PARSE_FAILURES,
    JudgeParseError,
    KeptMessage,
    QualityJudge,
    parse_quality_judgement,
    quality_reward,
    quality_score,
)
from lazymem.train.rewards import (
    ETA,
    LAMBDA_PHASE2,
    LazyMemReward,
    action_accuracies,
    action_reward,
    completion_text,
    composite_reward,
    curriculum_lambda,
    format_gate,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def item(op: str = "KEEP", content: str | None = None, reason: str = "r") -> dict:
    if content is None:
        content = "kept text" if op == "KEEP" else ""
    return {"op": op, "compressed_content": content, "reason": reason}


def output(ops, contents=None) -> str:
    contents = contents or [f"c{i}" if op == "KEEP" else "" for i, op in enumerate(ops)]
    return json.dumps([item(op, c) for op, c in zip(ops, contents)])


def conv(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def source(pos: int) -> dict:
    return {"role": "user", "content": f"source message {pos}", "timestamp": "2023/05/20 (Sat) 02:21"}


def columns(positions, labels, n=1, **extra) -> dict:
    """TRL's reward kwargs for n completions of one prompt (columns repeated per completion)."""
    cols = {
        "decision_positions": [list(positions)] * n,
        "gold_labels": [list(labels)] * n,
        "query": ["Where do I live?"] * n,
        "query_time": ["2023/06/01"] * n,
        "gold_answer": ["Lisbon"] * n,
        "reasoning_chain": [""] * n,
        "sources": [[source(p) for p in positions]] * n,
    }
    cols.update(extra)
    return cols


# ---------------------------------------------------------------------------------------
# completion_text and the format gate (I[o in V]).
# ---------------------------------------------------------------------------------------
def test_completion_text_forms():
    assert completion_text("[]") == "[]"
    assert completion_text(conv("[1]")) == "[1]"
    assert completion_text({"role": "assistant", "content": "x"}) == "x"
    assert (
        completion_text(
            [
                {"role": "assistant", "content": "[{"},
                {"role": "tool", "content": "IGNORED"},
                {"role": "assistant", "content": "}]"},
            ]
        )
        == "[{}]"
    )
    parts = [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    assert completion_text([{"role": "assistant", "content": parts}]) == "ab"
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    with pytest.raises(TypeError):
        completion_text(42)


def test_format_gate_strips_a_leading_think_trace_only():
    raw = output(["KEEP", "DROP"])
    assert format_gate(f"<think>\n[not this]\n</think>\n\n{raw}", [3, 5]).ok
    assert format_gate(raw, [3, 5]).decisions == (Decision(3, "KEEP", "c0", "r"), Decision(5, "DROP", "", "r"))
    assert format_gate(f"<think>unclosed {raw}", [3, 5]).reason == "extra_text"
    assert not format_gate(f"{raw}<think>late</think>", [3, 5]).ok


# One raw output per failure kind (positions [5] unless given): the reward is 0 for each.
GATE_FAILURES = [
    ("not_text", None),
    ("empty", " \n"),
    ("truncated", '[{"op": "KEEP", "compressed_content": "Moved to Lis'),
    ("invalid_json", "[{op: KEEP}]"),
    ("extra_text", "```json\n" + output(["KEEP"]) + "\n```"),
    ("not_array", json.dumps(item())),
    ("wrong_count", output(["KEEP", "DROP"])),
    ("item_not_object", '["KEEP"]'),
    ("duplicate_field", '[{"op": "DROP", "op": "DROP", "compressed_content": "", "reason": ""}]'),
    ("missing_field", '[{"op": "DROP", "compressed_content": ""}]'),
    ("extra_field", json.dumps([{**item(), "id": 5}])),
    ("bad_op", json.dumps([item("keep")])),
    ("bad_field_type", json.dumps([item("KEEP", 7)])),
    ("invalid_unicode", '[{"op": "KEEP", "compressed_content": "\\ud800", "reason": ""}]'),
    ("keep_empty_content", json.dumps([item("KEEP", "  ")])),
    ("drop_with_content", json.dumps([item("DROP", "x")])),
]


def test_every_failure_kind_has_a_case():
    assert [k for k, _ in GATE_FAILURES] == list(FAILURE_KINDS)


@pytest.mark.parametrize("kind,raw", GATE_FAILURES, ids=[k for k, _ in GATE_FAILURES])
def test_gate_failure_gives_zero_reward(kind, raw):
    v = format_gate(raw, [5])
    assert (v.ok, v.reason) == (False, kind)
    assert v.fmt_ok == (kind not in STRUCTURAL_FAILURES)  # Gate Fmt. still passes item-level failures
    assert composite_reward(v.ok, 1.0, 1.0, 0.5) == 0.0
    if raw is not None:  # through the TRL wrapper too, with a judge that would give full marks
        judge = QualityJudge(FakeBackend(lambda p, s: '{"faithfulness": 2, "utility": 2}'))
        reward = LazyMemReward(lam=0.5, judge=judge)
        assert reward(prompts=[[]], completions=[conv(raw)], **columns([5], [True])) == [0.0]
        assert judge.calls == 0  # invalid rollouts are never judged
        assert reward.last_stats["gate_failures"] == {kind: 1}
        assert reward.last_stats["gate_fmt"] == float(v.fmt_ok) and reward.last_stats["strict_gate"] == 0.0


def test_strict_gate_and_gate_fmt_are_reported_apart():
    reward = LazyMemReward()
    outs = [output(["KEEP", "DROP"]), json.dumps([item("KEEP", ""), item("DROP")]), output(["KEEP"]), "nope"]
    rewards = reward(prompts=[[]] * 4, completions=[conv(o) for o in outs], **columns([1, 2], [True, False], n=4))
    assert rewards == [1.0, 0.0, 0.0, 0.0]
    s = reward.last_stats
    assert (s["strict_gate"], s["gate_fmt"]) == (0.25, 0.5)
    assert s["gate_failures"] == {"keep_empty_content": 1, "wrong_count": 1, "invalid_json": 1}


# ---------------------------------------------------------------------------------------
# The action reward R_act: hand-worked windows.
# ---------------------------------------------------------------------------------------
def test_action_reward_mixed_window():
    labels = [True, True, False, False, False, False]
    ops = ["KEEP", "DROP", "KEEP", "DROP", "DROP", "DROP"]
    assert action_accuracies(ops, labels) == (0.5, 0.75)
    assert action_reward(ops, labels) == pytest.approx(0.915 * 0.5 + 0.085 * 0.75)  # 0.52125
    assert action_reward(ops, labels, eta=0.5) == pytest.approx(0.625)


def test_action_reward_single_category_windows_use_that_accuracy():
    assert action_accuracies(["KEEP", "KEEP", "DROP"], [True] * 3) == (pytest.approx(2 / 3), None)
    assert action_reward(["KEEP", "KEEP", "DROP"], [True] * 3) == pytest.approx(2 / 3)
    assert action_reward(["DROP", "DROP", "DROP", "KEEP"], [False] * 4) == 0.75
    assert action_reward(["DROP"], [False], eta=1.0) == 1.0  # eta does not weigh a lone category


def test_action_reward_empty_window_is_vacuously_perfect():
    assert action_accuracies([], []) == (None, None)
    assert action_reward([], []) == 1.0
    assert LazyMemReward()(prompts=[[]], completions=[conv("[]")], decision_positions=[[]], gold_labels=[[]]) == [1.0]


def test_action_reward_takes_decisions_and_rejects_bad_input():
    decisions = [Decision(3, "KEEP", "x"), Decision(4, "DROP", "")]
    assert action_reward(decisions, [False, True]) == 0.0
    with pytest.raises(ValueError, match="2 decisions for 1 gold labels"):
        action_reward(decisions, [True])
    with pytest.raises(ValueError, match="op"):
        action_reward(["keep"], [True])
    for eta in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="eta"):
            action_reward(["KEEP"], [True], eta=eta)


def _reference_r_act(ops, labels, eta) -> Fraction:
    """Independent: exact counts, the paper's definition read literally."""
    n_g = sum(labels)
    n_n = len(labels) - n_g
    kept_gold = sum(1 for o, g in zip(ops, labels) if g and o == "KEEP")
    dropped_rest = sum(1 for o, g in zip(ops, labels) if not g and o == "DROP")
    if n_g and n_n:
        return eta * Fraction(kept_gold, n_g) + (1 - eta) * Fraction(dropped_rest, n_n)
    return Fraction(kept_gold, n_g) if n_g else Fraction(dropped_rest, n_n) if n_n else Fraction(1)


windows = st.lists(st.tuples(st.sampled_from(["KEEP", "DROP"]), st.booleans()), max_size=12)
etas = st.fractions(0, 1, max_denominator=1000)


@FAST
@given(windows, etas)
def test_action_reward_matches_reference_and_lies_in_unit_interval(window, eta):
    ops, labels = [o for o, _ in window], [g for _, g in window]
    r = action_reward(ops, labels, float(eta))
    assert 0.0 <= r <= 1.0
    assert r == pytest.approx(float(_reference_r_act(ops, labels, eta)), abs=1e-12)


@FAST
@given(windows, etas, st.data())
def test_dropping_a_gold_message_never_increases_r_act(window, eta, data):
    ops, labels = [o for o, _ in window], [g for _, g in window]
    kept_gold = [i for i, (o, g) in enumerate(window) if g and o == "KEEP"]
    kept_rest = [i for i, (o, g) in enumerate(window) if not g and o == "KEEP"]
    r = action_reward(ops, labels, float(eta))
    if kept_gold:
        i = data.draw(st.sampled_from(kept_gold))
        assert action_reward(ops[:i] + ["DROP"] + ops[i + 1 :], labels, float(eta)) <= r
    if kept_rest:  # and dropping a non-gold one never lowers it
        i = data.draw(st.sampled_from(kept_rest))
        assert action_reward(ops[:i] + ["DROP"] + ops[i + 1 :], labels, float(eta)) >= r


@FAST
@given(st.integers(1, 8), st.integers(1, 12), st.data())
def test_one_more_kept_gold_outweighs_all_non_gold_at_eta_0915(n_g, n_n, data):
    """The paper's action-level separation: with at most eight gold messages, keeping one more
    gold message raises R_act more than the whole non-gold category can lower it."""
    labels = [True] * n_g + [False] * n_n

    def ops():
        return data.draw(st.lists(st.sampled_from(["KEEP", "DROP"]), min_size=n_g + n_n, max_size=n_g + n_n))

    def kept(o):
        return sum(x == "KEEP" for x in o[:n_g])

    a, b = ops(), ops()
    if kept(a) > kept(b):
        assert action_reward(a, labels) > action_reward(b, labels)


# ---------------------------------------------------------------------------------------
# The composite reward and the curriculum value.
# ---------------------------------------------------------------------------------------
def test_composite_reward_hand_values():
    assert composite_reward(True, 0.8, 0.4, 0.5) == pytest.approx(0.6)
    assert composite_reward(True, 0.8, None, 0.0) == 0.8
    assert composite_reward(False, None, None, 0.5) == 0.0
    with pytest.raises(ValueError, match="r_qual"):
        composite_reward(True, 0.8, None, 0.5)
    with pytest.raises(ValueError, match="lam"):
        composite_reward(True, 0.8, 0.4, 1.5)


unit = st.floats(0, 1)


@FAST
@given(st.booleans(), unit, unit, unit)
def test_composite_reward_in_unit_interval_and_gated(valid, r_act, r_qual, lam):
    r = composite_reward(valid, r_act, r_qual, lam)
    assert 0.0 <= r <= 1.0
    assert valid or r == 0.0


def test_curriculum_lambda_switches_once_past_tau():
    assert curriculum_lambda(0.0) == 0.0 and curriculum_lambda(0.99) == 0.0  # "exceeds": strictly
    assert curriculum_lambda(0.991) == LAMBDA_PHASE2 == 0.5
    assert curriculum_lambda(0.2, switched=True) == 0.5
    with pytest.raises(ValueError):
        curriculum_lambda(1.2)


# ---------------------------------------------------------------------------------------
# The quality reward: the judge-reply parser, Q and R_qual.
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply,expected",
    [
        ('{"faithfulness": 2, "utility": 1}', (2, 1)),
        (
            '  \n{"faithfulness": 0, "utility": 0, "unsupported_claims": ["x"], "useful_evidence": [], "reason": "r"}\n',
            (0, 0),
        ),
        ('<think>\nf=1? u=2 {"faithfulness": 0}\n</think>\n\n{"faithfulness": 1, "utility": 2}', (1, 2)),
        ('```json\n{"faithfulness": 2, "utility": 2}\n```', (2, 2)),
        ('<think></think>```\n{"faithfulness": 1, "utility": 0}\n```\n', (1, 0)),
        ('{"utility": 1, "faithfulness": 2, "nested": {"faithfulness": 0, "faithfulness": 1}}', (2, 1)),
    ],
)
def test_parse_quality_judgement_accepts(reply, expected):
    assert parse_quality_judgement(reply) == expected


@pytest.mark.parametrize(
    "reply,kind",
    [
        (None, "not_text"),
        ("", "empty"),
        ("   \n", "empty"),
        ("<think>long thought</think>", "empty"),
        ("faithfulness 2, utility 1", "invalid_json"),
        ('Here is my verdict: {"faithfulness": 2, "utility": 1}', "invalid_json"),
        ('{"faithfulness": 2, "utility"', "invalid_json"),  # truncated at max_tokens
        ('<think>never closed {"faithfulness": 2, "utility": 1}', "invalid_json"),
        ('{"faithfulness": 2, "utility": 1} I am confident.', "extra_text"),
        ('{"faithfulness": 2, "utility": 1}\n{"faithfulness": 0, "utility": 0}', "extra_text"),
        ('```json\n{"faithfulness": 2, "utility": 1}\n```\nDone.', "invalid_json"),
        ('[{"faithfulness": 2, "utility": 1}]', "not_object"),
        ("2", "not_object"),
        ('{"faithfulness": 2, "faithfulness": 0, "utility": 1}', "duplicate_field"),
        ('{"faithfulness": 2}', "missing_field"),
        ('{"utility": 1}', "missing_field"),
        ('{"scores": {"faithfulness": 2, "utility": 1}}', "missing_field"),  # nested
        ('{"faithfulness": 3, "utility": 1}', "bad_score"),
        ('{"faithfulness": 2, "utility": -1}', "bad_score"),
        ('{"faithfulness": "2", "utility": 1}', "bad_score"),
        ('{"faithfulness": 1.5, "utility": 1}', "bad_score"),
        ('{"faithfulness": 2.0, "utility": 1}', "bad_score"),
        ('{"faithfulness": true, "utility": 1}', "bad_score"),
        ('{"faithfulness": null, "utility": 1}', "bad_score"),
        ('{"faithfulness": {"score": 2}, "utility": 1}', "bad_score"),
        ('{"faithfulness": [2], "utility": 1}', "bad_score"),
    ],
)
def test_parse_quality_judgement_refuses_with_a_named_kind(reply, kind):
    with pytest.raises(JudgeParseError) as e:
        parse_quality_judgement(reply)
    assert e.value.kind == kind and kind in PARSE_FAILURES
    assert kind in str(e.value) and isinstance(e.value, ValueError)


@FAST
@given(st.text(max_size=60))
def test_parse_quality_judgement_raises_only_judge_parse_error(reply):
    try:
        f, u = parse_quality_judgement(reply)
    except JudgeParseError:
        return
    assert f in (0, 1, 2) and u in (0, 1, 2)


@FAST
@given(
    st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]), st.dictionaries(st.text(max_size=5), st.text(max_size=5))
)
def test_parse_quality_judgement_reads_any_valid_object(f, u, other):
    reply = json.dumps(
        {**{k: v for k, v in other.items() if k not in ("faithfulness", "utility")}, "faithfulness": f, "utility": u}
    )
    assert parse_quality_judgement(reply) == (f, u)


def test_quality_score_all_nine_cells():
    table = {(f, u): quality_score(f, u) for f in range(3) for u in range(3)}
    assert table == {
        (0, 0): 0.0,
        (0, 1): 0.0,
        (0, 2): 0.0,
        (1, 0): 0.25,
        (1, 1): 0.5,
        (1, 2): 0.75,
        (2, 0): 0.5,
        (2, 1): 0.75,
        (2, 2): 1.0,
    }
    for bad in ((3, 0), (0, -1), (1.0, 1), (True, 1)):
        with pytest.raises(ValueError):
            quality_score(*bad)


def test_quality_reward_is_zero_with_nothing_kept_else_the_mean():
    assert quality_reward([]) == 0.0
    assert quality_reward([1.0, 0.5, 0.0]) == 0.5


# ---------------------------------------------------------------------------------------
# The judge through the fake backend.
# ---------------------------------------------------------------------------------------
def scripted(prompt, sampling):
    """The fake judge: reads constructed_memory from the judge prompt and answers by script."""
    memory = json.loads(prompt[-1]["content"])["constructed_memory"]
    if memory.startswith("boom"):
        return ConnectionError("judge server went away")
    if memory.startswith("garbled"):
        return "I think it is faithful."
    f, u = (int(c) for c in memory.split()[0])  # "21 ..." -> f=2, u=1
    return json.dumps({"faithfulness": f, "utility": u, "reason": "scripted"})


class CountingFake(FakeBackend):
    def __init__(self, script):
        super().__init__(script)
        self.generate_calls = 0

    def generate(self, prompts, sampling=JUDGE_SAMPLING):
        self.generate_calls += 1
        return super().generate(prompts, sampling)


def kept(memory: str, pos: int = 1) -> KeptMessage:
    m = Message(pos, "", "", 0, "user", f"source message {pos}", "2023/05/20 (Sat) 02:21")
    return KeptMessage(memory, (m,), "Where do I live?", "2023/06/01", "Lisbon")


def test_judge_sends_the_papers_prompt_once_per_distinct_message_in_one_batch():
    fake = CountingFake(scripted)
    judge = QualityJudge(fake)
    assert judge.score([[kept("22 a"), kept("10 b", 2)], [kept("22 a")], []]) == [(1.0 + 0.25) / 2, 1.0, 0.0]
    assert fake.generate_calls == 1 and judge.calls == len(fake.calls) == 2
    prompt, sampling = fake.calls[0]
    assert sampling.temperature == 0 and sampling.max_tokens == 1024
    assert prompt[0] == {"role": "system", "content": PROMPTS["reward_judge"].system}
    assert prompt[1]["content"] == reward_judge_prompt(
        query_time="2023/06/01",
        query="Where do I live?",
        gold_answer="Lisbon",
        reasoning_chain="",
        sources=kept("22 a").sources,
        compressed_memory="22 a",
    )


def test_judge_records_and_counts_failed_calls_and_unparseable_replies():
    judge = QualityJudge(FakeBackend(scripted))
    scores = judge.score([[kept("21 fine")], [kept("boom")], [kept("21 fine"), kept("garbled", 2)], []])
    assert scores == [0.75, None, None, 0.0]  # never a silent 0
    assert judge.failures == Counter({CALL_ERROR: 1, "invalid_json": 1})
    assert [f["kind"] for f in judge.recent_failures] == [CALL_ERROR, "invalid_json"]
    assert "went away" in judge.recent_failures[0]["detail"]
    assert judge.recent_failures[1]["reply"] == "I think it is faithful."
    assert judge.judge([]) == [] and judge.score([]) == []


def test_reward_with_judge_mixes_action_and_quality_and_leaves_failures_unscored():
    judge = QualityJudge(FakeBackend(scripted))
    reward = LazyMemReward(lam=0.5, judge=judge)
    outs = [
        output(["KEEP", "DROP"], ["21 kept gold", ""]),  # R_act 1, R_qual 0.75
        output(["DROP", "DROP"]),  # R_act 0.085, nothing kept: R_qual 0
        output(["KEEP", "KEEP"], ["22 gold", "boom"]),  # judge call fails: None
        output(["KEEP", "DROP"], ["garbled", ""]),  # unparseable reply: None
        "not json",  # gate: 0, not judged
    ]
    rewards = reward(prompts=[[]] * 5, completions=[conv(o) for o in outs], **columns([1, 2], [True, False], n=5))
    assert rewards[0] == pytest.approx(0.5 * 1.0 + 0.5 * 0.75)
    assert rewards[1] == pytest.approx(0.5 * 0.085)
    assert rewards[2:] == [None, None, 0.0]
    s = reward.last_stats
    assert (s["unscored"], s["judge_failures"], s["judge_calls"]) == (2, 2, 4)
    assert s["r_qual"] == pytest.approx(0.375) and s["strict_gate"] == 0.8
    assert reward.lam == 0.5


def test_judge_sources_and_context_come_from_the_dataset_columns():
    fake = FakeBackend(lambda p, s: '{"faithfulness": 2, "utility": 0}')
    reward = LazyMemReward(lam=0.5, judge=QualityJudge(fake))
    cols = columns(
        [4, 9], [False, True], reasoning_chain=["moved -> lives"], sources=[[source(4), [source(8), source(9)]]]
    )
    assert reward(prompts=[[]], completions=[conv(output(["DROP", "KEEP"], ["", "Lisbon."]))], **cols) == [
        pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    ]
    sent = json.loads(fake.calls[0][0][1]["content"])
    assert sent["referenced_reasoning_chain"] == "moved -> lives" and sent["constructed_memory"] == "Lisbon."
    assert [m["content"] for m in sent["source_messages"]] == ["source message 8", "source message 9"]


# ---------------------------------------------------------------------------------------
# LazyMemReward as TRL calls it.
# ---------------------------------------------------------------------------------------
def test_called_like_trl_with_keyword_arguments_and_logging_hooks():
    metrics, extra = {}, {}
    reward = LazyMemReward()
    outs = [output(["KEEP", "DROP", "DROP"]), output(["DROP", "DROP", "DROP"]), "oops"]
    cols = columns([0, 1, 3], [True, False, False], n=3, question_id=["q1"] * 3, has_gold=[True] * 3)
    rewards = reward(
        prompts=[[{"role": "user", "content": "p"}]] * 3,
        completions=[conv(o) for o in outs],
        completion_ids=[[1, 2]] * 3,
        trainer_state=object(),
        log_metric=lambda name, v: metrics.setdefault(name, v),
        log_extra=lambda col, vals: extra.setdefault(col, vals),
        **cols,
    )
    assert rewards == [1.0, pytest.approx(0.085), 0.0]
    assert metrics["lazymem/strict_gate"] == pytest.approx(2 / 3) and metrics["lazymem/lam"] == 0.0
    assert metrics["lazymem/r_act"] == pytest.approx((1 + 0.085) / 2)
    assert "lazymem/r_qual" not in metrics  # no mean to log without a judge
    assert extra["gate"] == ["ok", "ok", "invalid_json"] and extra["r_qual"] == [None] * 3
    assert reward.__name__ == "lazymem_reward"


def test_settings_and_column_errors_are_clear():
    with pytest.raises(ValueError, match="needs a judge"):
        LazyMemReward(lam=0.5)
    reward = LazyMemReward()
    with pytest.raises(ValueError, match="needs a judge"):
        reward.lam = 0.5  # the curriculum switch without a judge
    assert reward.lam == 0.0
    with pytest.raises(ValueError, match="lam"):
        LazyMemReward(lam=2.0, judge=QualityJudge(FakeBackend()))
    with pytest.raises(ValueError, match="'gold_labels'"):
        reward(prompts=[[]], completions=[conv("[]")], decision_positions=[[]])
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        reward(prompts=[[]], completions=[conv("[]")], decision_positions=[[], []], gold_labels=[[]])
    with pytest.raises(ValueError, match="1 gold labels for 2 decision positions"):
        reward(prompts=[[]], completions=[conv("[]")], decision_positions=[[1, 2]], gold_labels=[[True]])
    switched = LazyMemReward(lam=0.5, judge=QualityJudge(FakeBackend()))
    switched.judge = None  # a judge removed after the switch is caught at the next call
    with pytest.raises(ValueError, match="needs a judge"):
        switched(prompts=[[]], completions=[conv("[]")], decision_positions=[[]], gold_labels=[[]])
    judged = LazyMemReward(lam=0.5, judge=QualityJudge(FakeBackend(scripted)))
    with pytest.raises(ValueError, match="'sources'"):
        judged(
            prompts=[[]],
            completions=[conv(output(["KEEP"]))],
            decision_positions=[[1]],
            gold_labels=[[True]],
            query=["q"],
            query_time=["t"],
            gold_answer=["a"],
            reasoning_chain=[""],
        )


def test_pickles_with_its_settings():
    reward = LazyMemReward(eta=0.8)
    copy = pickle.loads(pickle.dumps(reward))
    assert (copy.eta, copy.lam, copy.__name__) == (0.8, 0.0, "lazymem_reward")
    args = dict(prompts=[[]], completions=[conv(output(["KEEP", "KEEP"]))], **columns([1, 2], [True, False]))
    assert copy(**args) == reward(**args) == [pytest.approx(0.8)]


def test_pickles_with_a_judge_built_from_a_config():
    judge = QualityJudge(LLMConfig(backend="fake", model="judge"))
    reward = LazyMemReward(lam=0.5, judge=judge)
    args = dict(prompts=[[]], completions=[conv(output(["KEEP"]))], **columns([1], [True]))
    assert reward(**args) == [None]  # the echoing fake sends the prompt back: no scores in it
    copy = pickle.loads(pickle.dumps(reward))
    assert copy.judge._client is None and copy.judge.failures == Counter({"missing_field": 1})
    assert copy(**args) == [None] and copy.judge.failures["missing_field"] == 2


@FAST
@given(st.lists(st.booleans(), max_size=6), st.sampled_from([0.0, 0.5, 1.0]), st.data())
def test_every_reward_in_unit_interval_and_positive_only_when_valid(labels, lam, data):
    n = len(labels)
    valid_out = st.lists(st.sampled_from(["KEEP", "DROP"]), min_size=n, max_size=n).map(
        lambda ops: output(ops, [f"{(i * 7) % 3}{i % 3} kept" if o == "KEEP" else "" for i, o in enumerate(ops)])
    )
    any_item = st.fixed_dictionaries(
        {
            "op": st.sampled_from(["KEEP", "DROP", "keep", 1]),
            "compressed_content": st.sampled_from(["", " ", "22 x", 3]),
            "reason": st.just(""),
        }
    )
    any_out = st.lists(any_item, min_size=max(0, n - 1), max_size=n + 1).map(json.dumps)
    outs = data.draw(st.lists(st.one_of(valid_out, any_out, st.text(max_size=20)), min_size=1, max_size=4))
    judge = QualityJudge(FakeBackend(scripted)) if lam > 0 else None
    reward = LazyMemReward(lam=lam, judge=judge)
    positions = list(range(10, 10 + n))
    rewards = reward(
        prompts=[[]] * len(outs), completions=[conv(o) for o in outs], **columns(positions, labels, n=len(outs))
    )
    for raw, r in zip(outs, rewards):
        assert r is not None and 0.0 <= r <= 1.0  # the scripted judge never fails here
        ok = format_gate(raw, positions).ok
        assert ok or r == 0.0  # invalid -> 0
        assert r == 0.0 or ok  # > 0 -> valid


@pytest.mark.slow
def test_trl_calculate_rewards_runs_it():
    """TRL's own GRPOTrainer._calculate_rewards (on a stub trainer) calls it and logs its metrics."""
    import types

    torch = pytest.importorskip("torch")
    trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer")
    from trl.trainer.utils import get_callable_name, is_async_callable

    reward = LazyMemReward()
    assert get_callable_name(reward) == "lazymem_reward" and not is_async_callable(reward)
    metrics, extra = {}, {}
    stub = types.SimpleNamespace(
        accelerator=types.SimpleNamespace(device=torch.device("cpu"), is_main_process=True),
        reward_funcs=[reward],
        reward_processing_classes=[None],
        reward_func_names=["lazymem_reward"],
        state=types.SimpleNamespace(global_step=0),
        args=types.SimpleNamespace(report_to=[]),
        environments=None,
        _log_completion_extra=lambda c, v: extra.setdefault(c, v),
        _log_metric=lambda k, v: metrics.setdefault(k, v),
    )
    prompt = [{"role": "user", "content": "p"}]
    row = {"prompt": prompt, "decision_positions": [0, 1], "gold_labels": [True, False], "question_id": "q"}
    completions = [conv(output(["KEEP", "DROP"])), conv(output(["DROP", "DROP"])), conv("[")]
    out = trl_grpo.GRPOTrainer._calculate_rewards(stub, [row] * 3, [prompt] * 3, completions, [[1]] * 3)
    assert out[:, 0].tolist() == pytest.approx([1.0, 0.085, 0.0])
    assert metrics["lazymem/strict_gate"] == pytest.approx(2 / 3) and extra["gate"][2] == "truncated"


# ---------------------------------------------------------------------------------------
# The reward-ordering diagnostic.
# ---------------------------------------------------------------------------------------
def test_ordering_hand_case_micro_inverts_symmetric_ties_ours_orders():
    keep_all, drop_all = RolloutScore(1.0, 0.0, 1, 5), RolloutScore(0.0, 1.0, 1, 5)
    t = reward_ordering([[keep_all, drop_all]])
    assert (t["Micro"].inversion, t["Micro"].tie) == (1.0, 0.0)  # 1/6 < 5/6
    assert (t["Symmetric"].inversion, t["Symmetric"].tie) == (0.0, 1.0)  # 0.5 = 0.5
    assert (t["Ours"].inversion, t["Ours"].tie) == (0.0, 0.0)  # 0.915 > 0.085
    assert t["Ours"].gold_gap == pytest.approx(0.83) and t["Micro"].gold_gap == pytest.approx(-4 / 6)


def test_ordering_pools_pairs_over_prompts_and_takes_best_rollouts_for_the_gap():
    # prompt 1 (1 gold, 5 non-gold): keep gold + 1 non-gold, keep all, drop all, drop gold + 1 non-gold
    p1 = [(1.0, 0.8, 1, 5), (1.0, 0.0, 1, 5), (0.0, 1.0, 1, 5), (0.0, 0.8, 1, 5)]
    # prompt 2: no rollout keeps all gold -> no gold gap; one conflict pair
    p2 = [(0.5, 0.0, 2, 2), (0.0, 1.0, 2, 2)]
    t = reward_ordering([p1, p2])
    # conflict pairs: p1 (1/.8, 0/1), (1/0, 0/1), (1/0, 0/.8) (1/.8 vs 0/.8 has equal A_n); p2 one
    assert {o.conflict_pairs for o in t.values()} == {4} and {o.gap_prompts for o in t.values()} == {1}
    # Micro: 5/6 vs 5/6 tie, 1/6 < 5/6, 1/6 < 4/6, 1/4 < 2/4
    assert (t["Micro"].inversion, t["Micro"].tie) == (0.75, 0.25)
    # Symmetric: 0.9 > 0.5, 0.5 = 0.5, 0.5 > 0.4, 0.25 < 0.5
    assert (t["Symmetric"].inversion, t["Symmetric"].tie) == (0.25, 0.25)
    assert (t["Ours"].inversion, t["Ours"].tie) == (0.0, 0.0)
    assert t["Ours"].gold_gap == pytest.approx((0.915 + 0.085 * 0.8) - 0.085)
    assert t["Micro"].gold_gap == pytest.approx(0.0)  # 5/6 - 5/6


def test_ordering_accepts_decisions_and_skips_what_cannot_conflict():
    labels = [True, False, False]
    group = [(["KEEP", "KEEP", "KEEP"], labels), (["DROP", "DROP", "DROP"], labels)]
    assert conflict_pairs(group)[0][0] == RolloutScore(1.0, 0.0, 1, 2)
    assert conflict_pairs([(1.0, None, 3, 0), (0.0, None, 3, 0)]) == []  # gold-only: no A_n to conflict
    assert conflict_pairs([(1.0, 1.0, 1, 2), (0.0, 0.5, 1, 2)]) == []  # same direction
    empty = reward_ordering([])
    assert empty["Ours"].inversion is None and empty["Ours"].gold_gap is None
    with pytest.raises(ValueError, match="share a window"):
        reward_ordering([[(1.0, 0.0, 1, 5), (0.0, 1.0, 2, 4)]])
    assert micro_reward(RolloutScore(None, None, 0, 0)) == 1.0


@FAST
@given(st.integers(1, 8), st.integers(1, 10), st.data())
def test_ours_never_inverts_nor_ties_with_at_most_eight_gold(n_g, n_n, data):
    labels = [True] * n_g + [False] * n_n
    rollout = st.lists(st.sampled_from(["KEEP", "DROP"]), min_size=n_g + n_n, max_size=n_g + n_n)
    group = [(ops, labels) for ops in data.draw(st.lists(rollout, min_size=2, max_size=5))]
    ours = reward_ordering([group], eta=ETA)["Ours"]
    assert ours.conflict_pairs == 0 or (ours.inversion, ours.tie) == (0.0, 0.0)
