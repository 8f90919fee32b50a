"""lazymem.train trainers: a tiny real Qwen3-architecture model through TRL's real SFT and GRPO trainers."""

from __future__ import annotations

import json

import pytest
from script_loader import load_script

from lazymem.errors import ConfigError
from lazymem.llm import LLMConfig

pytestmark = pytest.mark.slow

VALID = '[{"op": "KEEP", "compressed_content": "Lisbon.", "reason": ""}]'


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from lazymem.llm.models import tiny_test_model
    from lazymem.llm.tokens import qwen3_tokenizer_dir

    if not (qwen3_tokenizer_dir() / "tokenizer.json").is_file():
        pytest.skip("Qwen3 tokenizer not fetched (scripts/fetch_qwen3_tokenizer.sh)")
    return tiny_test_model(tmp_path_factory.mktemp("tiny") / "model")


def _sft_rows(n=8):
    return [
        {
            "prompt": [{"role": "system", "content": "Annotate."}, {"role": "user", "content": f"window {i}"}],
            "completion": [{"role": "assistant", "content": VALID}],
        }
        for i in range(n)
    ]


def _rl_rows(n=8):
    return [
        {
            "prompt": [{"role": "system", "content": "Annotate."}, {"role": "user", "content": f"window {i}"}],
            "decision_positions": [i],
            "gold_labels": [i % 2 == 0],
            "question_id": f"q{i}",
            "query": "Where?",
            "query_time": "2023/05/20",
            "gold_answer": "Lisbon",
            "reasoning_chain": "",
            "sources": [{"role": "user", "content": f"I moved to Lisbon ({i}).", "timestamp": "2023/05/01"}],
        }
        for i in range(n)
    ]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def sft_run(tiny, tmp_path_factory):
    """Two SFT steps with a LoRA adapter, checkpointing every step."""
    from lazymem.train.modeling import LoraSettings
    from lazymem.train.sft import SFTRecipe, run_sft

    d = tmp_path_factory.mktemp("sft")
    rows = _sft_rows()  # two files, one data set: the trainer reads a list of SFT JSONLs as their concatenation
    data = (_jsonl(d / "sft.jsonl", rows[:5]), _jsonl(d / "extra.jsonl", rows[5:]))
    recipe = SFTRecipe(
        base=str(tiny),
        data=data,
        output_dir=str(d / "out"),
        lora=LoraSettings(r=4, alpha=8),
        learning_rate=1e-3,
        warmup_ratio=0.0,
        max_steps=1,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        save_steps=1,
        max_length=256,
    )
    first = run_sft(recipe)  # "interrupted" after one step: its checkpoint is what a kill leaves behind
    import dataclasses

    second = run_sft(dataclasses.replace(recipe, max_steps=2))
    return recipe, first, second


def test_sft_trains_a_lora_adapter_and_resumes_from_its_checkpoint(sft_run):
    recipe, first, second = sft_run
    assert first["global_step"] == 1 and first["resumed_from"] is None
    assert second["resumed_from"].endswith("checkpoint-1") and second["global_step"] == 2
    losses = [(h["step"], h["loss"]) for h in second["log_history"] if "loss" in h]
    first_losses = [(h["step"], h["loss"]) for h in first["log_history"] if "loss" in h]
    # step 1 comes back from the checkpoint's trainer state (not retrained); only step 2 is new
    assert [s for s, _ in losses] == [1, 2] and losses[0] == first_losses[0]
    from pathlib import Path

    final = Path(second["final"])
    assert (final / "adapter_config.json").is_file() and (final / "adapter_model.safetensors").is_file()
    # total training time spans both processes: the first one's time comes back from its checkpoint
    saved = json.loads((Path(second["resumed_from"]) / "wall_clock.json").read_text())
    assert saved["segments"] == 1 and 0 < saved["seconds"] <= first["wall_s_total"] + 1
    assert second["segments"] == 2
    assert saved["seconds"] < second["wall_s_total"] <= saved["seconds"] + second["wall_s"] + 1


