"""Reasoning models end to end: the reward judge's thinking budget, the
referenced reasoning chain it receives, and the SFT teacher's reasoning kept in the targets.

Every server here is a real OpenAI-compatible HTTP server on loopback (tests/servers.py
``ChatServer`` running ``thinking_model``, a scripted Qwen3-like thinker: one word = one token).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from lazymem.construct import parse_decisions, strip_think
from lazymem.errors import ConfigError, LoadError
from lazymem.llm import Completion, LLMConfig, Sampling, make_client
from lazymem.records import Message
from lazymem.retrieve import RetrievalConfig, WindowConfig
from lazymem.train.quality import JUDGE_SAMPLING, TRUNCATED, KeptMessage, QualityJudge
from lazymem.train.rewards import LazyMemReward
from lazymem.train.rl_data import RLDataConfig, build_rl_prompts
from lazymem.train.sft_data import SFTDataConfig, build_sft_data, load_sources, query_window_pairs, select_questions
from lazymem.train.teacher import gold_target, think_text

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
from servers import ChatServer, thinking_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ANSWER = '{"faithfulness": 2, "utility": 2, "reason": "grounded and answers the query"}'
SYNTH = "synthetic:messages=150,seed=0,histories=2,questions=6"
RETRIEVAL = RetrievalConfig(n=6, dense_model=None, disk_cache=False)
SRC = Message(3, "s#3", "s", 3, "user", "I moved to Lisbon in May.", "2023/05/20")
KEPT = KeptMessage("Moved to Lisbon (May 2023).", (SRC,), "Where do I live?", "2023/06/01", "Lisbon")


def judge_config(url: str, **kw) -> LLMConfig:
    """The paper's judge settings against ``url`` (thinking on, 180 s, 3 retries)."""
    return LLMConfig(
        backend="openai",
        base_url=url,
        model="Qwen/Qwen3-32B",
        chat_template_kwargs={"enable_thinking": True},
        max_retries=0,
        **kw,
    )


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


# 1. the judge's thinking budget ----------------------------------------------------------------------


@pytest.mark.parametrize("parser", [None, "reasoning"])
def test_a_judge_thinking_without_a_budget_is_cut_off_and_counted_as_truncated(parser):
    with ChatServer(thinking_model(ANSWER, think_tokens=2000, parser=parser)) as url:
        judge = QualityJudge(judge_config(url))
        assert judge.score([[KEPT]]) == [None]  # 2,000 thinking tokens under a 1,024-token cap: no answer
    assert dict(judge.failures) == {TRUNCATED: 1}  # not "invalid_json" / "empty": the budget's fault
    assert judge.recent_failures[-1]["finish_reason"] == "length"


@pytest.mark.parametrize("parser", [None, "reasoning", "reasoning_content"])
def test_a_two_phase_thinking_budget_gives_the_judge_a_parseable_answer(parser):
    server = ChatServer(thinking_model(ANSWER, think_tokens=2000, parser=parser))
    with server as url:
        cfg = judge_config(url, thinking_budget=512)
        judge = QualityJudge(cfg)
        assert judge.score([[KEPT]]) == [1.0] and not judge.failures and judge.calls == 1
        (out,) = make_client(cfg).generate([KEPT.messages()], JUDGE_SAMPLING)
    think, answer = server.requests[:2]
    assert len(server.requests) == 4  # two phases per judgement
    # phase 1: think for at most the budget, stopping where the trace closes
    assert think["max_tokens"] == 512 and think["stop"] == ["</think>"]
    assert think["chat_template_kwargs"] == {"enable_thinking": True} and "continue_final_message" not in think
    assert think["messages"] == KEPT.messages()
    # phase 2: the trace (cut at the budget) closed, the model continues with the answer only
    prefill = answer["messages"][-1]
    assert answer["messages"][:-1] == KEPT.messages() and prefill["role"] == "assistant"
    assert prefill["content"] == "<think>\n" + " ".join(f"step{i}" for i in range(511)) + "\n</think>\n\n"
    assert answer["continue_final_message"] is True and answer["add_generation_prompt"] is False
    assert answer["max_tokens"] == 1024 - 512 and "stop" not in answer
    assert out.ok and out.text == ANSWER and out.finish_reason == "stop"
    assert out.reasoning == " ".join(f"step{i}" for i in range(511))  # 512 tokens: <think> + 511 steps
    assert out.completion_tokens == 512 + len(ANSWER.split(" "))


def test_a_thinker_that_closes_its_trace_early_answers_in_the_second_phase():
    server = ChatServer(thinking_model(ANSWER, think_tokens=30))
    with server as url:
        (out,) = make_client(judge_config(url, thinking_budget=512)).generate([KEPT.messages()], JUDGE_SAMPLING)
    assert out.text == ANSWER and out.reasoning == " ".join(f"step{i}" for i in range(30))
    # the tokens phase 1 used: <think>, 30 steps and the </think> it stopped at (counted, not returned)
    assert server.requests[1]["max_tokens"] == 1024 - 32


