"""The paper's GRPO objective (Sec. 3.3) in plain PyTorch: a reference to check TRL against.

Written from the paper's equations, not from TRL:

- ``group_advantages``: Eq. advantage, A^k = (r^k - mean r) / (std r + delta) per group of G;
- ``k3_kl``: the low-variance k3 estimator, exp(ref - logp) - (ref - logp) - 1 per token;
- ``grpo_loss``: minus Eq. loss, with rho_t = exp(logp - old_logp) (Eq. ratio) and
  l_t = min(rho_t A, clip(rho_t, 1 - eps, 1 + eps) A) (Eq. clip), summed over every token of
  the group together with -beta k3_t and divided by the group's token count (DAPO).

Only tensor methods are used, so importing this module does not import torch.

How TRL 1.16 (``GRPOConfig``) and VERL 0.7 (the paper's framework, Table ``tab:hyperparams``:
everything not listed at VERL defaults) differ, from TRL's ``GRPOTrainer._compute_loss`` and
``_generate_and_score_completions`` and VERL v0.7.0's ``core_algos.py`` and ``dp_actor.py``
(0.7.1 was not available to read; ``main`` of 2026-01-29 agrees on every point below).
``TRL_PAPER_SETTINGS`` collects the TRL settings that give the paper's objective.

1. Advantage std. The paper leaves it open; VERL (``torch.std``) and TRL (``nanstd``) both take
   the sample std (n - 1). delta is VERL's ``epsilon=1e-6``; TRL hard-codes 1e-4 (no setting),
   so its advantages are ``group_advantages(r, G, delta=TRL_ADV_DELTA)``: smaller than VERL's
   by the factor (s + 1e-6) / (s + 1e-4), under 1% once the group std s >= 0.01. A group of
   equal rewards gets 0 only if float32 keeps its mean exact (0, 0.5, 1): eight rewards of 0.7
   get +-6e-4 in TRL and +-0.056 with VERL's delta. TRL ``scale_rewards="group"`` is VERL's
   ``norm_adv_by_std_in_grpo=True``.
2. Token normalisation. Eq. loss divides by the tokens of each group, then averages over
   prompts. TRL ``loss_type="dapo"`` divides an optimizer step's token sum by
   ``num_items_in_batch`` (the generation batch's tokens, all processes) x
   gradient_accumulation_steps / steps_per_generation: the batch's tokens per optimizer step on
   average, not the step's own. VERL's default ``token-mean`` (legacy FSDP worker) divides by
   the tokens of each micro-batch (4 sequences per GPU in the paper, reordered by length
   regardless of group) and averages micro-batches and GPUs. TRL equals
   Eq. loss exactly when one optimizer step takes the whole generation batch
   (steps_per_generation = gradient_accumulation_steps, the default) and that batch is one
   group or groups of equal token totals; otherwise TRL weights group g by T_g / mean(T).
   ``grpo_loss(..., group_size=None)`` is TRL's pooled normalisation, ``group_size=G`` the
   paper's.
3. KL. Both add beta * k3 to the per-token loss (not to the reward: VERL
   ``use_kl_in_reward=False``, TRL has no in-reward KL) under the same normaliser. VERL needs
   ``use_kl_loss=True`` (default False) with ``kl_loss_coef=0.001, kl_loss_type="low_var_kl"``
   (= "k3"); its ``algorithm.kl_ctrl.kl_coef`` (also 0.001) is the unused in-reward one. TRL's
   ``beta`` defaults to 0.0 (no KL, no reference model), and its default
   ``use_bias_correction_kl=True`` multiplies k3 by rho: a different value off-policy and a
   different gradient always, so set it False. VERL clamps k3 to [-10, 10] and ref - logp to
   +-20; TRL does not (equal while -11 < ref - logp < 2.6, where k3 < 10).
4. Clipping. VERL ``clip_ratio``/``_low``/``_high`` = 0.2 is TRL ``epsilon`` (0.2) with
   ``epsilon_high`` (defaults to epsilon). VERL's ``vanilla`` loss also dual-clips by default
   (``clip_ratio_c=3.0``: for A < 0 the surrogate is floored at 3A), which Eq. clip does not;
   TRL's default ``delta=None`` has none, ``delta=3.0`` reproduces it in value and gradient
   (``grpo_loss(..., clip_c=3.0)``). VERL also clamps logp - old_logp to +-20; TRL does not.
5. TRL options that change the objective, off in ``TRL_PAPER_SETTINGS`` as in VERL 0.7:
   ``vllm_importance_sampling_correction`` (default True: with vLLM, the loss is reweighted by a
   vLLM/trainer ratio; VERL's ``rollout_is`` is null), ``delta``, ``top_entropy_quantile``,
   ``off_policy_mask_threshold``, ``entropy_coef``, ``mask_truncated_completions``;
   ``importance_sampling_level="token"`` is VERL's per-token ratio.
6. Batch shape (recipe, not objective). VERL counts prompts: batch 32, ``ppo_mini_batch_size``
   16, ``ppo_epochs`` 1, so two optimizer steps per rollout batch, the second off-policy. TRL
   counts completions: generation batch 32 x 8 = 256, per_device_train_batch_size x processes x
   gradient_accumulation_steps = 128, steps_per_generation = 2 x gradient_accumulation_steps,
   num_iterations=1; TRL then computes old log-probs itself. Both divide logits by the
   sampling temperature (0.9) when scoring tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the functions use tensor methods, never the torch module
    import torch

VERL_ADV_DELTA = 1e-6  # VERL compute_grpo_outcome_advantage(epsilon=...), what the paper ran
TRL_ADV_DELTA = 1e-4  # hard-coded in TRL GRPOTrainer._generate_and_score_completions

# GRPOConfig settings under which TRL's loss is the paper's (see notes 2-5 above); the group size
# (num_generations=8) and the batch shape (note 6) belong to the recipe.
TRL_PAPER_SETTINGS = {
    "loss_type": "dapo",  # token-sum / token-count (over the generation batch: note 2)
    "beta": 0.001,  # KL coefficient; TRL's default 0.0 drops the KL term
    "use_bias_correction_kl": False,  # plain k3, not rho * k3
    "epsilon": 0.2,  # symmetric clip ...
    "epsilon_high": 0.2,  # ... on both sides
    "delta": None,  # no dual clip (Eq. clip); 3.0 reproduces VERL's clip_ratio_c default
    "importance_sampling_level": "token",
    "scale_rewards": "group",  # per-group sample std, delta 1e-4 (note 1)
    "multi_objective_aggregation": "sum_then_normalize",  # normalise the one composite reward
    "num_iterations": 1,  # VERL ppo_epochs
    "top_entropy_quantile": 1.0,
    "off_policy_mask_threshold": None,
    "entropy_coef": 0.0,
    "mask_truncated_completions": False,
    "vllm_importance_sampling_correction": False,
}


def group_advantages(
    rewards: torch.Tensor, group_size: int, delta: float = VERL_ADV_DELTA, scale: bool = True
) -> torch.Tensor:
    """Eq. advantage: each reward against its group's mean, over (sample std + delta).

    ``rewards`` is flat, the G rollouts of each prompt adjacent (as TRL's sampler orders them).
    The std is the sample std (n - 1), as in VERL and TRL; delta > 0 keeps a group of equal
    rewards at 0 (with delta = 0 it is 0/0). ``scale=False`` only centres
    (Dr. GRPO; VERL ``norm_adv_by_std_in_grpo=False``, TRL ``scale_rewards="none"``).

    >>> import torch
    >>> group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), group_size=2)
    tensor([ 0.7071, -0.7071,  0.0000,  0.0000])
    """
    if group_size < 2 or rewards.dim() != 1 or rewards.numel() % group_size:
        raise ValueError(
            f"need a flat tensor of whole groups of >= 2 rollouts, got shape "
            f"{tuple(rewards.shape)} with group_size={group_size}"
        )
    grouped = rewards.view(-1, group_size)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if scale:
        centred = centred / (grouped.std(dim=1, keepdim=True) + delta)
    return centred.reshape(-1)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi_theta || pi_ref): exp(d) - d - 1 with d = ref_logp - logp.

    Non-negative, zero where the two log-probs agree; VERL's "low_var_kl" (which also clamps it
    to [-10, 10]) and the only KL estimator of TRL's GRPO.

    >>> import math, torch
    >>> k3_kl(torch.tensor([math.log(0.2), -1.0]), torch.tensor([math.log(0.4), -1.0]))
    tensor([0.3069, 0.0000])
    """
    d = ref_logp - logp
    return d.exp() - d - 1


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    eps: float = 0.2,
    beta: float = 0.001,
    group_size: int | None = None,
    clip_c: float | None = None,
) -> torch.Tensor:
    """Minus Eq. loss: -(sum_t l_t - beta k3_t) / (token count), a scalar to minimise.

    Args:
        logp, old_logp, ref_logp: (B, T) log-probs of the sampled tokens under pi_theta (carries
            the gradient), the sampling policy pi_old and the reference pi_ref.
        advantages: (B,) one advantage per rollout, or (B, T).
        mask: (B, T) 1 for completion tokens, 0 for padding (whose values do not enter the loss).
        group_size: None pools every token of the batch (one group, or TRL's ``dapo``);
            G normalises each group of G adjacent rollouts by its own tokens and averages the
            groups, as Eq. loss writes it.
        clip_c: VERL's dual-clip bound (``clip_ratio_c``, TRL ``delta``): for A < 0, l_t is
            floored at clip_c * A. None (the paper's Eq. clip) leaves it out.

    One group of two rollouts, A = +1 (tokens with rho = 1.5 and 1) and A = -1 (one token with
    rho = 0.5 and ref/pi_theta = 2): l = 1.2 + 1.0 - 0.8 = 1.4, k3 = 1 - ln 2 on the last token,
    loss = -(1.4 - 0.001 (1 - ln 2)) / 3:

    >>> import math, torch
    >>> ln = lambda *p: torch.tensor([math.log(x) for x in p], dtype=torch.float64)
    >>> logp = torch.stack([ln(0.6, 0.5), ln(0.2, 1.0)])
    >>> old = torch.stack([ln(0.4, 0.5), ln(0.4, 1.0)])
    >>> ref = torch.stack([ln(0.6, 0.5), ln(0.4, 1.0)])
    >>> mask = torch.tensor([[1, 1], [1, 0]])
    >>> A = torch.tensor([1.0, -1.0], dtype=torch.float64)
    >>> round(grpo_loss(logp, old, ref, A, mask).item(), 6)
    -0.466564
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)
    ratio = (logp - old_logp).exp()
    clipped = ratio.clamp(1 - eps, 1 + eps)
    surrogate = (ratio * advantages).minimum(clipped * advantages)
    if clip_c is not None:
        floor = (clip_c * advantages).expand_as(surrogate)
        surrogate = surrogate.where(advantages >= 0, surrogate.maximum(floor))
    per_token = surrogate - beta * k3_kl(logp, ref_logp)
    keep = mask.bool()
    per_token = per_token.where(keep, per_token.new_zeros(()))  # padding may hold inf / nan
    tokens = keep.to(per_token.dtype)
    if group_size is None:
        objective = per_token.sum() / tokens.sum().clamp(min=1.0)
    else:
        if logp.shape[0] % group_size:
            raise ValueError(f"{logp.shape[0]} rollouts are not whole groups of {group_size}")
        group_sums = per_token.sum(dim=-1).view(-1, group_size).sum(dim=1)
        group_tokens = tokens.sum(dim=-1).view(-1, group_size).sum(dim=1)
        objective = (group_sums / group_tokens.clamp(min=1.0)).mean()
    return -objective
