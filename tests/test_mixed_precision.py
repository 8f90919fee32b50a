"""The paper's recipes train float32 master weights with bf16 compute: at the paper's learning rates every
weight moves. Loading a full fine-tune's weights in bfloat16 (what the recipes once said) loses the updates:
AdamW then updates the bf16 weights themselves and rounds most steps of 5e-6 or 1e-6 away."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lazymem.errors import ConfigError

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SFT_PAPER, GRPO_PAPER = (
    ROOT / "configs" / "recipes" / "lazymem-4b-paper" / "sft.yaml",
    ROOT / "configs" / "recipes" / "lazymem-4b-paper" / "grpo.yaml",
)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _rows(n=8):
    return [
        {
            "prompt": [{"role": "user", "content": f"window {i}"}],
            "completion": [{"role": "assistant", "content": f'[{{"op": "DROP"}}] {i}'}],
        }
        for i in range(n)
    ]


def _snapshot(model) -> dict:
    return {n: p.detach().float().clone() for n, p in model.named_parameters() if p.requires_grad}


def _unchanged(before: dict, after) -> list[str]:
    import torch

    params = dict(after.named_parameters())
    return [n for n, w in before.items() if torch.equal(w, params[n].detach().float())]


def test_the_paper_recipes_load_float32_weights_and_compute_in_bf16():
    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.sft import SFTRecipe

    for recipe in (SFTRecipe.from_yaml(SFT_PAPER), GRPORecipe.from_yaml(GRPO_PAPER)):
        assert (recipe.dtype, recipe.bf16, recipe.lora) == ("float32", True, None)


def test_the_sft_paper_recipe_moves_every_weight(tiny_model, tmp_path):
    """The real SFTTrainer through run_sft, with the paper recipe's sft.yaml settings (lr 5e-6, cosine, warmup 0.03,
    accumulation 8, bf16 compute, gradient checkpointing, its dtype) on a tiny Qwen3 and short rows."""
    from lazymem.train.modeling import load_policy
    from lazymem.train.sft import SFTRecipe, run_sft

    recipe = SFTRecipe.from_yaml(SFT_PAPER)
    assert recipe.learning_rate == 5e-6
    before = _snapshot(load_policy(tiny_model, dtype=recipe.dtype))  # what run_sft trains
    small = dataclasses.replace(
        recipe,
        base=tiny_model,
        data=_jsonl(tmp_path / "sft.jsonl", _rows()),
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        save_steps=2,
        max_length=64,
    )
    result = run_sft(small)  # step 1's learning rate is 0 (warmup); step 2 trains at 5e-6
    assert result["global_step"] == 2
    unchanged = _unchanged(before, load_policy(result["final"], dtype="float32"))
    assert not unchanged, f"{len(unchanged)} of {len(before)} tensors did not move at lr 5e-6: {unchanged[:5]}"


def test_the_grpo_paper_recipe_moves_every_weight(tiny_model, tmp_path):
    """TRL's GRPOTrainer with the paper recipe's grpo.yaml GRPOConfig (lr 1e-6, beta, clip, DAPO, weight decay, bf16 compute)
    on the policy run_grpo loads (its dtype); a reward that differs between rollouts, so advantages are not 0."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from lazymem.train.grpo import GRPORecipe, grpo_config_kwargs
    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.rewards import completion_text

    recipe = GRPORecipe.from_yaml(GRPO_PAPER)
    assert recipe.learning_rate == 1e-6
    small = dataclasses.replace(
        recipe,
        base=tiny_model,
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=recipe.num_generations,
        gradient_accumulation_steps=1,
        steps_per_generation=None,
        max_completion_length=8,
        use_vllm=False,
        eval_every_rollout_batches=1,
        save_every_rollout_batches=1,
    )
    model = load_policy(tiny_model, dtype=small.dtype)
    before = _snapshot(model)

    def distinct_characters(completions, **kw):
        return [float(len(set(completion_text(c)))) for c in completions]

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[distinct_characters],
        args=GRPOConfig(**grpo_config_kwargs(small)),
        train_dataset=Dataset.from_list([{"prompt": r["prompt"]} for r in _rows(4)]),
        processing_class=load_tokenizer(tiny_model),
    )
    trainer.train()
    assert trainer.state.global_step == 2
    unchanged = _unchanged(before, trainer.model)
    assert not unchanged, f"{len(unchanged)} of {len(before)} tensors did not move at lr 1e-6: {unchanged[:5]}"


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_a_full_parameter_recipe_in_half_precision_is_refused_naming_file_and_fix(stage, tmp_path):
    from lazymem.train.grpo import GRPORecipe
    from lazymem.train.sft import SFTRecipe

    cls = SFTRecipe if stage == "sft" else GRPORecipe
    p = tmp_path / f"{stage}.yaml"
    for dtype in ("bfloat16", "float16"):
        p.write_text(f"lora: null\ndtype: {dtype}\nbf16: true\n")
        with pytest.raises(ConfigError, match=rf"{stage}\.yaml: {cls.__name__}\.dtype='{dtype}' with lora: null") as e:
            cls.from_yaml(p)
        assert "master" in str(e.value) and "dtype: float32 with bf16: true" in str(e.value)
    # a LoRA adapter on a bf16 base is fine (PEFT keeps the adapter in float32), and so is float32
    p.write_text("lora: {r: 4, alpha: 8}\ndtype: bfloat16\n")
    assert cls.from_yaml(p).dtype == "bfloat16"
    p.write_text("lora: null\ndtype: float32\nbf16: true\n")
    assert cls.from_yaml(p).dtype == "float32"


