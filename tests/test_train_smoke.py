"""`lazymem train ... --smoke`: the paper's training configs end to end on CPU, offline, with tiny stand-ins
for their models and data, failing on what a real run would trip on (lazymem/train/smoke.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from lazymem.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "configs" / "recipes" / "lazymem-4b-paper"


@pytest.fixture(autouse=True)
def _qwen3_tokenizer():
    from lazymem.llm.tokens import qwen3_tokenizer_dir

    if not (qwen3_tokenizer_dir() / "tokenizer.json").is_file():
        pytest.skip("Qwen3 tokenizer not fetched (scripts/fetch_qwen3_tokenizer.sh)")


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


# --- the stand-ins ----------------------------------------------------------------------------------------------


def test_the_scripted_thinker_behaves_as_a_thinking_server_does():
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer

    model = ScriptedQwen3(
        lambda messages: ("weighing the two messages", "VERDICT"), think_tokens=40, reasoning_field=None
    )
    ask = [{"role": "user", "content": "Judge this."}]
    with ScriptedServer(model) as url:
        full = _post(url, {"model": "m", "messages": ask})
        text = full["choices"][0]["message"]["content"]
        assert full["choices"][0]["finish_reason"] == "stop" and text.startswith("<think>\nweighing the two")
        assert text.endswith("</think>\n\nVERDICT") and full["usage"]["completion_tokens"] > 40
        off = _post(url, {"model": "m", "messages": ask, "chat_template_kwargs": {"enable_thinking": False}})
        assert off["choices"][0]["message"]["content"] == "VERDICT"
        cut = _post(url, {"model": "m", "messages": ask, "max_tokens": 10})
        assert cut["choices"][0]["finish_reason"] == "length" and cut["usage"]["completion_tokens"] == 10
        stopped = _post(url, {"model": "m", "messages": ask, "stop": ["</think>"]})["choices"][0]
        assert "</think>" not in stopped["message"]["content"] and stopped["finish_reason"] == "stop"
        cont = _post(
            url,
            {
                "model": "m",
                "continue_final_message": True,
                "add_generation_prompt": False,
                "messages": ask + [{"role": "assistant", "content": "<think>\nx\n</think>\n\n"}],
            },
        )
        assert cont["choices"][0]["message"]["content"] == "VERDICT"
        budget = _post(url, {"model": "m", "messages": ask, "thinking_token_budget": 5})
        assert budget["usage"]["completion_tokens"] < full["usage"]["completion_tokens"]
    teacher = ScriptedQwen3(
        lambda messages: ("Message 1 -> DROP", "[]"), think_tokens=None, reasoning_field="reasoning_content"
    )
    with ScriptedServer(teacher) as url:
        message = _post(url, {"model": "m", "messages": ask})["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == ("[]", "Message 1 -> DROP")


def test_the_paper_judge_reaches_a_verdict_only_through_its_thinking_budget():
    """The scripted 32B judge thinks 1,500 tokens: over the 1,024-token reply, so grpo.yaml's judge
    (two-phase, 512-token budget) gets its verdict while the same judge without a budget is cut off."""
    import dataclasses

    import yaml

    from lazymem.llm import LLMConfig
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer
    from lazymem.records import Message
    from lazymem.train.quality import KeptMessage, QualityJudge
    from lazymem.train.smoke_models import judge_verdict

    src = Message(3, "s#3", "s", 3, "user", "I moved to Lisbon in May.", "2023/05/20")
    kept = KeptMessage("moved to Lisbon in May", (src,), "Where do I live?", "2023/06/01", "Lisbon", "She moved.")
    paper = LLMConfig.from_dict(yaml.safe_load((TRAIN / "grpo.yaml").read_text())["judge"])
    thinker = ScriptedQwen3(judge_verdict, think_tokens=1500, reasoning_field=None)
    with ScriptedServer(thinker) as url:
        judge = QualityJudge(dataclasses.replace(paper, base_url=url, max_retries=0))
        assert judge.judge([kept]) == [(2, 2)] and not judge.failures
        (first, cut), (second, _) = thinker.calls
        assert (first["max_tokens"], first["stop"], cut) == (512, ["</think>"], "length")
        assert second["continue_final_message"] and second["max_tokens"] == 512
        unbudgeted = QualityJudge(dataclasses.replace(paper, base_url=url, max_retries=0, thinking_budget=None))
        assert unbudgeted.judge([kept]) == [None] and dict(unbudgeted.failures) == {"truncated": 1}


def test_constrained_rollouts_write_valid_arrays_whose_ops_the_model_picks(tmp_path):
    import torch

    from lazymem.construct import window_prompts
    from lazymem.records import History, Message, Question
    from lazymem.retrieve import build_windows
    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.rewards import format_gate
    from lazymem.train.smoke_models import constrain_generation, tiny_policy

    texts = ["I moved to Lisbon.", "Nice!", 'What about "work"?']
    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    q = Question("q", "single-session-user", "Where do I live?", "Lisbon", "h", "2023/06/01", evidence=(0,))
    (prompt,) = window_prompts(h, q, build_windows(h, [1], gold=q.evidence))
    tiny = tiny_policy(tmp_path / "tiny")
    model, tok = load_policy(str(tiny)), load_tokenizer(str(tiny))
    constrain_generation(model, tok)
    enc = tok(
        [tok.apply_chat_template(list(prompt.messages), tokenize=False, add_generation_prompt=True)] * 8,
        return_tensors="pt",
        add_special_tokens=False,
    )
    torch.manual_seed(0)
    out = model.generate(**enc, do_sample=True, temperature=0.9, top_p=0.95, max_new_tokens=3072)
    replies = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    verdicts = [format_gate(r, prompt.decision_positions) for r in replies]
    assert all(v.ok for v in verdicts), replies
    ops = {tuple(d.op for d in v.decisions) for v in verdicts}
    assert len(ops) > 1  # sampled, not scripted: the random policy's own choices differ between rollouts
    keeps = [d.content for v in verdicts for d in v.decisions if d.op == "KEEP"]
    assert keeps and all(any(k == " ".join(t.split()[:10]) for t in texts) for k in keeps)  # verbatim spans


def test_the_smoke_finds_the_data_config_that_writes_a_recipes_data():
    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.rl_data import RLDataConfig
    from lazymem.train.sft import SFTRecipe
    from lazymem.train.smoke import producer

    def found(path, recipe):
        hit = producer(path, str(TRAIN / recipe))
        return hit and hit[0].name

    sft, grpo = SFTRecipe.from_yaml(TRAIN / "sft.yaml"), GRPORecipe.from_yaml(TRAIN / "grpo.yaml")
    assert found(sft.data, "sft.yaml") == "data_sft.yaml"
    assert found(grpo.data, "grpo.yaml") == "data_rl.yaml"
    assert found(grpo.validation_data, "grpo.yaml") == "data_rl_val.yaml"
    chains = RLDataConfig.from_yaml(str(TRAIN / "data_rl.yaml")).reasoning_chains  # a folder, not a file
    assert found(chains, "data_rl.yaml") == "data_sft.yaml"
    assert found(str(Path(sft.data).with_name("elsewhere") / "sft.jsonl"), "sft.yaml") is None


def test_compact_log_probs_switches_trls_cpu_path_and_restores_it():
    pytest.importorskip("trl")
    import torch
    from trl.trainer import utils

    from lazymem.train.smoke_models import compact_log_probs

    original = utils._use_triton
    with compact_log_probs() as switched:
        assert switched and utils._use_triton(torch.device("cpu"))
    assert utils._use_triton is original


def test_smoke_refuses_stages_it_has_no_stand_ins_for(tmp_path):
    from lazymem.train.smoke import run_smoke

    with pytest.raises(ConfigError, match="--smoke runs sft-data, rl-data, sft, grpo"):
        run_smoke("release", {}, "x.yaml", root=tmp_path / "s")


# --- the smoke runs, as a user types them -----------------------------------------------------------------------


def _smoke(tmp_path, kind: str, config: str, *sets: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lazymem.cli", "train", kind, "--config", str(TRAIN / config), "--smoke"]
    cmd += [a for s in sets for a in ("--set", s)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _out(tmp_path, kind: str, config: str) -> Path:
    """The smoke's folder: runs/smoke/<kind>-<recipe>-<config name> under the directory it ran in."""
    return tmp_path / "runs" / "smoke" / f"{kind}-lazymem-4b-paper-{Path(config).stem}"