def test_sft_adapter_changes_the_model(sft_run, tiny):
    import torch

    from lazymem.train.modeling import load_policy, load_tokenizer

    tok = load_tokenizer(str(tiny))
    ids = tok("window 3", return_tensors="pt").input_ids
    base = load_policy(str(tiny), trainable=False)
    tuned = load_policy(str(tiny), sft_run[2]["final"], trainable=False)
    with torch.no_grad():
        assert not torch.allclose(base(ids).logits, tuned(ids).logits)


def test_a_second_sft_stage_continues_an_adapter(sft_run, tiny, tmp_path):
    import dataclasses

    import torch
    from safetensors.torch import load_file

    from lazymem.train.sft import run_sft

    recipe, _, first_stage = sft_run
    stage2 = dataclasses.replace(
        recipe, adapter=first_stage["final"], lora=None, output_dir=str(tmp_path / "s2"), max_steps=1
    )
    done = run_sft(stage2)
    assert done["init_adapter"] == first_stage["final"] and done["adapter"] and done["global_step"] == 1
    before = load_file(f"{first_stage['final']}/adapter_model.safetensors")
    after = load_file(f"{done['final']}/adapter_model.safetensors")
    assert set(after) == set(before)  # the same adapter (same modules, rank), trained further
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_grpo_two_steps_curriculum_switch_and_resume(sft_run, tiny, tmp_path):
    """GRPO from the SFT adapter (frozen copy as reference, KL on), curriculum switching lambda in a
    constructed case (the validator reports every output valid, tau 0.5), then a resumed run that keeps
    the switch instead of falling back to phase 1."""
    import dataclasses

    from lazymem.train.grpo import GRPORecipe, run_grpo

    recipe = GRPORecipe(
        base=str(tiny),
        adapter=sft_run[2]["final"],
        data=_jsonl(tmp_path / "rl.jsonl", _rl_rows()),
        output_dir=str(tmp_path / "grpo"),
        learning_rate=1e-3,
        max_steps=1,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=1,
        num_generations=2,
        max_completion_length=8,
        save_steps=1,
        eval_steps=1,
        tau=0.5,
        judge=LLMConfig(backend="fake", model="judge"),
    )
    calls = []

    def validator(model, tokenizer):
        calls.append(1)
        return [VALID] * 8

    first = run_grpo(recipe, validator=validator)
    assert first["global_step"] == 1
    assert first["curriculum"]["switched_at"] == 0 and first["curriculum"]["lam"] == 0.5
    logged = [h for h in first["log_history"] if "kl" in h]
    assert logged and "rewards/lazymem_reward/mean" in logged[0] and "lazymem/strict_gate" in logged[0]
    second = run_grpo(dataclasses.replace(recipe, max_steps=2), validator=lambda m, t: ["not json"] * 8)
    assert second["resumed_from"].endswith("checkpoint-1") and second["global_step"] == 2
    assert second["curriculum"]["lam"] == 0.5 and second["curriculum"]["switched_at"] == 0  # the switch is one-way
    assert [h["strict_gate"] for h in second["curriculum"]["history"]][-1] == 0.0


def test_grpo_stays_in_phase_1_without_a_judge(tiny, tmp_path):
    from lazymem.train.grpo import GRPORecipe, run_grpo

    r = run_grpo(
        GRPORecipe(
            base=str(tiny),
            lora=None,
            data=_jsonl(tmp_path / "rl.jsonl", _rl_rows(4)),
            output_dir=str(tmp_path / "g"),
            learning_rate=1e-4,
            max_steps=1,
            beta=0.0,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=1,
            num_generations=2,
            max_completion_length=4,
            save_steps=5,
            eval_steps=5,
            tau=0.0,
        ),
        validator=lambda m, t: [VALID] * 4,
    )
    assert r["curriculum"]["lam"] == 0.0 and r["curriculum"]["switched_at"] is None