def test_server_mode_sends_vllms_thinking_token_budget_in_one_request():
    server = ChatServer(thinking_model(ANSWER, think_tokens=2000, parser="reasoning"))
    with server as url:
        judge = QualityJudge(judge_config(url, thinking_budget=512, thinking_budget_mode="server"))
        assert judge.score([[KEPT]]) == [1.0] and not judge.failures
    (request,) = server.requests
    assert request["thinking_token_budget"] == 512 and request["max_tokens"] == 1024


def test_thinking_budget_settings_are_checked_and_enter_the_cache_identity_only_when_set():
    base = dict(backend="openai", base_url="http://127.0.0.1:1/v1", model="m")
    assert "thinking_budget" not in LLMConfig(**base).identity()  # old caches keep hitting
    assert LLMConfig(**base, thinking_budget=512).identity()["thinking_budget"] == [512, "two_phase"]
    for bad, match in [
        (dict(thinking_budget=0), "thinking_budget"),
        (dict(thinking_budget=True), "thinking_budget"),
        (dict(thinking_budget_mode="budget"), "thinking_budget_mode"),
        (dict(backend="transformers", base_url=None, thinking_budget=8), "backend 'openai' only"),
    ]:
        with pytest.raises(ConfigError, match=match):
            LLMConfig(**{**base, **bad})
    with pytest.raises(ConfigError, match="leaves none of Sampling.max_tokens"):
        make_client(LLMConfig(**base, thinking_budget=512)).generate(["q"], Sampling(max_tokens=512))


def test_the_paper_judge_config_carries_the_thinking_budget():
    recipe = yaml.safe_load(
        (ROOT / "configs" / "recipes" / "lazymem-4b-paper" / "grpo.yaml").read_text(encoding="utf-8")
    )
    judge = LLMConfig.from_dict(recipe["judge"])
    assert (judge.model, judge.thinking_budget, judge.thinking_budget_mode) == ("Qwen/Qwen3-32B", 512, "two_phase")
    assert judge.chat_template_kwargs == {"enable_thinking": True}
    assert (judge.timeout, judge.max_retries) == (180, 3)
    assert (JUDGE_SAMPLING.temperature, JUDGE_SAMPLING.max_tokens) == (0.0, 1024)


# 3. a server's reasoning field is kept, cached, and put in SFT targets ------------------------------


@pytest.mark.parametrize("parser", ["reasoning", "reasoning_content"])
def test_the_client_keeps_a_servers_reasoning_field_through_the_cache(parser, tmp_path):
    with ChatServer(thinking_model("[]", think_tokens=5, parser=parser)) as url:
        cfg = LLMConfig(backend="openai", base_url=url, model="deepseek-reasoner", cache_dir=str(tmp_path))
        first = make_client(cfg).generate(["q"])[0]
        again = make_client(cfg).generate(["q"])[0]
    assert (first.text, first.reasoning) == ("[]", "step0 step1 step2 step3 step4") and not first.cached
    assert again.cached and (again.text, again.reasoning) == (first.text, first.reasoning)


def test_completions_without_reasoning_store_as_before_and_old_entries_load():
    c = Completion("[]", 3, 1, 0.5, model="m", finish_reason="stop")
    assert "reasoning" not in c.to_dict() and Completion.from_dict(c.to_dict()) == c
    old = {
        "text": "[]",
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "latency_s": 0.5,
        "cached": False,
        "error": None,
        "model": "m",
        "finish_reason": "stop",
    }  # a cache entry written before the field existed
    assert Completion.from_dict(old).reasoning is None
    r = Completion("[]", 3, 1, 0.5, reasoning="why")
    assert Completion.from_dict(r.to_dict()) == r


def _teacher_script(cfg) -> dict[str, str]:
    """Each window's gold target, by the window's user message (what the scripted teacher answers)."""
    datasets, _ = load_sources(cfg)
    selected, _ = select_questions(datasets, cfg)
    return {
        p.prompt.messages[-1]["content"]: gold_target(p.prompt, p.history)
        for pairs in query_window_pairs(datasets, selected, cfg)
        for p in pairs
    }


