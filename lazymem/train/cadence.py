"""GRPO cadence in the paper's units (rollout batches), converted to TRL's optimizer steps.

The paper (VERL 0.7.1) counts *training steps* = rollout batches of 32 prompts x 8 rollouts:
it validates every 10 and checkpoints every 30 of them, 936 in all (floor(10,000 / 32) x 3
epochs). TRL's GRPOTrainer counts *optimizer steps*. In TRL 1.16 (``GRPOConfig``):

- a rollout (generation) batch is ``generation_batch_size = per_device_train_batch_size x
  world_size x steps_per_generation`` completions (``steps_per_generation`` defaults to
  ``gradient_accumulation_steps``), i.e. that over ``num_generations`` prompts;
- it is generated once and then consumed in ``steps_per_generation`` micro-steps, repeated
  ``num_iterations`` times; an optimizer step takes ``gradient_accumulation_steps`` micro-steps;

so one rollout batch is ``steps_per_generation x num_iterations / gradient_accumulation_steps``
optimizer steps, whatever the world size. The paper recipe (16 completions a device, 4
micro-steps an update, 8 micro-steps a rollout batch: VERL's two PPO mini-batches) takes 2
optimizer steps per rollout batch: ``eval_steps: 10`` would validate every 5 rollout batches.

>>> steps_per_rollout_batch(steps_per_generation=8, gradient_accumulation_steps=4)
Fraction(2, 1)
>>> rollout_batches_to_steps(10, steps_per_generation=8, gradient_accumulation_steps=4)
20
>>> trl_optimizer_steps(10_000, 3, per_device_train_batch_size=16, gradient_accumulation_steps=4,
...                     steps_per_generation=8, num_generations=8, world_size=2)
1872
"""

from __future__ import annotations

import math
from fractions import Fraction

from lazymem.errors import ConfigError


def steps_per_rollout_batch(
    steps_per_generation: int | None, gradient_accumulation_steps: int, num_iterations: int = 1
) -> Fraction:
    """TRL optimizer steps that one rollout batch makes (``steps_per_generation`` None = the accumulation)."""
    spg = steps_per_generation or gradient_accumulation_steps
    return Fraction(spg * num_iterations, gradient_accumulation_steps)


def rollout_batches_to_steps(
    n: int,
    steps_per_generation: int | None,
    gradient_accumulation_steps: int,
    num_iterations: int = 1,
    what: str = "cadence",
) -> int:
    """``n`` rollout batches in TRL optimizer steps; a ConfigError when that is no whole number of steps.

    >>> rollout_batches_to_steps(3, steps_per_generation=2, gradient_accumulation_steps=4)
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: cadence: 3 rollout batches are 3/2 optimizer steps (steps_per_generation 2 x num_iterations 1 / gradient_accumulation_steps 4 per rollout batch): not a whole number; pick a multiple of 2 rollout batches
    """  # noqa: E501  (a doctest's expected output is one line)
    per = steps_per_rollout_batch(steps_per_generation, gradient_accumulation_steps, num_iterations)
    steps = n * per
    if steps.denominator != 1 or steps < 1:
        raise ConfigError(
            f"{what}: {n} rollout batches are {steps} optimizer steps (steps_per_generation "
            f"{steps_per_generation or gradient_accumulation_steps} x num_iterations {num_iterations} / "
            f"gradient_accumulation_steps {gradient_accumulation_steps} per rollout batch): not a whole number; "
            f"pick a multiple of {per.denominator} rollout batches"
        )
    return int(steps)


def trl_optimizer_steps(
    n_prompts: int,
    epochs: float,
    per_device_train_batch_size: int,
    gradient_accumulation_steps: int,
    steps_per_generation: int | None,
    num_generations: int,
    world_size: int = 1,
    num_iterations: int = 1,
) -> int:
    """The optimizer steps TRL 1.16 trains for ``epochs`` over ``n_prompts`` (``max_steps`` unset).

    TRL's ``RepeatSampler`` deals whole rollout batches of ``generation_batch_size /
    num_generations`` prompts (an incomplete last one is dropped) and repeats each for
    ``steps_per_generation x num_iterations`` micro-steps; the Trainer makes an optimizer step
    every ``gradient_accumulation_steps`` of them.
    """
    spg = steps_per_generation or gradient_accumulation_steps
    generation_batch = per_device_train_batch_size * world_size * spg
    if generation_batch % num_generations:
        raise ConfigError(
            f"generation batch {generation_batch} completions is not a multiple of num_generations {num_generations}"
        )
    rollouts_per_epoch = n_prompts // (generation_batch // num_generations)
    micro_steps = rollouts_per_epoch * spg * num_iterations  # per process: each rollout batch's share
    return math.ceil(epochs * (micro_steps // gradient_accumulation_steps))  # the Trainer's max_steps
