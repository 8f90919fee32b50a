"""``lazymem eval-table --smoke`` on the paper's Table 1 configs: every cell's settings exactly, the
served models replaced by a scripted Qwen3-family server on a loopback port (the real Qwen3 tokenizer
and chat template), a question a set; it passes on the shipped configs and fails on what a real run
would trip on (here: the judge left thinking, as the configs were before they turned it off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lazymem.eval.smoke import SmokeFailed, run_smoke
from lazymem.eval.table import EvalTableConfig
from lazymem.llm.scripted import QWEN3_MAX_MODEL_LEN, ScriptedQwen3, ScriptedServer
from lazymem.train.recipe import build_recipe
from lazymem.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "locomo": ROOT / "configs" / "tables" / "paper_table1_locomo.yaml",
    "longmemeval": ROOT / "configs" / "tables" / "paper_table1_longmemeval.yaml",
}
SHARED = ROOT.parent / "shared" / "data"
needs_data = pytest.mark.skipif(
    not (SHARED / "locomo" / "locomo10.json").exists()
    or not (SHARED / "longmemeval" / "s_fragment_3haystacks.json").exists(),
    reason="../shared/data (LoCoMo, LongMemEval_S haystacks) is not beside the checkout",
)


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the configs name configs/ and ../shared/data relative to the checkout


def table(name: str, edit=None, **keys) -> EvalTableConfig:
    data = read_mapping(CONFIGS[name])
    if edit:
        edit(data)
    return build_recipe(EvalTableConfig, {**data, **keys}, str(CONFIGS[name]))


def test_the_scripted_family_counts_with_qwen3s_template_and_refuses_past_the_context():
    family = ScriptedQwen3(max_model_len=64)
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Where did I move?"}],
        "max_tokens": 8,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    status, ok = family.complete(body)
    assert status == 200 and ok["usage"]["prompt_tokens"] == family.prompt_tokens(body)
    thinking = family.prompt_tokens({**body, "chat_template_kwargs": {}})
    assert thinking != ok["usage"]["prompt_tokens"]  # Qwen3's template differs with thinking off
    assert ok["choices"][0]["finish_reason"] == "length" or "<think>" not in ok["choices"][0]["message"]["content"]
    status, refused = family.complete({**body, "max_tokens": 60})
    assert status == 400 and "maximum context length is 64 tokens" in refused["message"]
    status, cut = ScriptedQwen3().complete({**body, "chat_template_kwargs": {}, "max_tokens": 10})
    assert cut["choices"][0]["finish_reason"] == "length" and cut["choices"][0]["message"]["content"] is None
    assert cut["choices"][0]["message"]["reasoning"]  # the reasoning parser's field, as vLLM fills it
    assert QWEN3_MAX_MODEL_LEN == 40960


def test_the_scripted_server_answers_over_http():
    from lazymem.llm import LLMConfig
    from lazymem.llm.factory import make_client

    with ScriptedServer() as url:
        c = make_client(LLMConfig(backend="openai", model="Qwen/Qwen3-32B", base_url=url, max_retries=0))
        out = c.generate([[{"role": "user", "content": "Hello"}]])[0]
    assert out.error is None and out.reasoning and out.text and "<think>" not in out.text


@needs_data
def test_the_smoke_fails_on_a_judge_left_thinking(tmp_path, capsys):
    """As the Table 1 configs were: the judge's chat_template_kwargs unset, so Qwen3 thinks and the
    LongMemEval judge's 10 tokens hold no verdict. The smoke run says so; a real run counted it wrong."""

    def thinking_judge(data):
        del data["sets"]["longmemeval_test"]["pipeline.judge"]["chat_template_kwargs"]

    with pytest.raises(SmokeFailed, match="no verdict"):
        run_smoke(
            table("longmemeval", thinking_judge, only=["oracle_turn"]), output_dir=str(tmp_path / "s"), progress=False
        )
    out = capsys.readouterr().out
    assert "FAIL  longmemeval_test/oracle_turn" in out and "pipeline.judge" in out


@needs_data
@pytest.mark.slow
def test_the_longmemeval_table1_smoke_passes(tmp_path):
    report = run_smoke(table("longmemeval"), output_dir=str(tmp_path / "s"), progress=False)
    cells = json.loads((tmp_path / "s" / "table.json").read_text())["longmemeval_test"]
    assert set(cells) == set(read_mapping(CONFIGS["longmemeval"])["rows"]) and not report["failed"]
    assert all(c["questions"] == 1 and c["judge_errors"] == 0 for c in cells.values())
    replaced = {r["setting"] for r in report["replaced"]}
    assert {
        "pipeline.answer",
        "pipeline.judge",
        "pipeline.mpm",
        "pipeline.retrieval.dense_model",
        "pipeline.retrieval.reranker",
        "dataset",
        "split",
    } <= replaced
    assert any("says correct to the gold answer and wrong to a wrong one" in p for p in report["passed"])
    assert "MemT: LJ 0.61" in (tmp_path / "s" / "table.md").read_text()


@needs_data
@pytest.mark.slow
def test_the_locomo_table1_smoke_passes(tmp_path):
    """Every row but LazyMem-135M (in process: ~10 s a window on 2 cores, 50 windows a question; its
    real model runs in tests/test_lazymem135m.py and tests/test_grounded.py)."""
    rows = [r for r in read_mapping(CONFIGS["locomo"])["rows"] if r != "lazymem_135m"]
    report = run_smoke(table("locomo", only=rows), output_dir=str(tmp_path / "s"), progress=False)
    assert not report["failed"]
    assert any(p.startswith("locomo_paper/lazymem_4b: MPM outputs the gate reads: 1.0") for p in report["passed"])
    assert any(p.startswith("locomo_paper/mem0: 1 judged") for p in report["passed"])


def test_an_answerers_reasoning_field_is_kept_beside_the_answer(tmp_path, monkeypatch):
    """vLLM with --reasoning-parser returns the trace in message.reasoning, not inline: the record keeps
    it as answer_think (and the NanoMemory pruner's as prune_think), as it keeps an inline trace."""
    from lazymem.eval import EvalConfig, evaluate
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache"))
    with ScriptedServer() as url:
        served = {"backend": "openai", "model": "Qwen/Qwen3-32B", "base_url": url, "max_retries": 0}
        cfg = EvalConfig.from_dict(
            {
                "dataset": "synthetic:messages=60,seed=1,histories=1,questions=3",
                "llm_cache": False,
                "limit": 2,
                "pipeline": {
                    "method": "rag",
                    "retrieval": {"dense_model": None, "n": 3},
                    "answer": served,
                    "mpm": served,
                },
            }
        )
        evaluate(cfg, tmp_path / "run", progress=False)
    recs = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert all(
        r["answer_think"].startswith("Okay, let me look at this.") and "<think>" not in r["answer"] for r in recs
    )
