"""The paper's GRPO objective (Sec. 3.3) against the loss and advantages TRL's GRPOTrainer computes.

TRL runs unmodified: a real ``GRPOTrainer`` built from ``GRPOConfig(**TRL_PAPER_SETTINGS)`` on the
tiny random Qwen3, its ``_compute_loss`` fed fixed per-token log-probs (the one method replaced is
the model forward, ``_get_per_token_logps_and_entropies``) and its advantages computed by
``_generate_and_score_completions`` from fixed completions (TRL's public ``rollout_func``) and
fixed rewards (a reward function that reads a dataset column).

Tolerance: losses and gradients in float64 agree to TOL (rtol 1e-10; only the summation order
differs); advantages, which TRL computes in float32, to ADV_TOL (rtol 1e-5).
"""

from __future__ import annotations

import doctest
import math
import warnings
from unittest.mock import patch

import pytest

torch = pytest.importorskip("torch")

from lazymem.train import objective  # noqa: E402
from lazymem.train.objective import (  # noqa: E402
    TRL_ADV_DELTA,
    TRL_PAPER_SETTINGS,
    VERL_ADV_DELTA,
    group_advantages,
    grpo_loss,
    k3_kl,
)

G = 8  # rollouts per prompt (paper Table tab:hyperparams)
T = 12  # padded completion length of the random batches
TOL = dict(rtol=1e-10, atol=1e-12)
ADV_TOL = dict(rtol=1e-5, atol=1e-6)
F64 = torch.float64


def test_doctests():
    assert doctest.testmod(objective).failed == 0


# --- hand-worked: one group of two rollouts ----------------------------------------------------


def _two_rollouts():
    """A = +1: tokens with rho = 0.6/0.4 = 1.5 and 1; A = -1: one token with rho = 0.5, ref/pi = 2."""
    ln = lambda *p: torch.tensor([math.log(x) for x in p], dtype=F64)  # noqa: E731
    logp = torch.stack([ln(0.6, 0.5), ln(0.2, 0.9)])  # 0.9: padding, never read
    old = torch.stack([ln(0.4, 0.5), ln(0.4, 0.1)])
    ref = torch.stack([ln(0.6, 0.5), ln(0.4, 0.7)])
    mask = torch.tensor([[1, 1], [1, 0]])
    return logp, old, ref, torch.tensor([1.0, -1.0], dtype=F64), mask


def test_hand_worked_loss():
    logp, old, ref, adv, mask = _two_rollouts()
    # l = min(1.5, 1.2) * 1 + 1 * 1 + min(0.5 * -1, 0.8 * -1) = 1.2 + 1.0 - 0.8 = 1.4
    # k3 = 2 - ln 2 - 1 on the third token, 0 elsewhere; 3 tokens in the group
    expected = -(1.4 - 0.001 * (1 - math.log(2))) / 3
    assert grpo_loss(logp, old, ref, adv, mask).item() == pytest.approx(expected, rel=1e-12)
    assert grpo_loss(logp, old, ref, adv, mask, group_size=2).item() == pytest.approx(expected, rel=1e-12)
    # per-rollout averaging (TRL loss_type="grpo") weights the short rollout's token twice as much
    per_rollout = -((1.2 + 1.0) / 2 + (-0.8 - 0.001 * (1 - math.log(2)))) / 2
    assert abs(expected - per_rollout) > 0.1
    # eps = 0.6 moves rho = 1.5 inside the clip range: 1.5 + 1.0 - 0.5 = 2.0
    assert grpo_loss(logp, old, ref, adv, mask, eps=0.6, beta=0.0).item() == pytest.approx(-2.0 / 3)


def test_hand_worked_advantages():
    # mean 0.5, sample std sqrt(0.5) (population std would be 0.5, giving +-1)
    a = group_advantages(torch.tensor([1.0, 0.0], dtype=F64), group_size=2, delta=0.0)
    assert a.tolist() == pytest.approx([math.sqrt(0.5), -math.sqrt(0.5)])
    a = group_advantages(torch.tensor([1.0, 0.0], dtype=F64), group_size=2)
    assert a[0].item() == pytest.approx(0.5 / (math.sqrt(0.5) + VERL_ADV_DELTA), rel=1e-12)
    assert group_advantages(torch.tensor([3.0, 3.0, 3.0]), 3).tolist() == [0.0, 0.0, 0.0]
    assert group_advantages(torch.tensor([1.0, 0.0, 5.0, 1.0]), 2, scale=False).tolist() == [0.5, -0.5, 2.0, -2.0]
    for bad in [(torch.tensor([1.0, 2.0, 3.0]), 2), (torch.tensor([1.0, 2.0]), 1), (torch.ones(2, 2), 2)]:
        with pytest.raises(ValueError):
            group_advantages(*bad)


