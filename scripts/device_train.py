"""Train LazyMem-135M on a leased GPU under time budgets: SFT, then GRPO, each evaluated on held-out windows.

For a machine that is handed back when the call ends (scripts/device_train.sh is the whole command
a bare one runs). Each stage is the project's own recipe (``lazymem.train.sft.run_sft``,
``lazymem.train.grpo.run_grpo``) with ``lazymem.train.logs.time_budget_callback``: the budget ends
training with a checkpoint and the final adapter is written as usual. After each stage the adapter is
evaluated with ``lazymem.train.heldout.evaluate_windows`` (free generation, greedy) on every
``--eval-set``, and the stage's files are packed into ``OUT/<stage>.tar.gz`` at once (adapter
weights and config, train_result.json, eval/<set>/{summary.json,windows.jsonl}), so a call cut short
still returns what finished. A stage that cannot start with ``--min-stage-s`` left before
``--deadline-s`` is skipped and said so. ``OUT/summary.json`` holds the timings and every summary.

    python scripts/device_train.py --sft configs/recipes/lazymem-135m/sft_gpu.yaml --sft-budget-s 220 \\
        --grpo GRPO.yaml --grpo-budget-s 150 \\
        --eval-set synthetic_heldout=PAIRS.jsonl --deadline-s 520 --out DIR
    python scripts/device_train.py --sft ... --set sft.max_steps=1 --set grpo.max_steps=1 ...   # a smoke run

Either stage may be left out: LazyMem-135M v2's recipe is SFT only (``--sft`` alone); v1 ran both
(its ``sft_gpu.yaml`` and ``grpo_gpu.yaml`` are in git history at commit 1db2f6a, under
``configs/train/lazymem-135m/``). With both stages, GRPO continues the adapter this SFT run wrote
(its ``adapter`` key is replaced).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tarfile
import time
from pathlib import Path

ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")


def _stage_sets(items: list[str], stage: str, ap) -> list[str]:
    """This stage's ``--set`` items without their ``sft.`` / ``grpo.`` prefix."""
    for item in items:
        if item.partition(".")[0] not in ("sft", "grpo") or "=" not in item:
            ap.error(f"--set {item!r}: expected sft.KEY=VALUE or grpo.KEY=VALUE")
    return [item.partition(".")[2] for item in items if item.startswith(stage + ".")]


def pack(out: Path, stage: str, output_dir: Path, final: Path, evals: dict[str, Path]) -> Path:
    """Write OUT/<stage>.tar.gz (atomically: a reader never sees half a file)."""
    tmp = out / f".{stage}.tar.gz.tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        for name in ADAPTER_FILES:
            tar.add(final / name, arcname=f"{stage}/{name}")
        if (output_dir / "train_result.json").is_file():
            tar.add(output_dir / "train_result.json", arcname=f"{stage}/train_result.json")
        for set_name, d in evals.items():
            for f in ("summary.json", "windows.jsonl"):
                if (d / f).is_file():
                    tar.add(d / f, arcname=f"{stage}/eval/{set_name}/{f}")
    dest = out / f"{stage}.tar.gz"
    tmp.replace(dest)
    return dest