def test_sft_data_lists_concatenate_in_order_and_name_bad_files(tmp_path):
    from lazymem.train.sft import SFTRecipe, load_sft_dataset

    rows = _sft_rows(5)
    a, b = _jsonl(tmp_path / "a.jsonl", rows[:2]), _jsonl(tmp_path / "b.jsonl", rows[2:])
    ds = load_sft_dataset([a, b])
    assert len(ds) == 5 and [r["prompt"][1]["content"] for r in ds] == [f"window {i}" for i in range(5)]
    assert len(load_sft_dataset(a)) == 2
    p = tmp_path / "r.yaml"
    p.write_text(f"data: [{a}, {b}]\n")
    assert SFTRecipe.from_yaml(p).data == (a, b)
    with pytest.raises(ConfigError, match="twice"):
        SFTRecipe(data=(a, a))
    with pytest.raises(ConfigError, match="path or a list of paths"):
        SFTRecipe(data=(a, 3))
    bad = _jsonl(tmp_path / "bad.jsonl", [{"prompt": "p"}])
    with pytest.raises(ConfigError, match="bad.jsonl: SFT data needs the columns prompt and completion"):
        load_sft_dataset([a, bad])
    with pytest.raises(ConfigError, match="missing.jsonl not found"):
        load_sft_dataset([a, str(tmp_path / "missing.jsonl")])


def test_recipes_parse_and_name_bad_fields(tmp_path):
    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.sft import SFTRecipe

    p = tmp_path / "r.yaml"
    p.write_text("base: x\nlora: {r: 8, alpha: 16}\nlearning_rate: 1.0e-5\n")
    assert SFTRecipe.from_yaml(p).lora.r == 8
    p.write_text("base: x\nlora: null\n")
    assert SFTRecipe.from_yaml(p).lora is None
    p.write_text("base: x\nlearnig_rate: 1\n")
    with pytest.raises(ConfigError, match="learnig_rate"):
        SFTRecipe.from_yaml(p)
    p.write_text("judge: {backend: openai, model: Qwen/Qwen3-32B, base_url: http://127.0.0.1:8001/v1}\n")
    assert GRPORecipe.from_yaml(p).judge.model == "Qwen/Qwen3-32B"
    p.write_text("num_generations: 1\n")
    with pytest.raises(ConfigError, match="num_generations"):
        GRPORecipe.from_yaml(p)


def test_paper_recipes_resolve_to_the_papers_table():
    from pathlib import Path

    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.sft import SFTRecipe

    root = Path(__file__).resolve().parents[1] / "configs"
    sft = SFTRecipe.from_yaml(root / "recipes" / "lazymem-4b-paper" / "sft.yaml")
    assert (
        sft.base,
        sft.lora,
        sft.learning_rate,
        sft.lr_scheduler_type,
        sft.warmup_ratio,
        sft.num_train_epochs,
        sft.per_device_train_batch_size * sft.gradient_accumulation_steps * 2,
        sft.max_length,
        sft.bf16,
    ) == ("Qwen/Qwen3-4B", None, 5e-6, "cosine", 0.03, 2, 16, 8192, True)
    g = GRPORecipe.from_yaml(root / "recipes" / "lazymem-4b-paper" / "grpo.yaml")
    completions_per_rollout_batch = g.per_device_train_batch_size * 2 * g.steps_per_generation
    completions_per_update = g.per_device_train_batch_size * 2 * g.gradient_accumulation_steps
    assert completions_per_rollout_batch == 32 * 8 and completions_per_update == 16 * 8  # VERL: mini-batch 16
    assert (
        g.learning_rate,
        g.lr_scheduler_type,
        g.warmup_ratio,
        g.num_train_epochs,
        g.dataloader_drop_last,
        g.num_generations,
        g.temperature,
        g.top_p,
        g.max_completion_length,
        g.beta,
        g.epsilon,
        g.loss_type,
        g.weight_decay,
        g.max_grad_norm,
        g.bf16,
        g.eta,
        g.tau,
        g.lam_phase2,
        g.eval_every_rollout_batches,
        g.save_every_rollout_batches,
        g.save_total_limit,
        g.seed,
    ) == (
        1e-6,
        "constant",
        0.0,
        3,
        True,
        8,
        0.9,
        0.95,
        3072,
        0.001,
        0.2,
        "dapo",
        0.01,
        1.0,
        True,
        0.915,
        0.99,
        0.5,
        10,
        30,
        5,
        42,
    )
    assert g.judge.model == "Qwen/Qwen3-32B"
    for cpu in ("recipes/quickstart-cpu/sft.yaml", "recipes/quickstart-cpu/grpo.yaml"):
        (SFTRecipe if "sft" in cpu else GRPORecipe).from_yaml(root / cpu)