def _record(tmp_path, kind: str, config: str) -> dict:
    return json.loads((_out(tmp_path, kind, config) / "smoke.json").read_text())


@pytest.mark.slow
@pytest.mark.slow
def test_sft_data_smoke_runs_the_paper_data_config(tmp_path):
    r = _smoke(tmp_path, "sft-data", "data_sft.yaml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for row in (
        "| retrieval.dense_model | Qwen/Qwen3-Embedding-8B | minilm-offline",
        "| retrieval.reranker |",
        "| teacher.base_url | https://api.deepseek.com/v1 | http://127.0.0.1:",
        "| questions | 100 | 4 |",
        "ok   reasoning kept",
        "ok   within max input",
        "teacher_reasoning=True",
        "smoke passed",
    ):
        assert row in r.stdout, row
    rec = _record(tmp_path, "sft-data", "data_sft.yaml")
    assert rec["failures"] == [] and [s["stage"] for s in rec["sections"]] == ["sft-data"]
    data = _out(tmp_path, "sft-data", "data_sft.yaml") / "lazymem-4b-paper-data_sft-data"
    card = json.loads((data / "card.json").read_text())
    assert card["over_max_length"]["limit"] == 8192 and card["over_max_length"]["total"] == 0
    rows = [json.loads(line) for line in open(data / "sft.jsonl")]
    assert rows and all(r["completion"][0]["content"].startswith("<think>\nMessage 1:") for r in rows)