def test_k3_is_nonnegative_and_zero_on_agreement():
    logp, ref = -3 * torch.rand(50, dtype=F64), -3 * torch.rand(50, dtype=F64)
    assert (k3_kl(logp, ref) >= 0).all() and (k3_kl(logp, logp) == 0).all()
    assert k3_kl(torch.tensor(math.log(0.2)), torch.tensor(math.log(0.4))).item() == pytest.approx(1 - math.log(2))


def test_dual_clip_floors_negative_advantages_only():
    ones = torch.ones(2, 1, dtype=F64)
    logp, old = ones * math.log(5.0), ones * 0.0  # rho = 5
    adv = torch.tensor([1.0, -1.0], dtype=F64)
    # A = +1: min(5, 1.2) = 1.2 either way; A = -1: min(-5, -1.2) = -5, floored at -3 by clip_c
    assert grpo_loss(logp, old, logp, adv, ones, beta=0.0).item() == pytest.approx(-(1.2 - 5) / 2)
    assert grpo_loss(logp, old, logp, adv, ones, beta=0.0, clip_c=3.0).item() == pytest.approx(-(1.2 - 3) / 2)


# --- TRL's own loss on the same tensors --------------------------------------------------------
# Everything below imports TRL and builds a trainer on the tiny Qwen3 (~15-30 s once): slow.


def _rows(rewards):
    """Generation-batch rows as TRL's sampler yields them: each prompt's G copies adjacent."""
    return [{"prompt": f"prompt {i // G}", "r": float(r)} for i, r in enumerate(rewards)]


def reward_column(completions, r, **kwargs):
    """The fixed reward of each row (the dataset column ``r``)."""
    return list(r)


def fixed_rollouts(prompts, trainer):
    """Completions of lengths 1..12 ending in EOS, prompts of 2-4 tokens."""
    eos = trainer.processing_class.eos_token_id
    return {
        "prompt_ids": [[10 + j for j in range(2 + i % 3)] for i in range(len(prompts))],
        "completion_ids": [[100 + j for j in range((5 * i) % T)] + [eos] for i in range(len(prompts))],
        "logprobs": None,
    }


@pytest.fixture(scope="module")
def trainer(tiny_model, tmp_path_factory):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")),
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        num_generations=G,
        per_device_train_batch_size=3 * G,
        max_completion_length=T,
        **TRL_PAPER_SETTINGS,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rollout_func is marked experimental
        t = GRPOTrainer(
            model=tiny_model,
            reward_funcs=reward_column,
            args=args,
            rollout_func=fixed_rollouts,
            train_dataset=Dataset.from_dict({"prompt": ["prompt 0"], "r": [0.0]}),
        )
    t.model.train()  # the train-mode branches (gradient accumulation) of _compute_loss
    t.current_gradient_accumulation_steps = 1  # set by Trainer's training loop, which is not run
    return t


def trl_loss(trainer, inputs, logp):
    """TRL's unmodified ``_compute_loss`` on ``inputs``, the policy's per-token log-probs being ``logp``."""

    def forward(model, input_ids, attention_mask, logits_to_keep, **kwargs):
        assert logits_to_keep == logp.shape[1]
        return logp, torch.zeros_like(logp), None

    with patch.object(trainer, "_get_per_token_logps_and_entropies", forward):
        return trainer._compute_loss(trainer.model, inputs)


def random_batch(groups, seed, lengths=None, spread=0.3):
    """Inputs for ``_compute_loss`` and the leaf policy log-probs: `groups` groups of G rollouts."""
    g = torch.Generator().manual_seed(seed)
    b = groups * G
    lengths = torch.randint(3, T + 1, (b,), generator=g) if lengths is None else torch.as_tensor(lengths)
    mask = (torch.arange(T) < lengths[:, None]).long()
    old = -0.1 - 3 * torch.rand(b, T, generator=g, dtype=F64)
    log_rho = spread * torch.randn(b, T, generator=g, dtype=F64)
    log_rho[:, :3] = torch.tensor([0.5, -0.5, 0.05], dtype=F64)  # rho = 1.65, 0.61, 1.05 in every rollout
    logp = old + log_rho
    ref = logp + 0.3 * torch.randn(b, T, generator=g, dtype=F64)
    adv = group_advantages(torch.rand(b, generator=g, dtype=F64), G, delta=TRL_ADV_DELTA)
    inputs = {
        "prompt_ids": torch.full((b, 3), 10),
        "prompt_mask": torch.ones(b, 3, dtype=torch.long),
        "completion_ids": torch.full((b, T), 100),
        "completion_mask": mask,
        "advantages": adv,
        "old_per_token_logps": old,
        "ref_per_token_logps": ref.detach(),
        "num_items_in_batch": mask.sum(),
    }  # what _generate_and_score_completions sends, one process
    return inputs, logp.requires_grad_()


