"""LazyMem-135M's recipes as lists of steps (notebook 07, `lazymem train recipe` and `make lazymem-135m` run them).

One YAML file per model and stage, ``configs/recipes/<model>/<stage>.yaml``. ``RECIPE`` trains and ships the
default, LazyMem-135M v2 and its writer (``configs/recipes/lazymem-135m``): data, SFT continuing v1, development
windows, teacher-forced KEEP probes, the KEEP prior and bias, the writer's data and SFT, release. ``ABLATION`` is
the LoCoMo-trained ablation beside it (``configs/recipes/lazymem-135m-ablation-locomo``; labelled, never shipped).

Each step is a config file and the function that runs it; every step resumes where it stopped (data builders
rewrite the same files, trainers continue from their newest checkpoint and return a finished run at once, probes
and choices read a finished record back), so rerunning a whole list after an interruption redoes no finished work.

>>> [s.name for s in RECIPE][:3]
['data', 'sft', 'dev-data']
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lazymem.errors import ConfigError

SHIPPED = "configs/recipes/lazymem-135m"
ABLATION_DIR = "configs/recipes/lazymem-135m-ablation-locomo"


@dataclass(frozen=True)
class Step:
    name: str
    config: str  # relative to the project root
    kind: str  # which runner reads the config
    sets: tuple[str, ...] = ()  # KEY=VALUE overrides on the config (as --set takes them): one file, several steps

    @property
    def command(self) -> str:
        """The step as one command (a step whose runner takes no ``--config`` runs through the recipe).

        >>> Step("keep-bias-dev", "configs/k.yaml", "keep-bias", ("adapter=a",)).command
        'lazymem train keep-bias --config configs/k.yaml --set adapter=a'
        >>> Step("keep-prior", "configs/p.yaml", "keep-prior").command
        'lazymem train recipe --only keep-prior   # configs/p.yaml'
        """
        if self.kind == "keep-prior":
            return f"lazymem train recipe --only {self.name}   # {self.config}"
        head = ["lazymem", "eval-table"] if self.kind == "eval-table" else ["lazymem", "train", self.kind]
        return " ".join([*head, "--config", self.config, *(f"--set {s}" for s in self.sets)])


def _probe(pairs: str, limit: int, output: str) -> tuple[str, ...]:
    """A keep-bias step's overrides: another set of development pairs and its own record."""
    return (f"pairs=runs/train_data/{pairs}/sft.jsonl", f"limit={limit}", f"output={output}")


_DEV = "docs/results/lazymem-135m/independent_dev"
_ABL = "docs/results/lazymem-135m/ablation_locomo"

RECIPE = (
    Step("data", f"{SHIPPED}/data.yaml", "sft-data"),
    Step("sft", f"{SHIPPED}/sft.yaml", "sft"),  # ~15 h on 2 CPU cores (sft_gpu.yaml: minutes on a GPU)
    Step("dev-data", f"{SHIPPED}/dev_data.yaml", "sft-data"),
    Step("dev-data-asked", f"{SHIPPED}/dev_data_asked.yaml", "sft-data"),
    Step("dev-data-locomo", f"{SHIPPED}/dev_data_locomo.yaml", "sft-data"),  # LoCoMo conversations 1-8
    Step("keep-bias", f"{SHIPPED}/keep_bias.yaml", "keep-bias"),
    Step(
        "keep-bias-dev",
        f"{SHIPPED}/keep_bias.yaml",
        "keep-bias",
        _probe("lazymem135m_v2_dev", 160, f"{_DEV}/keep_bias_v2_drop_v2dev160.json"),
    ),
    Step(
        "keep-bias-locomo",
        f"{SHIPPED}/keep_bias.yaml",
        "keep-bias",  # reported beside the choice only
        _probe("lazymem135m_locomo_dev", 80, "docs/results/lazymem-135m/locomo_dev/keep_bias_v2_drop.json"),
    ),
    Step("keep-prior", f"{SHIPPED}/keep_prior.yaml", "keep-prior"),
    Step("writer-data", f"{SHIPPED}/writer_data.yaml", "sft-data"),
    Step("writer-sft", f"{SHIPPED}/writer_sft.yaml", "sft"),
    Step("release", f"{SHIPPED}/release.yaml", "release"),
)

# The LoCoMo-trained ablation: it trains on RECIPE's `data` and reads its development windows (`dev-data*`)
ABLATION = (
    Step("ablation-data", f"{ABLATION_DIR}/data.yaml", "sft-data"),
    Step("ablation-sft", f"{ABLATION_DIR}/sft.yaml", "sft"),  # ~8 h on 2 CPU cores
    Step("ablation-keep-bias", f"{ABLATION_DIR}/keep_bias.yaml", "keep-bias"),
    Step(
        "ablation-keep-bias-dev",
        f"{ABLATION_DIR}/keep_bias.yaml",
        "keep-bias",
        _probe("lazymem135m_v2_dev", 160, f"{_ABL}/keep_bias_drop_v2dev160.json"),
    ),
    Step(
        "ablation-keep-bias-locomo",
        f"{ABLATION_DIR}/keep_bias.yaml",
        "keep-bias",
        _probe("lazymem135m_locomo_dev", 80, f"{_ABL}/keep_bias_drop_locomo_dev.json"),
    ),
    Step("ablation-keep-prior", f"{ABLATION_DIR}/keep_prior.yaml", "keep-prior"),
)