def test_lora_on_a_bf16_base_trains_float32_adapter_weights(tiny_model, tmp_path):
    """PEFT's autocast_adapter_dtype (default True) upcasts bf16 adapter weights to float32, both for a new
    adapter (TRL's get_peft_model, the trainer really updates them) and for a loaded one (load_policy)."""
    import torch
    from transformers import TrainerCallback

    from lazymem.train.modeling import LoraSettings, load_policy
    from lazymem.train.sft import SFTRecipe, run_sft

    seen = {}

    class Dtypes(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            seen.update({n: p.dtype for n, p in model.named_parameters()})
            seen["trainable"] = {n for n, p in model.named_parameters() if p.requires_grad}

    recipe = SFTRecipe(
        base=tiny_model,
        data=_jsonl(tmp_path / "sft.jsonl", _rows(4)),
        output_dir=str(tmp_path / "o"),
        lora=LoraSettings(r=4, alpha=8),
        dtype="bfloat16",
        bf16=True,
        learning_rate=1e-3,
        warmup_ratio=0.0,
        max_steps=1,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        save_steps=1,
        max_length=64,
    )
    result = run_sft(recipe, callbacks=[Dtypes()])
    trainable = seen.pop("trainable")
    assert trainable and all("lora_" in n for n in trainable)
    assert {seen[n] for n in trainable} == {torch.float32}
    assert {d for n, d in seen.items() if n not in trainable} == {torch.bfloat16}
    loaded = load_policy(tiny_model, adapter=result["final"], dtype="bfloat16", trainable=True)
    assert {p.dtype for p in loaded.parameters() if p.requires_grad} == {torch.float32}


def test_a_trainer_with_half_precision_trainable_weights_is_refused():
    import torch

    from lazymem.train.modeling import check_trainable_dtypes

    class Trainer:
        is_deepspeed_enabled = False
        model = torch.nn.Linear(2, 2).to(torch.bfloat16)

    with pytest.raises(ConfigError, match="half precision .*weight, bfloat16"):
        check_trainable_dtypes(Trainer())
    Trainer.is_deepspeed_enabled = True  # ZeRO keeps float32 master weights itself
    check_trainable_dtypes(Trainer())
    Trainer.model = torch.nn.Linear(2, 2)
    Trainer.is_deepspeed_enabled = False
    check_trainable_dtypes(Trainer())


def test_the_zero2_accelerate_config_reads_as_deepspeed_stage_2_bf16():
    """Only its keys are checked here (deepspeed is not installed): accelerate's own reader accepts it."""
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(ROOT / "configs" / "recipes" / "lazymem-4b-paper" / "accelerate_zero2.yaml"))
    assert str(cfg.distributed_type).endswith("DEEPSPEED") and cfg.deepspeed_config["zero_stage"] == 2
    assert (cfg.mixed_precision, cfg.num_processes) == ("bf16", 2)
    # accumulation and clipping come from the recipe ("auto"), so they cannot disagree with it
    assert "gradient_accumulation_steps" not in cfg.deepspeed_config and "gradient_clipping" not in cfg.deepspeed_config