def evaluate(
    base: str, final: Path, sets: dict[str, str], work: Path, limit: int | None, batch: int, device: str
) -> dict:
    from lazymem.llm import LLMConfig
    from lazymem.train.heldout import WindowEvalConfig, evaluate_windows

    results = {}
    for name, data in sets.items():
        mpm = LLMConfig(backend="transformers", model=base, adapter=str(final), device=device, batch_size=batch)
        cfg = WindowEvalConfig(data=data, mpm=mpm, limit=limit, seed=0, batch_windows=batch)
        t = time.monotonic()
        summary = evaluate_windows(cfg, work / name, progress=False)
        summary["eval_wall_s"] = round(time.monotonic() - t, 1)
        results[name] = summary
        keys = ("windows", "gate_fmt", "gold_keep_recall", "nongold_drop_rate", "reward", "eval_wall_s")
        print(f"eval {final} on {name}: {json.dumps({k: summary.get(k) for k in keys})}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft", help="an SFT recipe YAML (lazymem.train.sft.SFTRecipe)")
    ap.add_argument("--sft-budget-s", type=float, default=220.0)
    ap.add_argument("--grpo", help="a GRPO recipe YAML (lazymem.train.grpo.GRPORecipe)")
    ap.add_argument("--grpo-budget-s", type=float, default=150.0)
    ap.add_argument(
        "--eval-set",
        action="append",
        default=[],
        metavar="NAME=PAIRS.jsonl",
        help="held-out query-window pairs (`lazymem train sft-data`) to evaluate each stage on",
    )
    ap.add_argument("--eval-limit", type=int, default=None, help="a balanced seeded subset per set (None = all)")
    ap.add_argument("--eval-batch", type=int, default=64, help="windows per generate call")
    ap.add_argument("--deadline-s", type=float, default=520.0, help="no stage starts after this (from start)")
    ap.add_argument("--min-stage-s", type=float, default=60.0, help="skip a stage with less than this left")
    ap.add_argument("--set", action="append", default=[], metavar="STAGE.KEY=VALUE", help="override a recipe key")
    ap.add_argument("--out", required=True, help="folder for <stage>.tar.gz and summary.json")
    args = ap.parse_args(argv)
    if not (args.sft or args.grpo):
        ap.error("give --sft, --grpo or both")
    sets = {}
    for item in args.eval_set:
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            ap.error(f"--eval-set {item!r}: expected NAME=PATH of an existing pairs JSONL")
        sets[name] = path

    import torch

    from lazymem.eval.config import apply_overrides
    from lazymem.files import write_json
    from lazymem.llm import LLMConfig
    from lazymem.train.grpo import GRPORecipe, run_grpo
    from lazymem.train.logs import time_budget_callback
    from lazymem.train.modeling import LoraSettings
    from lazymem.train.recipe import build_recipe
    from lazymem.train.sft import SFTRecipe, run_sft
    from lazymem.yamlio import read_mapping

    t0 = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    summary = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "stages": {},
        "skipped": [],
    }

    def left() -> float:
        return args.deadline_s - (time.monotonic() - t0)

    def save_summary():
        summary["wall_s"] = round(time.monotonic() - t0, 1)
        write_json(out / "summary.json", summary, default=str)

    sft_final = None
    plan = [
        ("sft", args.sft, SFTRecipe, {"lora": LoraSettings}, run_sft, args.sft_budget_s),
        ("grpo", args.grpo, GRPORecipe, {"lora": LoraSettings, "judge": LLMConfig}, run_grpo, args.grpo_budget_s),
    ]
    for stage, config, cls, nested, run, budget_s in plan:
        if not config:
            continue
        if left() < args.min_stage_s:
            summary["skipped"].append(f"{stage}: {left():.0f} s left before the deadline")
            print(f"skipping {stage}: {left():.0f} s left", flush=True)
            continue
        sets_here = _stage_sets(args.set, stage, ap)
        data = apply_overrides(read_mapping(config), sets_here)
        changed = [item.partition("=")[0].partition(".")[0] for item in sets_here]
        if stage == "grpo" and sft_final is not None:
            data["adapter"] = str(sft_final)
            changed.append("adapter")
        recipe = build_recipe(cls, data, config, nested)
        extra = {k: data[k] for k in changed}
        # what follows (evaluation, the next stage) keeps --min-stage-s
        budget = time_budget_callback(max(1e-3, min(budget_s, left() - args.min_stage_s)))
        ts = time.monotonic()
        result = run(recipe, callbacks=[budget])
        final = Path(result["final"])
        rec = {
            "config": config,
            "overrides": extra,
            "global_step": result.get("global_step"),
            "stopped_by_budget_at_step": budget.stopped_at_step,
            "budget_s": budget.seconds,
            "train_s": round(time.monotonic() - ts, 1),
            "train_loss": result.get("train_loss"),
        }
        summary["stages"][stage] = rec
        pack(out, stage, Path(recipe.output_dir), final, {})
        save_summary()
        print(f"{stage}: {json.dumps(rec)}", flush=True)
        if sets and left() > 20:
            te = time.monotonic()
            evals = evaluate(
                recipe.base, final, sets, Path(recipe.output_dir) / "eval", args.eval_limit, args.eval_batch, device
            )
            rec["eval"] = evals
            rec["eval_s"] = round(time.monotonic() - te, 1)
            pack(out, stage, Path(recipe.output_dir), final, {n: Path(recipe.output_dir) / "eval" / n for n in sets})
            save_summary()
        if stage == "sft":
            sft_final = final
    save_summary()
    print(json.dumps({"wall_s": summary["wall_s"], "skipped": summary["skipped"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
