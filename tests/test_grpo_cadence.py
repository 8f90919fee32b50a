"""GRPO cadence: the paper's validation and checkpoint cadence in rollout batches, turned into TRL
optimizer steps, checked against TRL's own GRPOConfig arithmetic (no training)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lazymem.errors import ConfigError
from lazymem.train.cadence import rollout_batches_to_steps, steps_per_rollout_batch, trl_optimizer_steps
from lazymem.train.grpo import GRPORecipe, grpo_config_kwargs

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _trl_config(recipe: GRPORecipe, tmp_path):
    """TRL's real GRPOConfig for a recipe, built on this CPU machine (no vLLM, no bf16 check needed)."""
    pytest.importorskip("trl")
    from trl import GRPOConfig

    kw = grpo_config_kwargs(dataclasses.replace(recipe, output_dir=str(tmp_path / "grpo")))
    kw.update(use_vllm=False, bf16=False)  # GPU-only settings: they change no step arithmetic
    return GRPOConfig(**kw)


def _rollout_batches_per_step(args) -> float:
    """Rollout batches one optimizer step consumes, from TRL's own fields: the completions an optimizer
    step trains on (per device x accumulation x processes) over TRL's generation batch."""
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    return per_step * args.num_iterations / args.generation_batch_size


def test_paper_recipe_validates_every_10_rollout_batches_and_saves_every_30(tmp_path):
    recipe = GRPORecipe.from_yaml(CONFIGS / "recipes" / "lazymem-4b-paper" / "grpo.yaml")
    assert (recipe.eval_every_rollout_batches, recipe.save_every_rollout_batches) == (10, 30)
    args = _trl_config(recipe, tmp_path)
    # TRL: a rollout batch of 16 x world x 8 completions, an optimizer step of 16 x 4 x world: 2 steps each
    assert args.steps_per_generation == 8 and args.gradient_accumulation_steps == 4
    assert (args.eval_steps, args.save_steps) == (20, 60)
    assert args.eval_steps * _rollout_batches_per_step(args) == 10
    assert args.save_steps * _rollout_batches_per_step(args) == 30
    # what the old keys gave: eval_steps 10 fired every 5 rollout batches
    old = dataclasses.replace(
        recipe, eval_every_rollout_batches=None, save_every_rollout_batches=None, eval_steps=10, save_steps=30
    )
    assert _trl_config(old, tmp_path).eval_steps * _rollout_batches_per_step(args) == 5


def test_the_paper_recipe_is_1872_trl_steps_by_trls_own_sampler():
    """10,000 prompts, 2 GPUs, 3 epochs: VERL's 936 training steps are 1,872 TRL optimizer steps.
    The count follows TRL's RepeatSampler (whole rollout batches, each repeated steps_per_generation times)."""
    pytest.importorskip("trl")
    from trl.trainer.utils import RepeatSampler

    r = GRPORecipe.from_yaml(CONFIGS / "recipes" / "lazymem-4b-paper" / "grpo.yaml")
    world, n = 2, 10_000
    generation_batch = r.per_device_train_batch_size * world * r.steps_per_generation  # 256 completions
    sampler = RepeatSampler(
        range(n),
        mini_repeat_count=r.num_generations,
        batch_size=generation_batch // r.num_generations,
        repeat_count=r.steps_per_generation,
    )
    micro_steps = len(sampler) // (r.per_device_train_batch_size * r.steps_per_generation * world)
    per_epoch = micro_steps // r.gradient_accumulation_steps
    assert n // 32 == 312 and per_epoch == 312 * 2
    assert (
        per_epoch * 3
        == 1872
        == trl_optimizer_steps(
            n,
            r.num_train_epochs,
            r.per_device_train_batch_size,
            r.gradient_accumulation_steps,
            r.steps_per_generation,
            r.num_generations,
            world_size=world,
        )
    )


def test_old_recipes_keep_their_steps_and_both_keys_are_refused(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("gradient_accumulation_steps: 4\nsteps_per_generation: 8\neval_steps: 10\nsave_steps: 5\n")
    old = GRPORecipe.from_yaml(p)
    assert (old.trl_eval_steps, old.trl_save_steps) == (10, 5)  # old keys: TRL optimizer steps, as before
    for recipe in ("recipes/quickstart-cpu/grpo.yaml",):
        g = GRPORecipe.from_yaml(CONFIGS / recipe)
        assert (g.trl_eval_steps, g.trl_save_steps) == (g.eval_steps, g.save_steps)
    p.write_text("eval_steps: 10\neval_every_rollout_batches: 10\n")
    with pytest.raises(ConfigError, match="eval_steps.*not both"):
        GRPORecipe.from_yaml(p)
    p.write_text("save_steps: 30\nsave_every_rollout_batches: 30\n")
    with pytest.raises(ConfigError, match="save_steps.*not both"):
        GRPORecipe.from_yaml(p)
    # neither given: the paper's 10 / 30 rollout batches (with one step a rollout batch, the old 10 / 30 steps)
    d = GRPORecipe()
    assert (d.trl_eval_steps, d.trl_save_steps) == (10, 30)


def test_a_cadence_that_is_no_whole_number_of_steps_is_refused():
    with pytest.raises(ConfigError, match="eval_every_rollout_batches.*not a whole number"):
        GRPORecipe(gradient_accumulation_steps=4, steps_per_generation=2, eval_every_rollout_batches=3)
    assert (
        GRPORecipe(gradient_accumulation_steps=4, steps_per_generation=2, eval_every_rollout_batches=4).trl_eval_steps
        == 2
    )
    assert steps_per_rollout_batch(None, 8) == 1 and rollout_batches_to_steps(10, 8, 4, num_iterations=2) == 40


def test_finished_runs_recorded_before_the_new_keys_still_match(tmp_path):
    """A rerun of a finished recipe must find its result, not train again: unset new keys stay out of the record."""
    from lazymem.train.recipe import recipe_dict

    d = recipe_dict(GRPORecipe(eval_steps=10, save_steps=2))
    assert "eval_every_rollout_batches" not in d and d["eval_steps"] == 10
    assert recipe_dict(GRPORecipe(eval_every_rollout_batches=10))["eval_every_rollout_batches"] == 10
