"""The paper's Table 1 judges as a user runs them: a Qwen3-like thinker (it thinks unless told not to)
behind a real OpenAI-compatible server gives the right verdict on a correct and a wrong answer, for
both benchmarks; a reply with no verdict is an error counted per run and per table cell, never a
silent "wrong"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lazymem.eval import EvalConfig
from lazymem.eval.judge import judge_answer
from lazymem.eval.scoring import summarize
from lazymem.eval.table import EvalTableConfig, table_markdown, table_row
from lazymem.llm.factory import make_client
from lazymem.llm.scripted import scripted_reply
from lazymem.records import Question
from lazymem.train.recipe import load_recipe
from tests.servers import ChatServer, thinking_model

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "locomo": ROOT / "configs" / "tables" / "paper_table1_locomo.yaml",
    "longmemeval": ROOT / "configs" / "tables" / "paper_table1_longmemeval.yaml",
}
QUESTIONS = {
    "longmemeval": Question("q1", "multi-session", "Which city did I move to last spring?", "Lisbon", "h"),
    "locomo": Question("conv-49:q3", "single-hop", "Which city did Evan move to?", "Lisbon", "h", category=4),
}


def verdict(body: dict) -> str:
    """The family's verdict on the judge prompt (the gold answer's words in the response)."""
    return scripted_reply(body["messages"])


def resolved_judge(name: str) -> EvalConfig:
    """A Table 1 cell's config, resolved from the shipped YAML as `lazymem eval-table` resolves it."""
    table = load_recipe(EvalTableConfig, CONFIGS[name])
    set_name = next(iter(table.sets))
    return EvalConfig.from_yaml(ROOT / table.base, table.cell_overrides(set_name, "rag_top50"))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("parser", [None, "reasoning"])  # vLLM without / with --reasoning-parser qwen3
@pytest.mark.parametrize("name", ["longmemeval", "locomo"])
def test_the_table1_judge_gives_the_right_verdicts_on_a_qwen3_that_thinks_by_default(name, parser):
    cfg = resolved_judge(name)
    q = QUESTIONS[name]
    with ChatServer(thinking_model(verdict, think_tokens=2000, parser=parser)) as url:
        judge = make_client(dataclasses.replace(cfg.pipeline.judge, base_url=url, cache_dir=None, max_retries=0))
        right = judge_answer(
            judge,
            q,
            "Evan moved to Lisbon in April.",
            cfg.judge,
            seed=cfg.seed,
            max_tokens=cfg.judge_max_tokens,
            json_mode=cfg.judge_json_mode,
        )
        wrong = judge_answer(
            judge,
            q,
            "He moved to Oslo.",
            cfg.judge,
            seed=cfg.seed,
            max_tokens=cfg.judge_max_tokens,
            json_mode=cfg.judge_json_mode,
        )
    assert (right["label"], right["error"]) == (True, None), right["response"]
    assert (wrong["label"], wrong["error"]) == (False, None), wrong["response"]


@pytest.mark.parametrize("name", ["longmemeval", "locomo"])
def test_a_judge_reply_with_no_verdict_is_an_error_shown_in_its_cell(name):
    cfg = resolved_judge(name)
    q = QUESTIONS[name]
    thinking_on = dataclasses.replace(cfg.pipeline.judge, chat_template_kwargs=None, cache_dir=None, max_retries=0)
    with ChatServer(thinking_model(verdict, think_tokens=2000)) as url:
        got = judge_answer(
            make_client(dataclasses.replace(thinking_on, base_url=url)),
            q,
            "Lisbon",
            cfg.judge,
            max_tokens=cfg.judge_max_tokens,
            json_mode=cfg.judge_json_mode,
        )
    assert got["label"] is None and got["unparseable"] and "no verdict" in got["error"]
    assert "enable_thinking: false" in got["error"] and got["output"]["finish_reason"] == "length"
    record = {
        "question_id": q.id,
        "method": "rag",
        "status": "error",
        "error": f"judge: {got['error']}",
        "question": {"id": q.id, "type": q.type},
        "judge": got,
    }
    summary = summarize([record], cfg.judge, selected=[q.id])
    assert summary["accuracy"]["judge_no_verdict"] == 1 and summary["accuracy"]["n"] == 0
    row = table_row(summary)
    assert row["judge_errors"] == 1 and "1 judge replies with no verdict" in row["note"]
    assert "1 judge replies with no verdict" in table_markdown({"s": {"rag": row}})


def test_a_longmemeval_reply_is_read_after_its_think_trace():
    """The official rule ('yes' in the reply) on the reply after the trace: a trace that says yes does
    not make a "no" verdict correct."""
    q = QUESTIONS["longmemeval"]
    with ChatServer(lambda body: "<think> maybe yes, maybe not </think> no") as url:
        from lazymem.llm import LLMConfig

        got = judge_answer(
            make_client(LLMConfig(backend="openai", model="m", base_url=url, max_retries=0)),
            q,
            "Oslo",
            "longmemeval",
            max_tokens=64,
        )
    assert got["label"] is False and got["error"] is None