@pytest.mark.parametrize("keep", [True, False])
def test_sft_targets_keep_the_teachers_reasoning_before_the_array(tmp_path, keep):
    teacher = thinking_model(
        lambda body: script[body["messages"][-1]["content"]], think_tokens=12, parser="reasoning_content"
    )  # DeepSeek's API: the trace beside the content
    with ChatServer(teacher) as url:
        cfg = SFTDataConfig(
            datasets=(SYNTH,),
            retrieval=RETRIEVAL,
            window=WindowConfig(),
            questions=None,
            teacher=LLMConfig(backend="openai", base_url=url, model="deepseek-reasoner"),
            teacher_reasoning=keep,
            balance=False,
            output_dir=str(tmp_path / "sft"),
            progress=False,
        )
        script = _teacher_script(cfg)
        card = build_sft_data(cfg)
    rows = read_jsonl(tmp_path / "sft" / "sft.jsonl")
    trace = " ".join(f"step{i}" for i in range(12))
    assert card["instances"] == len(rows) == len(script) > 0 and card["discarded"] == 0
    assert card["targets_with_think"] == (len(rows) if keep else 0)
    for r in rows:
        target = r["completion"][0]["content"]
        assert target.startswith(f"<think>\n{trace}\n</think>\n\n[") == keep == r["has_think"]
        # the gate (after strip_think, as inference and the GRPO reward do) reads the decisions
        assert parse_decisions(strip_think(target), r["decision_positions"]).ok
    ann = read_jsonl(tmp_path / "sft" / "annotations.jsonl")
    assert all(a["reasoning"] == trace and a["output"].startswith("[") for a in ann)


# 2. RL rows carry the referenced reasoning chain, and the judge receives it -------------------------


def test_rl_rows_carry_the_teachers_reasoning_chain_and_the_card_counts_empty_ones(tmp_path, caplog):
    sft = SFTDataConfig(
        datasets=(SYNTH,),
        retrieval=RETRIEVAL,
        teacher="gold-trace",
        questions=None,
        balance=False,
        output_dir=str(tmp_path / "sft"),
        progress=False,
    )
    build_sft_data(sft)
    ann = read_jsonl(tmp_path / "sft" / "annotations.jsonl")
    best = {}
    for a in ann:  # a question's chain: its ok window with the most gold messages, then the first
        if a["status"] == "ok" and a["n_gold"]:
            key = (-a["n_gold"], a["window_index"])
            if a["question_id"] not in best or key < best[a["question_id"]][0]:
                best[a["question_id"]] = (key, think_text(a["output"]))
    assert best

    common = dict(datasets=(SYNTH,), retrieval=RETRIEVAL, size=None, progress=False)
    card = build_rl_prompts(
        RLDataConfig(**common, reasoning_chains=str(tmp_path / "sft"), output_dir=str(tmp_path / "rl"))
    )
    rows = read_jsonl(tmp_path / "rl" / "rl_prompts.jsonl")
    for r in rows:
        assert r["reasoning_chain"] == best.get(r["question_id"], (None, ""))[1]
    with_chain = sum(bool(r["reasoning_chain"]) for r in rows)
    assert with_chain > 0
    chains = card["reasoning_chains"]
    assert (chains["rows_with_chain"], chains["rows_empty"]) == (with_chain, len(rows) - with_chain)
    assert chains["source"] == str(tmp_path / "sft") and len(chains["source_sha256"]) == 64
    assert "Referenced reasoning chains" in (tmp_path / "rl" / "card.md").read_text(encoding="utf-8")

    # without a chain source every row is empty: counted in the card and logged, not silent
    with caplog.at_level(logging.WARNING, logger="lazymem.train"):
        bare = build_rl_prompts(RLDataConfig(**common, output_dir=str(tmp_path / "rl_bare")))
    assert bare["reasoning_chains"]["rows_empty"] == bare["size"] and bare["reasoning_chains"]["empty_share"] == 1.0
    assert "no referenced reasoning chain" in caplog.text
    with pytest.raises(LoadError, match="annotations.jsonl"):
        build_rl_prompts(
            RLDataConfig(**common, reasoning_chains=str(tmp_path / "nowhere"), output_dir=str(tmp_path / "rl_bad"))
        )

    # the chain reaches the judge: a rollout that keeps the gold message is judged with it
    row = next(r for r in rows if r["has_gold"] and r["reasoning_chain"])
    seen = []

    def judge_reply(prompt, sampling):
        seen.append(json.loads(prompt[-1]["content"]))
        return ANSWER

    from lazymem.llm.fake import FakeBackend

    reward = LazyMemReward(lam=0.5, judge=QualityJudge(FakeBackend(judge_reply)))
    keep = [
        {"op": "KEEP" if g else "DROP", "compressed_content": s["content"] if g else "", "reason": ""}
        for g, s in zip(row["gold_labels"], row["sources"])
    ]
    columns = {
        k: [row[k]]
        for k in (
            "decision_positions",
            "gold_labels",
            "query",
            "query_time",
            "gold_answer",
            "reasoning_chain",
            "sources",
        )
    }
    (score,) = reward(
        prompts=[row["prompt"]], completions=[[{"role": "assistant", "content": json.dumps(keep)}]], **columns
    )
    assert score is not None and seen
    assert all(s["referenced_reasoning_chain"] == row["reasoning_chain"] for s in seen)