def _ours(inputs, logp, **kw):
    return grpo_loss(
        logp,
        inputs["old_per_token_logps"],
        inputs["ref_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        eps=0.2,
        beta=0.001,
        **kw,
    )


def _grad(loss, logp):
    return torch.autograd.grad(loss, logp)[0]


def _covers_all_cases(inputs, logp):
    m = inputs["completion_mask"].bool()
    rho = (logp - inputs["old_per_token_logps"]).exp()[m]
    sign = (inputs["advantages"][:, None] > 0).expand_as(m)[m]
    return all(
        ((rho > 1.2) & s).any() and ((rho < 0.8) & s).any() and ((rho > 0.8) & (rho < 1.2) & s).any()
        for s in (sign, ~sign)
    )


@pytest.mark.slow
def test_trl_settings_are_read_as_the_paper_means(trainer):
    assert (trainer.loss_type, trainer.beta, trainer.epsilon_low, trainer.epsilon_high) == ("dapo", 0.001, 0.2, 0.2)
    assert trainer.importance_sampling_level == "token" and trainer.scale_rewards == "group"
    assert trainer.args.use_bias_correction_kl is False and trainer.args.delta is None
    assert trainer.ref_model is not None  # beta > 0 loads the reference policy


@pytest.mark.slow
def test_hand_worked_case_in_trl(trainer):
    logp, old, ref, adv, mask = _two_rollouts()
    inputs = {
        "prompt_ids": torch.full((2, 3), 10),
        "prompt_mask": torch.ones(2, 3, dtype=torch.long),
        "completion_ids": torch.full((2, 2), 100),
        "completion_mask": mask,
        "advantages": adv,
        "old_per_token_logps": old,
        "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    assert trl_loss(trainer, inputs, logp).item() == pytest.approx(-(1.4 - 0.001 * (1 - math.log(2))) / 3, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_group_trl_loss_is_the_papers(trainer, seed):
    inputs, logp = random_batch(groups=1, seed=seed, spread=0.5)
    assert _covers_all_cases(inputs, logp)
    theirs, ours = trl_loss(trainer, inputs, logp), _ours(inputs, logp, group_size=G)
    torch.testing.assert_close(ours, theirs, **TOL)
    torch.testing.assert_close(_grad(ours, logp), _grad(theirs, logp), **TOL)


@pytest.mark.slow
def test_several_groups_trl_pools_their_tokens(trainer):
    inputs, logp = random_batch(groups=3, seed=3, spread=0.5)
    assert _covers_all_cases(inputs, logp)
    totals = inputs["completion_mask"].sum(1).view(-1, G).sum(1)
    assert len(set(totals.tolist())) == 3  # unequal token totals per group
    theirs = trl_loss(trainer, inputs, logp)
    torch.testing.assert_close(_ours(inputs, logp), theirs, **TOL)  # all tokens of the batch
    torch.testing.assert_close(_grad(_ours(inputs, logp), logp), _grad(theirs, logp), **TOL)
    # Eq. loss (each group by its own tokens, then the mean over prompts) is a different number
    assert abs(_ours(inputs, logp, group_size=G).item() - theirs.item()) > 1e-3


@pytest.mark.slow
def test_several_groups_with_equal_token_totals_trl_loss_is_the_papers(trainer):
    lengths = torch.tensor([1, 12, 3, 9, 5, 7, 2, 11])  # every group: the same lengths, reordered
    g = torch.Generator().manual_seed(4)
    inputs, logp = random_batch(
        groups=3, seed=4, lengths=torch.cat([lengths[torch.randperm(G, generator=g)] for _ in range(3)])
    )
    theirs = trl_loss(trainer, inputs, logp)
    torch.testing.assert_close(_ours(inputs, logp, group_size=G), theirs, **TOL)


@pytest.mark.slow
def test_dapo_normaliser_spans_the_generation_batch(trainer, monkeypatch):
    inputs, logp = random_batch(groups=2, seed=5)
    halves = [
        {k: (v if k == "num_items_in_batch" else v[s]) for k, v in inputs.items()}
        for s in (slice(0, G), slice(G, 2 * G))
    ]  # num_items_in_batch stays the whole batch's
    # Two accumulation steps, one optimizer step: the step's loss is the pooled token mean
    monkeypatch.setattr(trainer, "current_gradient_accumulation_steps", 2)
    monkeypatch.setattr(trainer.args, "steps_per_generation", 2)
    total = sum(trl_loss(trainer, h, logp[s]) for h, s in zip(halves, (slice(0, G), slice(G, 2 * G))))
    torch.testing.assert_close(total, _ours(inputs, logp), **TOL)
    # Two optimizer steps per generation (the paper's batch 32 / mini-batch 16): each step divides by
    # half the generation batch's tokens, not by its own
    monkeypatch.setattr(trainer, "current_gradient_accumulation_steps", 1)
    n = inputs["num_items_in_batch"].item()
    for h, s in zip(halves, (slice(0, G), slice(G, 2 * G))):
        own = h["completion_mask"].sum().item()
        torch.testing.assert_close(trl_loss(trainer, h, logp[s]), _ours(h, logp[s]) * own / (n / 2), **TOL)


@pytest.mark.slow
def test_trl_default_kl_bias_correction_is_not_the_papers(trainer, monkeypatch):
    inputs, logp = random_batch(groups=1, seed=6)
    monkeypatch.setattr(trainer.args, "use_bias_correction_kl", True)  # TRL's default
    assert abs(trl_loss(trainer, inputs, logp).item() - _ours(inputs, logp).item()) > 1e-6
    # on-policy (rho = 1) the value agrees but the gradient does not
    inputs["old_per_token_logps"] = logp.detach().clone()
    theirs, ours = trl_loss(trainer, inputs, logp), _ours(inputs, logp)
    torch.testing.assert_close(ours, theirs, **TOL)
    assert not torch.allclose(_grad(ours, logp), _grad(theirs, logp), **TOL)


@pytest.mark.slow
def test_trl_delta_is_verls_dual_clip(trainer, monkeypatch):
    inputs, logp = random_batch(groups=2, seed=7, spread=1.0)
    m = inputs["completion_mask"].bool()
    rho = (logp - inputs["old_per_token_logps"]).exp()
    assert ((rho > 3) & (inputs["advantages"][:, None] < 0) & m).any()
    monkeypatch.setattr(trainer.args, "delta", 3.0)
    theirs = trl_loss(trainer, inputs, logp)
    torch.testing.assert_close(_ours(inputs, logp, clip_c=3.0), theirs, **TOL)
    torch.testing.assert_close(_grad(_ours(inputs, logp, clip_c=3.0), logp), _grad(theirs, logp), **TOL)
    assert abs(_ours(inputs, logp).item() - theirs.item()) > 1e-3  # Eq. clip has no floor


# --- TRL's advantages from rewards --------------------------------------------------------------


@pytest.mark.slow
def test_group_advantages_are_trls(trainer):
    g = torch.Generator().manual_seed(8)
    rewards = torch.cat(
        [
            torch.rand(G, generator=g),  # a spread of composite rewards
            (torch.rand(G, generator=g) > 0.5).float(),  # valid / invalid
            torch.full((G,), 1.0),  # no signal: all advantages 0
            torch.full((G,), 0.7),
        ]
    )  # no signal, but float32 mean(0.7) != 0.7

    def forward(model, input_ids, attention_mask, logits_to_keep, **kwargs):  # only the ref log-probs
        return torch.zeros(len(input_ids), logits_to_keep), None, None

    with patch.object(trainer, "_get_per_token_logps_and_entropies", forward):
        out = trainer._generate_and_score_completions(_rows(rewards.tolist()))
    torch.testing.assert_close(out["advantages"], group_advantages(rewards, G, delta=TRL_ADV_DELTA), **ADV_TOL)
    assert (out["advantages"][2 * G : 3 * G] == 0).all()
    # an equal-reward group gets a rounding error over (std + delta): 6e-4 in TRL, 0.06 with VERL's delta
    assert 1e-4 < out["advantages"][3 * G :].abs().min() <= out["advantages"][3 * G :].abs().max() < 1e-3
    assert group_advantages(rewards[3 * G :], G).abs().min() > 0.01
    assert out["num_items_in_batch"].item() == out["completion_mask"].sum().item()  # the dapo normaliser
    lengths = [len(c) for c in fixed_rollouts(rewards, trainer)["completion_ids"]]
    assert out["completion_mask"].sum(1).tolist() == lengths
    # VERL's delta (1e-6, the paper's run) changes them by (s + 1e-6) / (s + 1e-4): here under 0.1%
    verl = group_advantages(rewards[: 2 * G], G)
    torch.testing.assert_close(out["advantages"][: 2 * G], verl, rtol=1e-3, atol=0)
    assert not torch.allclose(out["advantages"][: 2 * G], verl, **ADV_TOL)
    # both take the sample std: the population std would scale them by sqrt(G / (G - 1))
    population = group_advantages(rewards[:G], G, delta=0.0) * math.sqrt(G / (G - 1))
    assert not torch.allclose(out["advantages"][:G], population, rtol=1e-2)
