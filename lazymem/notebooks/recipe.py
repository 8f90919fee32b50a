"""LazyMem-135M's recipe as one list of steps (notebook 07 and `make lazymem-135m` run it).

Each step is a config file and the function that runs it; every step resumes where it stopped
(data builders rewrite the same files, trainers continue from their newest checkpoint and
return a finished run at once, the tables read finished cells back), so rerunning the whole
list after an interruption redoes no finished work.

>>> [s.name for s in RECIPE][:3]
['sft-data', 'sft', 'sft2-data']
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lazymem.errors import ConfigError


@dataclass(frozen=True)
class Step:
    name: str
    config: str  # relative to the project root
    kind: str  # which runner reads the config
    sets: tuple[str, ...] = ()  # KEY=VALUE overrides on the config (as --set takes them): one file, several steps

    @property
    def command(self) -> str:
        """The step as one ``lazymem train`` command.

        >>> Step("keep-bias-sft2", "configs/k.yaml", "keep-bias", ("adapter=a",)).command
        'lazymem train keep-bias --config configs/k.yaml --set adapter=a'
        """
        head = ["lazymem", "eval-table"] if self.kind == "eval-table" else ["lazymem", "train", self.kind]
        return " ".join([*head, "--config", self.config, *(f"--set {s}" for s in self.sets)])


def _stage_bias(stage: str, adapter: str, *extra: str) -> tuple[str, ...]:
    """The keep-bias step's overrides for one training stage: its adapter and its own output file."""
    return (f"adapter={adapter}", f"output=docs/results/lazymem-135m/keep_bias_{stage}.json", *extra)


RECIPE = (
    Step("sft-data", "configs/train/lazymem-135m/sft_data.yaml", "sft-data"),
    Step("sft", "configs/train/lazymem-135m/sft.yaml", "sft"),
    Step("sft2-data", "configs/train/lazymem-135m/sft2_data.yaml", "sft-data"),
    Step("sft2", "configs/train/lazymem-135m/sft2.yaml", "sft"),
    Step("sft3-data", "configs/train/lazymem-135m/sft3_data.yaml", "sft-data"),
    Step("sft3", "configs/train/lazymem-135m/sft3.yaml", "sft"),
    Step("heldout-synthetic", "configs/train/lazymem-135m/heldout_synthetic.yaml", "sft-data"),
    Step("heldout-default", "configs/train/lazymem-135m/heldout_default.yaml", "sft-data"),
    Step("heldout-locomo", "configs/train/lazymem-135m/heldout_locomo.yaml", "sft-data"),
    Step("rl-data", "configs/train/lazymem-135m/rl_data.yaml", "rl-data"),
    Step("grpo", "configs/train/lazymem-135m/grpo.yaml", "grpo"),
    Step("dev-data", "configs/train/lazymem-135m/dev_synthetic.yaml", "sft-data"),
    Step("keep-bias", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias"),
    Step("keep-bias-sft2", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias",
         _stage_bias("sft2", "models/lazymem-135m/train/sft2/final")),
    Step("keep-bias-sft3", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias",
         _stage_bias("sft3", "models/lazymem-135m/train/sft3/final")),
    # the GPU path (scripts/device_train.sh trains sft_gpu and grpo_sft_gpu on a leased GPU; the data and
    # the choices on development windows run here)
    Step("sft-gpu-data", "configs/train/lazymem-135m/sft_gpu_data.yaml", "sft-data"),
    Step("rl-data-gpu", "configs/train/lazymem-135m/rl_data_gpu.yaml", "rl-data"),
    Step("keep-bias-sft-gpu", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias",
         _stage_bias("sft_gpu", "models/lazymem-135m/train/sft_gpu/final")),
    Step("keep-bias-grpo-sft-gpu", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias",
         _stage_bias("grpo_sft_gpu", "models/lazymem-135m/train/grpo_sft_gpu/step3")),
    Step("keep-bias-grpo-sft-gpu-recall", "configs/train/lazymem-135m/keep_bias.yaml", "keep-bias",
         _stage_bias("grpo_sft_gpu_recall", "models/lazymem-135m/train/grpo_sft_gpu/step3", "target_recall=0.8")),
    Step("eval-windows", "configs/train/lazymem-135m/eval_windows.yaml", "eval-windows"),
    Step("eval-table", "configs/tables/lazymem135m.yaml", "eval-table"),
    Step("release-v1", "configs/train/lazymem-135m/release_gpu.yaml", "release"),  # CPU-only: release.yaml
    # v2 (issue 25), the default: three styles at every window shape, SFT on CPU continuing v1 (~15 h on 2 cores,
    # resumable; a finished run returns at once), its step and KEEP bias chosen on development windows
    Step("v2-sft-data", "configs/train/lazymem-135m/v2_sft_data.yaml", "sft-data"),
    Step("v2-sft", "configs/train/lazymem-135m/v2_sft.yaml", "sft"),
    Step("v2-dev-data", "configs/train/lazymem-135m/v2_dev.yaml", "sft-data"),
    Step("v2-keep-bias", "configs/train/lazymem-135m/v2_keep_bias.yaml", "keep-bias",
         ("adapter=models/lazymem-135m/train/v2_sft/final",
          "output=docs/results/lazymem-135m/v2_dev/keep_bias_step296.json")),
    Step("v2-dev-windows", "configs/train/lazymem-135m/v2_dev_windows.yaml", "eval-windows",
         ("only=['v1_shipping_cpp', 'v2_step296_shipping_cpp']",)),
    Step("release", "configs/train/lazymem-135m/release_v2.yaml", "release"),
)


def run_step(kind: str, data: Mapping, where: str) -> Any:
    """Run one stage from its recipe mapping (``where`` names the file in errors); what it returns:
    a data card, a train result, a {set: {row: ...}} table or the shipped model card."""
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
    """Run the steps in order (all, up to and including ``until``, or just ``only``); returns seconds per step."""
    names = [s.name for s in RECIPE]
    for n in (*only, *((until,) if until else ())):
        if n not in names:
            raise ConfigError(f"recipe step {n!r}: one of {', '.join(names)}")
    seconds = {}
    for step in RECIPE:
        if not only or step.name in only:
            print(f"== {step.name}: {step.command} ==", flush=True)
            t0 = time.perf_counter()
            from lazymem.eval.config import apply_overrides
            from lazymem.yamlio import read_mapping

            run_step(step.kind, apply_overrides(read_mapping(step.config), step.sets), step.config)
            seconds[step.name] = round(time.perf_counter() - t0, 1)
        if step.name == until:
            break
    return seconds