def test_transformers_backend_loads_base_plus_adapter_merged(sft_run, tiny):
    from lazymem.llm import LLMConfig, Sampling, generate_n, make_client

    base = make_client(LLMConfig(model=str(tiny)))
    tuned = make_client(LLMConfig(model=str(tiny), adapter=sft_run[2]["final"]))
    assert "adapter" in tuned.identity and "adapter" not in base.identity  # distinct cache keys
    s = Sampling(temperature=0.0, max_tokens=6)
    a, b = base.generate(["window 3"], s)[0], tuned.generate(["window 3"], s)[0]
    assert a.error is None and b.error is None
    assert type(tuned.load()[0]).__name__ == type(base.load()[0]).__name__  # merged into the base weights
    assert any((p1 - p2).abs().max() > 0 for p1, p2 in zip(tuned.load()[0].parameters(), base.load()[0].parameters()))
    samples = generate_n(tuned, ["window 1", "window 2"], Sampling(temperature=1.0, max_tokens=6, seed=3), 3)
    assert [len(r) for r in samples] == [3, 3] and all(c.error is None for r in samples for c in r)


def test_sft_killed_mid_run_resumes_from_its_last_checkpoint(tiny, tmp_path):
    """`lazymem train sft` in a subprocess, SIGKILLed once a checkpoint is on disk; the rerun
    continues from that checkpoint instead of starting over."""
    import os
    import signal
    import subprocess
    import sys
    import time

    data = _jsonl(tmp_path / "sft.jsonl", _sft_rows(16))
    out = tmp_path / "out"
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(
        json.dumps(
            {  # JSON is YAML
                "base": str(tiny),
                "data": data,
                "output_dir": str(out),
                "lora": {"r": 4, "alpha": 8},
                "learning_rate": 1e-3,
                "warmup_ratio": 0.0,
                "max_steps": 8,
                "per_device_train_batch_size": 2,
                "gradient_accumulation_steps": 1,
                "save_steps": 1,
                "save_total_limit": 8,
                "max_length": 256,
            }
        )
    )
    cmd = [sys.executable, "-m", "lazymem.cli", "train", "sft", "--config", str(cfg)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not (out / "checkpoint-2" / "trainer_state.json").exists():
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.fail("the training subprocess ended before it could be killed")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if (p / "trainer_state.json").exists())
    assert done and not (out / "final").exists(), "killed before the end: checkpoints, no final model"
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads((out / "train_result.json").read_text())
    assert result["global_step"] == 8
    # continued from the newest checkpoint the kill left, not from scratch
    assert result["resumed_from"] is not None and int(result["resumed_from"].rsplit("-", 1)[1]) == done[-1] >= 2
    assert (out / "final" / "adapter_model.safetensors").is_file()


def test_last_checkpoint_skips_a_partial_one(tmp_path):
    from lazymem.train.sft import last_checkpoint

    assert last_checkpoint(tmp_path / "missing") is None
    for n in (1, 2, 10):
        (tmp_path / f"checkpoint-{n}").mkdir()
    assert last_checkpoint(tmp_path) is None
    for n in (1, 2):
        (tmp_path / f"checkpoint-{n}" / "trainer_state.json").write_text("{}")
    assert last_checkpoint(tmp_path).endswith("checkpoint-2")  # 10 was being written when the run died


def test_a_finished_run_is_not_trained_again(sft_run):
    import dataclasses

    from lazymem.train.sft import run_sft

    again = run_sft(dataclasses.replace(sft_run[0], max_steps=2))
    assert again["already_finished"] and again["global_step"] == 2


