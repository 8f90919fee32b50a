"""Run a GRPO recipe under a time budget and copy what it trained to a flat output folder.

For a leased GPU machine that is handed back when the call ends (scripts/device_grpo.sh is the
whole command such a bare machine runs): the budget ends training with a checkpoint, the final
adapter and train_result.json are written as `lazymem train grpo` writes them, and the files a
later CPU session needs (adapter weights and config, train_result.json) are copied to --out.

    python scripts/device_grpo.py --config configs/lazymem135m_grpo_gpu.yaml --budget-s 330 --out DIR
    python scripts/device_grpo.py --config ... --set max_steps=1 --set num_generations=2   # a smoke run
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import yaml

FILES = ("adapter_model.safetensors", "adapter_config.json")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="a GRPO recipe YAML (lazymem.train.grpo.GRPORecipe)")
    ap.add_argument("--budget-s", type=float, required=True, help="stop training (with a checkpoint) after this")
    ap.add_argument("--out", required=True, help="flat folder for the adapter and train_result.json")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a recipe key (YAML value)")
    args = ap.parse_args(argv)

    from lazymem.train.grpo import GRPORecipe, run_grpo
    from lazymem.train.logs import time_budget_callback

    t0 = time.monotonic()
    budget = time_budget_callback(args.budget_s)
    recipe = GRPORecipe.from_yaml(args.config)
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in {f.name for f in dataclasses.fields(GRPORecipe)}:
            ap.error(f"--set {item!r}: expected KEY=VALUE with KEY a GRPORecipe field")
        overrides[key] = yaml.safe_load(value)
    recipe = dataclasses.replace(recipe, **overrides)
    result = run_grpo(recipe, callbacks=[budget])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    final = Path(result["final"])
    for name in FILES:
        shutil.copy2(final / name, out / name)
    shutil.copy2(Path(recipe.output_dir) / "train_result.json", out / "train_result.json")
    summary = {"global_step": result.get("global_step"), "stopped_by_budget_at_step": budget.stopped_at_step,
               "wall_s": round(time.monotonic() - t0, 1), "budget_s": args.budget_s}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