GPU_VARIANTS = {
    f"{SHIPPED}/sft_gpu.yaml": f"{SHIPPED}/sft.yaml",  # the same SFT as one batch of 8 in bf16
    f"{ABLATION_DIR}/sft_gpu.yaml": f"{ABLATION_DIR}/sft.yaml",
}


@dataclass(frozen=True)
class KeepPriorConfig:
    """``lazymem train keep-prior``'s arguments as a recipe file (``configs/recipes/*/keep_prior.yaml``)."""

    select: tuple[str, ...]  # keep-bias records of development windows to choose on
    out: str  # where the choice, the grid and the reports go
    report: tuple[str, ...] = ()  # records the choice is reported on, never chosen on
    priors: tuple[float, ...] | None = None  # None: lazymem.train.prior.PRIORS
    dense_priors: tuple[float, ...] | None = None  # None: DENSE_PRIORS; (0.0,): the lexical prior only
    biases: tuple[float, ...] | None = None  # None: BIASES
    dense_model: str | None = None  # None: DEFAULT_DENSE_MODEL
    budget: str | None = None  # None, "extractive" or "extractive-per-shape"


def choose_prior(config: KeepPriorConfig) -> dict:
    """The keep-prior record at ``config.out``: read back when its settings are these (a setting added later
    and missing there counts as unset), else chosen and written."""
    import json
    from pathlib import Path

    from lazymem.files import write_json
    from lazymem.train import prior

    kwargs = {
        "priors": config.priors or prior.PRIORS,
        "biases": config.biases or prior.BIASES,
        "dense_priors": config.dense_priors or prior.DENSE_PRIORS,
        "dense_model": config.dense_model or prior.DEFAULT_DENSE_MODEL,
        "budget": config.budget,
    }
    want = {
        "select": list(config.select),
        "report": list(config.report),
        "priors": [float(a) for a in kwargs["priors"]],
        "dense_priors": [float(d) for d in kwargs["dense_priors"]],
        "dense_model": kwargs["dense_model"] if any(kwargs["dense_priors"]) else None,
        "biases": [float(b) for b in kwargs["biases"]],
        "budget": config.budget,
    }
    try:
        done = json.loads(Path(config.out).read_text(encoding="utf-8"))
        recorded = done["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        done, recorded = None, {}
    if done is not None and all(recorded.get(k) == v for k, v in want.items() if k in recorded or v is not None):
        return done
    rec = prior.choose_keep_prior(config.select, config.report, **kwargs)
    write_json(Path(config.out), rec)
    return rec


def run_step(kind: str, data: Mapping, where: str) -> Any:
    """Run one stage from its recipe mapping (``where`` names the file in errors); what it returns:
    a data card, a train result, a probe or choice record, a {set: {row: ...}} table or the shipped model card."""
    from lazymem.train.modeling import LoraSettings
    from lazymem.train.recipe import build_recipe

    if kind == "sft-data":
        from lazymem.train.sft_data import SFTDataConfig, build_sft_data

        return build_sft_data(SFTDataConfig.from_dict(data))
    if kind == "rl-data":
        from lazymem.train.rl_data import RLDataConfig, build_rl_prompts

        return build_rl_prompts(RLDataConfig.from_dict(data))
    if kind == "sft":
        from lazymem.train.sft import SFTRecipe, run_sft

        return run_sft(build_recipe(SFTRecipe, data, where, {"lora": LoraSettings}))
    if kind == "grpo":
        from lazymem.llm import LLMConfig
        from lazymem.train.grpo import GRPORecipe, run_grpo

        return run_grpo(build_recipe(GRPORecipe, data, where, {"lora": LoraSettings, "judge": LLMConfig}))
    if kind == "keep-bias":
        from lazymem.train.probe import KeepBiasConfig, choose_keep_bias

        return choose_keep_bias(build_recipe(KeepBiasConfig, data, where))
    if kind == "keep-prior":
        return choose_prior(build_recipe(KeepPriorConfig, data, where))
    if kind == "eval-windows":
        from lazymem.train.window_table import WindowTableConfig, run_window_table

        return run_window_table(build_recipe(WindowTableConfig, data, where))
    if kind == "eval-table":
        from lazymem.eval.table import EvalTableConfig, run_eval_table

        return run_eval_table(build_recipe(EvalTableConfig, data, where))
    if kind == "release":
        from lazymem.train.release import ReleaseConfig, ship

        return ship(build_recipe(ReleaseConfig, data, where))
    raise ConfigError(f"unknown recipe step kind {kind!r}")


def run_recipe(until: str | None = None, only: tuple[str, ...] = ()) -> dict[str, float]:
    """Run RECIPE's steps in order (all, or up to and including ``until``), or just the steps named in ``only``
    (of RECIPE or ABLATION); returns seconds per step."""
    names = [s.name for s in (*RECIPE, *ABLATION)]
    for n in (*only, *((until,) if until else ())):
        if n not in names:
            raise ConfigError(f"recipe step {n!r}: one of {', '.join(names)}")
    seconds = {}
    for step in (*RECIPE, *ABLATION) if only else RECIPE:
        if not only or step.name in only:
            print(f"== {step.name}: {step.command} ==", flush=True)
            t0 = time.perf_counter()
            from lazymem.eval.config import apply_overrides
            from lazymem.eval.table import apply_table_sets
            from lazymem.yamlio import read_mapping

            apply = apply_table_sets if step.kind == "eval-table" else apply_overrides  # as its command reads them
            run_step(step.kind, apply(read_mapping(step.config), step.sets), step.config)
            seconds[step.name] = round(time.perf_counter() - t0, 1)
        if step.name == until:
            break
    return seconds