def test_keep_probe_teacher_forces_the_gold_trace(tiny):
    from lazymem.construct import window_prompts
    from lazymem.records import History, Message, Question
    from lazymem.retrieve import build_windows
    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.probe import keep_probe, window_messages

    texts = ["I moved to Lisbon last spring with my two cats.", "Nice!", "", "What about work?", "I teach."]
    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    q = Question("q", "single-session-user", "Where do I live?", "Lisbon", "h", "2023/06/01", evidence=(0,))
    prompts = window_prompts(h, q, build_windows(h, [0, 4], gold=q.evidence))
    rows = [{"prompt": list(p.messages), "gold_labels": list(p.gold_labels)} for p in prompts]
    assert [m["content"] for m in window_messages(rows[0]["prompt"])] == [
        texts[p] for p in prompts[0].decision_positions
    ]
    model = load_policy(str(tiny), trainable=False)
    res = keep_probe(rows, model, load_tokenizer(str(tiny)))
    assert res["gold_lines"] == 1 and res["nongold_lines"] == sum(len(r["gold_labels"]) for r in rows) - 1
    assert 0.0 <= res["auc"] <= 1.0 and 0.0 <= res["p_keep_gold_median"] <= 1.0
    ts = res["thresholds"]
    assert ts[0]["threshold"] == 0.5 and ts[0]["keep_bias"] == 0.0
    recalls = [t["gold_recall"] for t in ts]  # a lower threshold keeps at least as much
    assert recalls == sorted(recalls) and all(0.0 <= t["mean_r_act"] <= 1.0 for t in ts)


def test_lexical_check_splits_the_model_auc_by_shared_words(tmp_path):
    """On real window prompts and a hand-written probe record: the lexical AUC, the no-shared-word
    shares and the model's AUC within each stratum, by hand; a record whose windows differ fails."""
    from lazymem.construct import window_prompts
    from lazymem.records import History, Message, Question
    from lazymem.retrieve import build_windows
    from lazymem.train.lexical import lexical_check, window_query

    texts = [
        "I moved to Lisbon last spring.",
        "Lisbon traffic is awful.",
        "My cats love the balcony.",
        "Where did you move?",
        "I teach math now.",
    ]
    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    # gold 0 and 2: 0 shares "Lisbon" with the query, 2 shares no word (the cats live where I moved)
    q = Question("q", "single-session-user", "Where in Lisbon do I live?", "Lisbon", "h", "2023/06/01", evidence=(0, 2))
    prompts = window_prompts(h, q, build_windows(h, [2], gold=q.evidence))
    rows = [{"prompt": list(pr.messages), "gold_labels": list(pr.gold_labels)} for pr in prompts]
    assert window_query(rows[0]["prompt"]) == "Where in Lisbon do I live?"
    flat = [g for r in rows for g in r["gold_labels"]]
    assert flat.count(True) == 2
    # the model ranks the no-shared-word gold line first, the Lisbon gold line below "Lisbon traffic"
    model = {0: 0.4, 1: 0.6, 2: 0.9, 3: 0.1, 4: 0.2}
    positions = [p for pr in prompts for p in pr.decision_positions]
    record = {
        "settings": {"output": "hand"},
        "scores": [[[model[p], g] for p, g in zip(pr.decision_positions, pr.gold_labels)] for pr in prompts],
    }
    res = lexical_check(record, rows)
    assert res["gold_lines"] == 2 and res["nongold_lines"] == len(positions) - 2
    # query content words {lisbon, live}: 0 and 1 share "lisbon"; 2, 3 ("Where ... move") and 4 share none
    assert res["gold_no_shared_word"] == 0.5
    non = [p for p in positions if p not in (0, 2)]
    assert res["nongold_no_shared_word"] == sum(p != 1 for p in non) / len(non)
    assert res["auc_model_shared_word"] == 0.0  # gold 0 (0.4) under non-gold 1 (0.6)
    assert res["auc_model_no_shared_word"] == 1.0  # gold 2 (0.9) over 3 and 4
    # gold lexical scores: 0 -> 0.5 (1 of 2 query words), 2 -> 0; non-gold: 1 -> 0.5, the rest 0
    pairs = [(0.5, 0.5 if p == 1 else 0.0) for p in non] + [(0.0, 0.5 if p == 1 else 0.0) for p in non]
    assert res["auc_lexical"] == sum((a > b) + 0.5 * (a == b) for a, b in pairs) / (2 * len(non))
    with pytest.raises(ValueError, match="scored windows"):
        lexical_check({"settings": {"output": "hand"}, "scores": record["scores"][:-1] + [[]] * 2}, rows)
    from lazymem.train.lexical import pair_overlap

    by = pair_overlap([{**r, "style": "casual"} for r in rows])
    assert set(by) == {"casual"} and by["casual"]["auc_lexical"] == res["auc_lexical"]
    assert by["casual"]["nongold_no_shared_word"] == res["nongold_no_shared_word"]
    assert by["casual"]["nongold_mean_overlap"] == 0.5 / len(non)  # only line 1 shares a word (1 of 2)


