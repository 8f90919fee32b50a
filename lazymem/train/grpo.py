"""GRPO for the memory-processing model with TRL's GRPOTrainer, set up as the paper's recipe (Sec. 3.3).

The policy starts from the SFT checkpoint: a full model directory (``base``), or the base
model plus the SFT LoRA adapter (``adapter``), which GRPO keeps training while TRL holds a
frozen copy of it as the reference policy. Rewards: ``LazyMemReward`` (format gate x
((1 - lambda) R_act + lambda R_qual)); the ``FormatCurriculum`` callback validates format
validity every ``eval_every_rollout_batches`` and switches lambda 0 -> 0.5 past tau. Checkpoints
every ``save_every_rollout_batches``; a rerun resumes from the last one, curriculum state included.
Both cadences are in rollout batches (the paper's unit: VERL's training steps) and become TRL
optimizer steps in ``grpo_config_kwargs`` (``lazymem.train.cadence``); old recipes may still give
``eval_steps`` / ``save_steps`` in optimizer steps (not both for one cadence).

TRL settings that realise the paper's table (VERL 0.7.1), and where their meaning differs:

- global batch 32 prompts x 8 rollouts: TRL counts *completions* per device:
  ``per_device_train_batch_size * gradient_accumulation_steps * n_processes = 32 * 8`` per
  optimizer step; VERL's PPO mini-batch of 16 prompts (two updates per 32-prompt rollout
  batch) is ``steps_per_generation = 2 * gradient_accumulation_steps`` with half the
  accumulation (``configs/recipes/lazymem-4b-paper/grpo.yaml``);
- KL 0.001 ``low_var_kl``: TRL's ``beta`` > 0 adds the k3 estimator to the per-token loss (as
  VERL's ``use_kl_loss``), against a reference TRL builds itself;
- DAPO token normalisation: ``loss_type="dapo"`` (see ``lazymem.train.objective`` for when it
  equals the paper's per-group sum / count);
- symmetric clip 0.2: ``epsilon = epsilon_high = 0.2``; VERL also applied a dual clip (3.0) that
  the paper's equation omits: ``delta: 3.0`` reproduces it;
- TRL defaults that change the objective are turned off (``TRL_PAPER_SETTINGS``): the KL is
  plain k3 (``use_bias_correction_kl=False``), no vLLM importance reweighting;
- advantages: ``scale_rewards="group"`` (TRL: std with Bessel's correction, + 1e-4; VERL: its
  own epsilon): see ``lazymem.train.objective``;
- the paper validates every 10 training steps and checkpoints every 30, keeping five; a VERL
  training step is one rollout batch, which TRL makes ``steps_per_generation x num_iterations /
  gradient_accumulation_steps`` optimizer steps (2 in the paper recipe: 1,872 optimizer steps for
  VERL's 936), so the recipe states the cadence in rollout batches and the code converts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.fields import h, require
from lazymem.llm import LLMConfig
from lazymem.train.cadence import rollout_batches_to_steps, steps_per_rollout_batch
from lazymem.train.modeling import DTYPES, LoraSettings, check_master_weights, has_cuda, load_policy, load_tokenizer
from lazymem.train.objective import TRL_PAPER_SETTINGS
from lazymem.train.recipe import load_recipe
from lazymem.train.rewards import ETA, LAMBDA_PHASE2, TAU
from lazymem.train.sft import finished_result, train_and_record

REQUIRED_COLUMNS = ("prompt", "decision_positions", "gold_labels")
PAPER_EVAL_EVERY, PAPER_SAVE_EVERY = 10, 30  # rollout batches (VERL training steps): test_freq, save_freq
CADENCE_KEYS = ("eval_every_rollout_batches", "save_every_rollout_batches", "eval_steps", "save_steps")


@dataclass(frozen=True)
class GRPORecipe:
    """One GRPO run; the same keys as ``configs/recipes/*/grpo.yaml`` (defaults: the paper's table)."""

    base: str = field(default="smollm2-offline", metadata=h("the SFT model dir (full FT), or the base of `adapter`"))
    adapter: str | None = field(
        default=None, metadata=h("the SFT LoRA adapter dir, trained on (reference = a frozen copy)")
    )
    lora: LoraSettings | None = field(
        default=None, metadata=h("a NEW LoRA on `base` when no adapter is given; null = full")
    )
    data: str = field(default="", metadata=h("RL prompts JSONL from `lazymem train rl-data`"))
    validation_data: str | None = field(default=None, metadata=h("RL prompts of the validation split (curriculum)"))
    max_validation_prompts: int = field(default=256, metadata=h("validate on at most this many prompts"))
    output_dir: str = field(default="runs/train/grpo", metadata=h("checkpoints, final policy, train_result.json"))
    learning_rate: float = field(default=1e-6, metadata=h("paper: 1e-6"))
    lr_scheduler_type: str = field(default="constant", metadata=h("paper: constant"))
    warmup_ratio: float = field(default=0.0, metadata=h("paper: 0"))
    num_train_epochs: float = field(default=3.0, metadata=h("paper: 3"))
    max_steps: int = field(default=-1, metadata=h("stop after N optimizer steps (-1 = epochs)"))
    per_device_train_batch_size: int = field(default=16, metadata=h("COMPLETIONS per device per micro-step"))
    gradient_accumulation_steps: int = field(default=8, metadata=h("micro-steps per optimizer step"))
    steps_per_generation: int | None = field(
        default=None, metadata=h("micro-steps per rollout batch (None = accumulation)")
    )
    num_generations: int = field(default=8, metadata=h("rollouts per prompt G (paper: 8)"))
    temperature: float = field(default=0.9, metadata=h("rollout temperature (paper: 0.9)"))
    top_p: float = field(default=0.95, metadata=h("rollout nucleus (paper: 0.95)"))
    max_completion_length: int = field(default=3072, metadata=h("max generated tokens (paper: 3072)"))
    beta: float = field(default=0.001, metadata=h("KL coefficient, k3 estimator (paper: 0.001 low_var_kl)"))
    epsilon: float = field(default=0.2, metadata=h("symmetric clip ratio (paper: 0.2)"))
    delta: float | None = field(
        default=None,
        metadata=h(
            "dual clip for negative advantages: None = the paper's Eq. "
            "clip; 3.0 = what VERL 0.7.1 ran by default (clip_ratio_c)"
        ),
    )
    loss_type: str = field(default="dapo", metadata=h("token normalisation (paper: DAPO-style)"))
    scale_rewards: str = field(default="group", metadata=h("advantage std normalisation per group"))
    weight_decay: float = field(default=0.01, metadata=h("paper: 0.01"))
    max_grad_norm: float = field(default=1.0, metadata=h("paper: 1.0"))
    bf16: bool = field(default=False, metadata=h("bf16 compute by autocast (paper: true); the weights stay `dtype`"))
    gradient_checkpointing: bool = field(
        default=False, metadata=h("recompute activations in the backward pass: less memory, more time")
    )
    dtype: str = field(
        default="float32",
        metadata=h(
            f"weights dtype, one of {DTYPES}; full fine-tuning (no lora, no adapter) needs float32 (master weights)"
        ),
    )
    dataloader_drop_last: bool = field(default=True, metadata=h("paper: drop the last incomplete batch"))
    eta: float = field(default=ETA, metadata=h("gold-retention weight of R_act (paper: 0.915)"))
    tau: float = field(default=TAU, metadata=h("format-validity threshold of the curriculum (paper: 0.99)"))
    lam_phase2: float = field(default=LAMBDA_PHASE2, metadata=h("quality weight after the switch (paper: 0.5)"))
    judge: LLMConfig | None = field(default=None, metadata=h("reward judge (paper: Qwen3-32B); null = phase 1 only"))
    eval_every_rollout_batches: int | None = field(
        default=None,
        metadata=h(
            "validate format validity every N rollout batches (paper: 10; None = 10 unless eval_steps is set)",
            omit_when_none=True,
        ),
    )
    save_every_rollout_batches: int | None = field(
        default=None,
        metadata=h(
            "checkpoint every N rollout batches (paper: 30; None = 30 unless save_steps is set)", omit_when_none=True
        ),
    )
    eval_steps: int | None = field(
        default=None,
        metadata=h("old recipes: validate every N TRL optimizer steps (not with eval_every_rollout_batches)"),
    )
    save_steps: int | None = field(
        default=None,
        metadata=h("old recipes: checkpoint every N TRL optimizer steps (not with save_every_rollout_batches)"),
    )
    save_total_limit: int = field(default=5, metadata=h("checkpoints kept (paper: 5)"))
    logging_steps: int = field(default=1, metadata=h("log every N steps"))
    use_vllm: bool = field(default=False, metadata=h("generate rollouts with vLLM (GPU nodes)"))
    vllm_mode: str = field(default="colocate", metadata=h("'colocate' or 'server' (`trl vllm-serve`)"))
    seed: int = field(default=42, metadata=h("paper: 42"))
    resume: bool = field(default=True, metadata=h("continue from the last checkpoint in output_dir"))
    report_to: str = field(default="none", metadata=h("'none', 'tensorboard', 'wandb', ..."))

    def __post_init__(self):
        for name in (
            "per_device_train_batch_size",
            "gradient_accumulation_steps",
            "num_generations",
            "max_completion_length",
            "eval_steps",
            "save_steps",
            "save_total_limit",
            "logging_steps",
            "max_validation_prompts",
            "eval_every_rollout_batches",
            "save_every_rollout_batches",
            "steps_per_generation",
        ):
            v = getattr(self, name)
            if v is None and name in CADENCE_KEYS + ("steps_per_generation",):
                continue
            require(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                "GRPORecipe",
                name,
                getattr(self, name),
                "must be an integer >= 1",
            )
        for old, new in (("eval_steps", "eval_every_rollout_batches"), ("save_steps", "save_every_rollout_batches")):
            require(
                getattr(self, old) is None or getattr(self, new) is None,
                "GRPORecipe",
                old,
                getattr(self, old),
                f"give {new} (rollout batches, the paper's unit) or {old} (TRL optimizer steps), not both",
            )
        for prop in ("trl_eval_steps", "trl_save_steps"):  # a cadence that is no whole number of steps fails here
            getattr(self, prop)
        require(
            self.num_generations >= 2,
            "GRPORecipe",
            "num_generations",
            self.num_generations,
            "must be >= 2 (a group needs a baseline)",
        )
        require(self.dtype in DTYPES, "GRPORecipe", "dtype", self.dtype, f"must be one of {DTYPES}")
        check_master_weights("GRPORecipe", self.dtype, self.lora, self.adapter)
        require(
            self.adapter is None or self.lora is None,
            "GRPORecipe",
            "lora",
            self.lora,
            "a new LoRA and an SFT adapter cannot both be set",
        )
        require(
            self.judge is None or isinstance(self.judge, LLMConfig),
            "GRPORecipe",
            "judge",
            self.judge,
            "must be an LLMConfig mapping or null",
        )
        require(0 <= self.warmup_ratio < 1, "GRPORecipe", "warmup_ratio", self.warmup_ratio, "must be in [0, 1)")
        require(
            self.vllm_mode in ("colocate", "server"),
            "GRPORecipe",
            "vllm_mode",
            self.vllm_mode,
            "must be 'colocate' or 'server'",
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> GRPORecipe:
        return load_recipe(cls, path, {"lora": LoraSettings, "judge": LLMConfig})

    def _steps(self, batches: int | None, steps: int | None, default: int, what: str) -> int:
        if steps is not None:
            return steps
        args = (self.steps_per_generation, self.gradient_accumulation_steps, TRL_PAPER_SETTINGS["num_iterations"])
        if batches is None:  # the paper's cadence, to the nearest whole step where it falls between two
            return max(1, round(default * steps_per_rollout_batch(*args)))
        return rollout_batches_to_steps(batches, *args, what=f"GRPORecipe.{what}")

    @property
    def trl_eval_steps(self) -> int:
        """The validation cadence in TRL optimizer steps (``lazymem.train.cadence``)."""
        return self._steps(
            self.eval_every_rollout_batches, self.eval_steps, PAPER_EVAL_EVERY, "eval_every_rollout_batches"
        )

    @property
    def trl_save_steps(self) -> int:
        """The checkpoint cadence in TRL optimizer steps (``lazymem.train.cadence``)."""
        return self._steps(
            self.save_every_rollout_batches, self.save_steps, PAPER_SAVE_EVERY, "save_every_rollout_batches"
        )


def load_rl_dataset(path: str | Path, limit: int | None = None) -> Any:
    """RL prompts JSONL as a ``datasets.Dataset``; names the file and the missing columns."""
    from datasets import load_dataset

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"RL prompts {p} not found: build them with `lazymem train rl-data --config ...`")
    ds = load_dataset("json", data_files=str(p), split="train")
    missing = [c for c in REQUIRED_COLUMNS if c not in ds.column_names]
    if missing:
        raise ConfigError(f"{p}: RL prompts need the columns {list(REQUIRED_COLUMNS)}; missing {missing}")
    return ds.select(range(min(limit, len(ds)))) if limit else ds


def build_reward(recipe: GRPORecipe) -> Any:
    """The LazyMemReward of a recipe (phase 1: lambda 0), with its quality judge when one is configured."""
    from lazymem.train.quality import QualityJudge
    from lazymem.train.rewards import LazyMemReward

    # A QualityJudge built from the config creates its client on first use and stays picklable.
    judge = QualityJudge(recipe.judge) if recipe.judge is not None else None
    return LazyMemReward(eta=recipe.eta, lam=0.0, judge=judge)


def grpo_config_kwargs(recipe: GRPORecipe) -> dict:
    """The keyword arguments of TRL's ``GRPOConfig`` for a recipe, cadences in optimizer steps."""
    # The objective's settings start from the paper's (lazymem.train.objective.TRL_PAPER_SETTINGS:
    # plain k3 KL, no vLLM importance reweighting, ...); the recipe's values override them.
    paper = {
        k: v
        for k, v in TRL_PAPER_SETTINGS.items()
        if k not in ("loss_type", "beta", "epsilon", "epsilon_high", "delta", "scale_rewards")
    }
    return dict(
        **paper,
        epsilon_high=recipe.epsilon,
        delta=recipe.delta,
        output_dir=str(recipe.output_dir),
        learning_rate=recipe.learning_rate,
        lr_scheduler_type=recipe.lr_scheduler_type,
        warmup_steps=recipe.warmup_ratio,
        num_train_epochs=recipe.num_train_epochs,
        max_steps=recipe.max_steps,
        per_device_train_batch_size=recipe.per_device_train_batch_size,
        gradient_accumulation_steps=recipe.gradient_accumulation_steps,
        steps_per_generation=recipe.steps_per_generation,
        num_generations=recipe.num_generations,
        temperature=recipe.temperature,
        top_p=recipe.top_p,
        max_completion_length=recipe.max_completion_length,
        beta=recipe.beta,
        epsilon=recipe.epsilon,
        loss_type=recipe.loss_type,
        scale_rewards=recipe.scale_rewards,
        weight_decay=recipe.weight_decay,
        max_grad_norm=recipe.max_grad_norm,
        bf16=recipe.bf16,
        gradient_checkpointing=recipe.gradient_checkpointing,
        dataloader_drop_last=recipe.dataloader_drop_last,
        eval_strategy="no",
        eval_steps=recipe.trl_eval_steps,
        save_strategy="steps",
        save_steps=recipe.trl_save_steps,
        save_total_limit=recipe.save_total_limit,
        logging_steps=recipe.logging_steps,
        seed=recipe.seed,
        use_vllm=recipe.use_vllm,
        vllm_mode=recipe.vllm_mode,
        report_to=recipe.report_to,
        use_cpu=not has_cuda(),
        dataloader_num_workers=0,
    )


def run_grpo(recipe: GRPORecipe, validator: Any = None, callbacks: list | None = None) -> dict:
    """Train with GRPO; returns (and writes to ``output_dir/train_result.json``) steps, rewards, switch."""
    from trl import GRPOConfig, GRPOTrainer

    from lazymem.train.curriculum import FormatCurriculum

    if not recipe.data:
        raise ConfigError("GRPORecipe.data is empty: point it at RL prompts (`lazymem train rl-data`)")
    out = Path(recipe.output_dir)
    if recipe.resume and (done := finished_result(out, recipe)) is not None:
        return done
    train = load_rl_dataset(recipe.data)
    validation = load_rl_dataset(recipe.validation_data or recipe.data, recipe.max_validation_prompts)
    tokenizer = load_tokenizer(recipe.base)
    model = load_policy(recipe.base, recipe.adapter, dtype=recipe.dtype, trainable=True)
    reward = build_reward(recipe)
    if recipe.judge is None:
        tau = float("inf")  # phase 2 needs a judge: without one the run stays in phase 1, by design
    else:
        tau = recipe.tau
    args = GRPOConfig(**grpo_config_kwargs(recipe))
    # TRL's own evaluation stays off (eval_strategy "no"): the curriculum validates, every args.eval_steps
    curriculum = FormatCurriculum(
        reward,
        list(validation),
        eval_steps=args.eval_steps,
        tau=tau,
        phase2=recipe.lam_phase2,
        max_new_tokens=recipe.max_completion_length,
        validator=validator,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=train,
        processing_class=tokenizer,
        peft_config=recipe.lora.peft_config() if recipe.lora else None,
        callbacks=[curriculum, *(callbacks or [])],
    )
    return train_and_record(
        trainer,
        tokenizer,
        recipe,
        "grpo",
        extra=lambda: {
            "curriculum": curriculum.state(),
            "judge_failures": dict(getattr(reward.judge, "failures", {}) or {}),
        },
        before_train=lambda ckpt: ckpt and curriculum.restore(ckpt),
    )


DEMO_SPEC = "synthetic:messages=200,seed=0,histories=2,questions=12"


def tiny_demo_run(out_dir: str | Path, steps: int = 2, spec: str = DEMO_SPEC, prompts_per_step: int = 1) -> dict:
    """The whole GRPO machinery in about a minute on CPU: real RL prompts from ``spec`` (train split,
    balanced), a tiny RANDOM Qwen3-architecture model with a fresh LoRA, ``steps`` GRPO steps
    (``prompts_per_step`` prompts x 2 rollouts, phase 1: no judge), greedy format validation of 2
    prompts every step. On 2 CPU cores a step of one prompt takes ~25 s: TRL 1.16's chunked
    log-prob kernel dominates (Qwen3's 151k vocabulary over ~1,200-token window prompts).

    A random model writes no valid decision array, so its rewards are 0: this checks the recipe
    end to end (data -> rewards -> curriculum -> checkpoints -> logs), it trains nothing useful.
    Needs the Qwen3 tokenizer (``make env`` fetches it).
    """
    from lazymem.llm.models import tiny_test_model
    from lazymem.train.rl_data import RLDataConfig, build_rl_prompts

    out = Path(out_dir)
    model = out / "tiny_model"
    if not (model / "config.json").is_file():
        tiny_test_model(model)
    data_dir = out / "rl_data"
    if not (data_dir / "rl_prompts.jsonl").is_file():
        build_rl_prompts(
            RLDataConfig.from_dict(
                {
                    "datasets": [spec],
                    "split": "train",
                    "size": 16,
                    "seed": 0,
                    "output_dir": str(data_dir),
                    "progress": False,
                }
            )
        )
    recipe = GRPORecipe(
        base=str(model),
        lora=LoraSettings(r=4, alpha=8),
        data=str(data_dir / "rl_prompts.jsonl"),
        max_validation_prompts=2,
        output_dir=str(out / f"grpo-{steps}steps"),
        learning_rate=1e-4,
        max_steps=steps,
        per_device_train_batch_size=2 * prompts_per_step,
        gradient_accumulation_steps=1,
        num_generations=2,
        max_completion_length=16,
        eval_steps=1,
        save_steps=steps,
        judge=None,
    )
    return run_grpo(recipe)
