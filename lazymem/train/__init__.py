"""Training the memory-processing model (paper Sec. 3.3): SFT data, rewards, curriculum, SFT and GRPO.

Modules, in the order a run uses them:

- ``sft_data`` (+ ``teacher``, ``datacard``): query-window pairs from the real retrieval and
  windowing, built by the same ``window_prompts`` as inference; a teacher (any LLM client, or
  the explicit offline gold-label teacher), discards by reason, window-level balancing, TRL
  prompt/completion JSONL and a data card;
- ``rl_data``: RL prompts balanced 50/50 by gold presence, with the columns the reward reads;
- ``rewards`` (+ ``quality``): the format gate, R_act (eta-weighted gold / non-gold accuracy),
  the judged R_qual, the composite ``LazyMemReward`` with TRL's reward signature;
- ``diagnostics``: the reward-ordering diagnostic (Micro / Symmetric / eta-weighted);
- ``curriculum``: ``FormatCurriculum``, the callback moving lambda 0 -> 0.5 past tau;
- ``objective``: a pure-PyTorch reference of the paper's GRPO objective, and the TRL settings
  under which TRL computes exactly it;
- ``sft``, ``grpo`` (+ ``modeling``, ``recipe``, ``logs``): the TRL trainers as the paper's recipes,
  resumable, driven by ``configs/recipes/<model>/<stage>.yaml`` and ``lazymem train ...``.

Training sits beside evaluation, above the query pipeline, and never imports ``lazymem.eval``.
Nothing heavy is imported at import time.
"""

from lazymem.train.diagnostics import Ordering, RolloutScore, reward_ordering
from lazymem.train.objective import TRL_PAPER_SETTINGS, group_advantages, grpo_loss, k3_kl
from lazymem.train.quality import JudgeParseError, QualityJudge, parse_quality_judgement, quality_reward, quality_score
from lazymem.train.rewards import (
    ETA,
    LAMBDA_PHASE1,
    LAMBDA_PHASE2,
    TAU,
    LazyMemReward,
    action_accuracies,
    action_reward,
    completion_text,
    composite_reward,
    curriculum_lambda,
    format_gate,
)
from lazymem.train.rl_data import RLDataConfig, build_rl_prompts
from lazymem.train.sft_data import HELD_OUT_HISTORIES, HeldOutError, SFTDataConfig, build_sft_data

__all__ = [
    "Ordering",
    "RolloutScore",
    "reward_ordering",
    "TRL_PAPER_SETTINGS",
    "group_advantages",
    "grpo_loss",
    "k3_kl",
    "JudgeParseError",
    "QualityJudge",
    "parse_quality_judgement",
    "quality_reward",
    "quality_score",
    "ETA",
    "LAMBDA_PHASE1",
    "LAMBDA_PHASE2",
    "TAU",
    "LazyMemReward",
    "action_accuracies",
    "action_reward",
    "completion_text",
    "composite_reward",
    "curriculum_lambda",
    "format_gate",
    "RLDataConfig",
    "build_rl_prompts",
    "HELD_OUT_HISTORIES",
    "HeldOutError",
    "SFTDataConfig",
    "build_sft_data",
]