def test_the_device_script_trains_sft_then_grpo_under_budgets_and_packs_each_stage(tiny, tmp_path):
    """scripts/device_train.py (what a leased GPU runs) on the tiny model: a spent budget stops the real
    SFT and GRPO trainers after their first step with a checkpoint, GRPO continues the SFT adapter,
    each stage is evaluated on held-out windows and packed into OUT/<stage>.tar.gz at once."""
    import tarfile

    import yaml

    sft = tmp_path / "sft.yaml"
    sft.write_text(
        yaml.safe_dump(
            {
                "base": str(tiny),
                "lora": {"r": 4, "alpha": 8},
                "data": _jsonl(tmp_path / "sft.jsonl", _sft_rows(8)),
                "output_dir": str(tmp_path / "s"),
                "learning_rate": 1e-3,
                "warmup_ratio": 0.0,
                "max_steps": 3,
                "per_device_train_batch_size": 2,
                "gradient_accumulation_steps": 1,
                "save_steps": 5,
                "max_length": 256,
            }
        )
    )
    grpo = tmp_path / "grpo.yaml"
    grpo.write_text(
        yaml.safe_dump(
            {
                "base": str(tiny),
                "adapter": "replaced/by/the/sft/stage",
                "data": _jsonl(tmp_path / "rl.jsonl", _rl_rows(8)),
                "output_dir": str(tmp_path / "g"),
                "learning_rate": 1e-4,
                "max_steps": 3,
                "beta": 0.0,
                "per_device_train_batch_size": 2,
                "gradient_accumulation_steps": 1,
                "num_generations": 2,
                "max_completion_length": 4,
                "save_steps": 5,
                "eval_steps": 5,
                "max_validation_prompts": 2,
            }
        )
    )
    mod = load_script("device_train")
    out = tmp_path / "out"
    held = _jsonl(tmp_path / "held.jsonl", _rl_rows(4))
    assert (
        mod.main(
            [
                "--sft",
                str(sft),
                "--sft-budget-s",
                "0.001",
                "--grpo",
                str(grpo),
                "--grpo-budget-s",
                "0.001",
                "--min-stage-s",
                "0",
                "--eval-set",
                f"held={held}",
                "--eval-batch",
                "4",
                "--set",
                "grpo.max_completion_length=6",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"] == [] and set(summary["stages"]) == {"sft", "grpo"}
    for stage in ("sft", "grpo"):
        rec = summary["stages"][stage]
        assert rec["global_step"] == 1 and rec["stopped_by_budget_at_step"] == 1
        assert rec["eval"]["held"]["windows"] == 4 and 0.0 <= rec["eval"]["held"]["gate_fmt"] <= 1.0
        with tarfile.open(out / f"{stage}.tar.gz") as tar:
            names = set(tar.getnames())
        assert {
            f"{stage}/adapter_model.safetensors",
            f"{stage}/adapter_config.json",
            f"{stage}/train_result.json",
            f"{stage}/eval/held/summary.json",
            f"{stage}/eval/held/windows.jsonl",
        } <= names
    assert (tmp_path / "s" / "checkpoint-1").is_dir() and (tmp_path / "g" / "checkpoint-1").is_dir()
    assert summary["stages"]["grpo"]["overrides"] == {
        "max_completion_length": 6,
        "adapter": str(tmp_path / "s" / "final"),
    }
    grpo_result = json.loads((tmp_path / "g" / "train_result.json").read_text())
    assert grpo_result["recipe"]["adapter"] == str(tmp_path / "s" / "final")


def test_the_device_script_skips_a_stage_past_its_deadline(tiny, tmp_path):

    import yaml

    sft = tmp_path / "sft.yaml"
    sft.write_text(
        yaml.safe_dump(
            {"base": str(tiny), "data": _jsonl(tmp_path / "sft.jsonl", _sft_rows(2)), "output_dir": str(tmp_path / "s")}
        )
    )
    mod = load_script("device_train")
    assert mod.main(["--sft", str(sft), "--deadline-s", "1", "--min-stage-s", "60", "--out", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["stages"] == {} and summary["skipped"][0].startswith("sft:")
    assert not (tmp_path / "s").exists()


def test_time_budget_waits_for_its_seconds_and_rejects_a_bad_budget():
    from transformers import TrainerControl, TrainerState

    from lazymem.train.logs import time_budget_callback

    now = [100.0]
    cb = time_budget_callback(60, clock=lambda: now[0])
    state, control = TrainerState(global_step=3), TrainerControl()
    now[0] = 159.0
    cb.on_step_end(None, state, control)
    assert not control.should_training_stop and cb.stopped_at_step is None
    now[0] = 160.0
    cb.on_step_end(None, state, control)
    assert control.should_training_stop and control.should_save and cb.stopped_at_step == 3
    for bad in (0, -1, "60", None):
        with pytest.raises(ValueError, match="time budget"):
            time_budget_callback(bad)


def _long_prompt_history(path):
    """A LongMemEval-format file: one question over one 20-turn session whose turn 3 is ~9,000 tokens long (no
    gold) and whose turn 16 is the gold evidence; every turn shares "move" with the query, so BM25 retrieves all
    20 and the windows (w=2, L=8, s=7) are [0-7], [7-14], [14-19]: only the first holds the long turn."""
    turns = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Small talk number {i}: the move went fine, the weather is nice.",
        }
        for i in range(20)
    ]
    turns[3]["content"] = "A very long story about the move and the garden. " + "tomato " * 9000
    turns[16] = {"role": "user", "content": "I moved to Lisbon last spring; the move was in May.", "has_answer": True}
    record = {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "Where did I move?",
        "answer": "Lisbon",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s0"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [turns],
        "answer_session_ids": ["s0"],
    }
    path.write_text(json.dumps([record]), encoding="utf-8")
    return str(path)


def test_rl_prompts_over_the_max_input_leave_the_pool_before_the_draw_and_are_counted(tmp_path):
    """The paper's max input length (8,192 tokens with the chat template) as VERL's filter_overlong_prompts: the
    one window holding a ~9,000-token message leaves the pool; the card counts it (not gold-bearing)."""
    from lazymem.train.datacard import read_jsonl
    from lazymem.train.rl_data import RLDataConfig, build_rl_prompts, chat_tokenizer, prompt_tokens

    base = {
        "datasets": [_long_prompt_history(tmp_path / "long.json")],
        "split": None,
        "size": None,
        "seed": 0,
        "retrieval": {"n": 50, "sparse": "rank_bm25", "dense_model": None, "reranker": None},
        "window": {"w": 2, "L": 8, "s": 7},
        "progress": False,
    }
    everything = build_rl_prompts(RLDataConfig.from_dict({**base, "output_dir": str(tmp_path / "all")}))
    assert everything["pool"] == 3 and "overlong_prompts" not in everything  # no limit: nothing is counted or dropped
    limited = {**base, "max_prompt_tokens": 8192, "output_dir": str(tmp_path / "r")}
    card = build_rl_prompts(RLDataConfig.from_dict(limited))
    assert card["pool"] == 2 and card["overlong_prompts"]["pool_before"] == 3
    o = card["overlong_prompts"]
    assert (o["limit"], o["dropped"], o["dropped_gold_bearing"], o["dropped_other"]) == (8192, 1, 0, 1)
    assert o["longest"] > 9000 and o["longest_kept"] < 2000 and o["tokenizer"] == "Qwen3 (shipped)"
    rows = read_jsonl(tmp_path / "r" / "rl_prompts.jsonl")
    assert all("tomato tomato" not in json.dumps(r["prompt"]) for r in rows)  # exactly the long window is gone
    assert {r["window_index"] for r in rows} == {1, 2}
    assert max(prompt_tokens([r["prompt"] for r in rows], chat_tokenizer(None))) == o["longest_kept"]
    md = (tmp_path / "r" / "card.md").read_text()
    assert "Prompts over 8,192 tokens with the chat template" in md and "1 of 3 (0 gold-bearing, 1 without gold)" in md
    for bad in ({"max_prompt_tokens": 0}, {"max_prompt_tokens": True}, {"tokenizer": ""}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            RLDataConfig.from_dict({**base, **bad})


def test_the_paper_data_configs_resolve_to_the_papers_training_data():
    """App. "Training Data": 100 of the 360 train questions for SFT with a thinking DeepSeek teacher whose
    reasoning goes in the targets; 10,000 RL prompts, half gold-bearing, max input 8,192; 40 validation questions;
    the paper's retrieval and window shape; and the training recipes read what these write."""
    from pathlib import Path

    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.rl_data import RLDataConfig
    from lazymem.train.sft import SFTRecipe
    from lazymem.train.sft_data import SFTDataConfig

    train = Path(__file__).resolve().parents[1] / "configs" / "recipes" / "lazymem-4b-paper"
    sft = SFTDataConfig.from_yaml(str(train / "data_sft.yaml"))
    rl = RLDataConfig.from_yaml(str(train / "data_rl.yaml"))
    val = RLDataConfig.from_yaml(str(train / "data_rl_val.yaml"))
    for c in (sft, rl, val):
        assert (c.datasets, c.split_seed) == (("longmemeval_s_cleaned",), 42)
        assert (c.window.w, c.window.L, c.window.s) == (2, 8, 7)
        r = c.retrieval
        assert (r.n, r.sparse, r.dense_model, r.reranker) == (
            50,
            "rank_bm25",
            "Qwen/Qwen3-Embedding-8B",
            "BAAI/bge-reranker-v2-m3",
        )
    assert (sft.split, sft.questions, sft.teacher_reasoning, sft.balance, sft.max_length) == (
        "train",
        100,
        True,
        True,
        8192,
    )
    assert sft.teacher.backend == "openai" and "deepseek" in sft.teacher.model
    assert (rl.split, rl.questions, rl.size, rl.gold_fraction) == ("train", None, 10000, 0.5)
    assert rl.max_prompt_tokens == 8192
    assert (val.split, val.questions, val.max_prompt_tokens) == ("validation", None, 8192)
    assert Path(rl.reasoning_chains) == Path(sft.output_dir)
    s, g = SFTRecipe.from_yaml(train / "sft.yaml"), GRPORecipe.from_yaml(train / "grpo.yaml")
    assert Path(s.data).parent == Path(sft.output_dir)
    assert Path(g.data).parent == Path(rl.output_dir) and Path(g.validation_data).parent == Path(val.output_dir)
    assert g.base == f"{s.output_dir}/final"


def test_every_path_the_paper_recipes_comments_name_exists():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in ("sft", "grpo", "data_sft", "data_rl", "data_rl_val", "accelerate_zero2"):
        text = (root / "configs" / "recipes" / "lazymem-4b-paper" / f"{name}.yaml").read_text(encoding="utf-8")
        comments = "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)
        named = set(re.findall(r"(?:configs|lazymem|tests|scripts)/[\w./-]+\.(?:yaml|py|sh)", comments))
        assert named, name
        assert all((root / p).is_file() for p in named), (name, [p for p in named if not (root / p).is_file()])
