# %% [markdown]
# # 07 · LazyMem-135M: the project's own recipe, SFT then GRPO, on CPU
#
# **Purpose.** Train, measure and ship the memory-processing model the workbench uses by default:
# a LoRA adapter on SmolLM2-135M-Instruct trained on the synthetic generator (seed 1, varied
# phrasings, two windowings, gold labels with a message-by-message think trace), then GRPO phase 1
# (format gate x eta-weighted action reward), evaluated on held-out windows (synthetic seed 2, the
# default data set, LoCoMo conversations 1-8) and through the whole pipeline (base free /
# constrained, SFT, GRPO, extractive, RAG Top50), and shipped with its model card
# (`lazymem/assets/lazymem-135m`).
#
# With `run = False` (the default) it only reads what the recipe wrote: the committed training
# checkpoints, the tables, the model card. `run = True` runs the recipe (`lazymem.notebooks.recipe`:
# hours on a 2-core CPU; every step resumes where it stopped): `make lazymem-135m` executes this
# notebook that way with papermill and keeps the executed copy under `papermill_runs/`.
#
# The shipped adapter's two training stages ran on one leased GPU (`scripts/device_train.sh`: SFT
# from the base on 3,274 examples, then GRPO from it; README "Trained on one GPU"); the recipe's
# steps around them (`sft-gpu-data`, `rl-data-gpu`, the `keep-bias-*gpu*` choices on development
# windows, `release`) run here.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import json
from pathlib import Path

import pandas as pd
from IPython.display import display

from lazymem import viz
from lazymem.notebooks.recipe import RECIPE, run_recipe
from lazymem.train.logs import log_rows
from lazymem.train.release import run_summary
from lazymem.yamlio import read_mapping

# %% tags=["parameters"]
run = False  # True: run the recipe (hours on CPU; each step resumes, finished steps return at once)
until = ""  # with run: stop after this step (sft-data, sft, ..., release); "" = every step
sft_dir = "models/lazymem-135m/train/sft"  # the SFT run (committed checkpoints resume on any machine)
grpo_dir = "models/lazymem-135m/train/grpo"  # the GRPO run
card_path = "lazymem/assets/lazymem-135m/card.json"  # the shipped adapter's card (tables, times)
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
seconds = run_recipe(until or None) if run else {}
pd.DataFrame([{"step": s.name, "config": s.config, "seconds this run": seconds.get(s.name)} for s in RECIPE])

# %% [markdown]
# ## 1. Training so far (from the runs' files)

# %%
runs = {"sft": run_summary(sft_dir), "grpo": run_summary(grpo_dir)}
pd.DataFrame([{"stage": k, **({c: v.get(c) for c in ("finished", "global_step", "max_steps", "wall_s_total",
                                                      "segments", "final_loss")} if v else {"finished": None})}
              for k, v in runs.items()])

# %%
figs = {}
for stage, r in runs.items():
    rows = log_rows(r["log_history"]) if r else []
    metrics_plotted = [m for m in ("loss", "mean_token_accuracy", "reward", "lazymem/strict_gate", "lazymem/gate_fmt")
                       if any(m in x for x in rows)]
    if metrics_plotted:
        figs[f"07_{stage}_curves"] = viz.training_curves(rows, metrics_plotted, title=f"LazyMem-135M {stage.upper()}")
        figs[f"07_{stage}_curves"].show()
saved = viz.save_figures(figs, figures_dir, png=png) if figs else {}

# %% [markdown]
# ## 2. The tables (held-out windows; whole pipeline)

# %%
card = json.loads(Path(card_path).read_text()) if Path(card_path).is_file() else {}
tables = {"windows": card.get("window_table") or (json.loads(Path(p).read_text()) if Path(
              p := "docs/results/lazymem-135m/windows/table.json").is_file() else None),
          "pipeline": card.get("pipeline_table") or (json.loads(Path(p).read_text()) if Path(
              p := "docs/results/lazymem-135m/table/table.json").is_file() else None)}
for name, t in tables.items():
    if not t:
        print(f"{name}: not measured yet")
        continue
    for set_name, rows in t.items():
        print(f"{name} / {set_name}")
        display(pd.DataFrame(rows).T.select_dtypes("number").round(3))

# %% [markdown]
# ## 3. Record the recipe's settings

# %%
# NBVAL_CHECK_OUTPUT
sft = read_mapping("configs/train/lazymem-135m/sft.yaml")
grpo = read_mapping("configs/train/lazymem-135m/grpo.yaml")
data = read_mapping("configs/train/lazymem-135m/sft_data.yaml")
metrics = {
    "steps": len(RECIPE),
    "lora_r": sft["lora"]["r"],
    "lora_layers": len(sft["lora"]["layers"]),
    "sft_learning_rate": f"{sft['learning_rate']:g}",
    "sft_epochs": sft["num_train_epochs"],
    "grpo_max_steps": grpo["max_steps"],
    "grpo_eta": grpo["eta"],
    "teacher": data["teacher"],
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