@pytest.mark.slow
def test_rl_data_smoke_runs_the_paper_data_config_with_its_reasoning_chains(tmp_path):
    r = _smoke(tmp_path, "rl-data", "data_rl.yaml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "| size | 10000 | 16 |" in r.stdout and "max_prompt_tokens=8192" in r.stdout
    assert "| tokenizer | Qwen/Qwen3-4B | null (the Qwen3 tokenizer" in r.stdout
    rec = _record(tmp_path, "rl-data", "data_rl.yaml")
    assert [s["stage"] for s in rec["sections"]] == ["sft-data", "rl-data"] and rec["failures"] == []
    card = _out(tmp_path, "rl-data", "data_rl.yaml") / "lazymem-4b-paper-data_rl-data" / "card.json"
    card = json.loads(card.read_text())
    assert card["overlong_prompts"]["limit"] == 8192 and card["reasoning_chains"]["rows_with_chain"] > 0


@pytest.mark.slow
def test_sft_smoke_trains_the_paper_recipe_and_every_weight_moves(tmp_path):
    r = _smoke(tmp_path, "sft", "sft.yaml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for line in (
        "| base | Qwen/Qwen3-4B |",
        "| max_steps | -1 | 2",
        "learning_rate=5e-06",
        "dtype=float32",
        "gradient_accumulation_steps=8",
        "bf16=True",
        "ok   weights moved: 24 of 24",
        "ok   reasoning trained",
        "ok   checkpoint reloads",
    ):
        assert line in r.stdout, line
    assert [s["stage"] for s in _record(tmp_path, "sft", "sft.yaml")["sections"]] == ["sft-data", "sft"]


@pytest.mark.slow
def test_sft_smoke_fails_when_the_weights_do_not_move(tmp_path):
    r = _smoke(tmp_path, "sft", "sft.yaml", "learning_rate=1.0e-30", "gradient_accumulation_steps=1")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    # at lr 1e-30 only the embedding's zero padding row can move (1e-30 is a float32 number; 0.02 + 1e-30 is not)
    assert "FAIL weights moved: 1 of 24 trainable tensors changed; unchanged: ['model.layers.0" in r.stdout
    assert "smoke FAILED" in r.stdout
    assert _record(tmp_path, "sft", "sft.yaml")["failures"]


@pytest.mark.slow
def test_grpo_smoke_runs_the_paper_recipe_with_its_judge_and_every_weight_moves(tmp_path):
    r = _smoke(tmp_path, "grpo", "grpo.yaml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for line in (
        "| use_vllm | True | false: TRL's in-process generation",
        "| judge.base_url | http://127.0.0.1:8001/v1",
        "num_generations=8",
        "temperature=0.9",
        "top_p=0.95",
        "max_completion_length=3072",
        "beta=0.001",
        "epsilon=0.2",
        "loss_type=dapo",
        "learning_rate=1e-06",
        "judge.thinking_budget=512",
        "ok   weights moved: 24 of 24",
        "ok   reward varies",
        "ok   judge verdicts",
        "failures none",
        "ok   reasoning in judge prompts",
        "ok   checkpoint reloads",
    ):
        assert line in r.stdout, line
    rec = _record(tmp_path, "grpo", "grpo.yaml")
    assert [s["stage"] for s in rec["sections"]] == ["sft-data", "rl-data", "rl-data", "grpo"]
    grpo = _out(tmp_path, "grpo", "grpo.yaml") / "grpo"
    result = json.loads((grpo / "train_result.json").read_text())
    assert result["curriculum"]["switched_at"] == 0 and result["global_step"] == 2
    assert (grpo / "checkpoint-2" / "curriculum.json").is_file()


def test_doctests():
    import doctest

    from lazymem.train import modeling, rl_data, smoke_models

    for module in (modeling, rl_data, smoke_models):
        assert doctest.testmod(module).failed == 0, module.__name__
