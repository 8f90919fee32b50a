# %% [markdown]
# # 06 · GRPO: reward, format validity, the lambda switch, KL, completion length
#
# **Purpose.** Read a GRPO run's trainer logs (`lazymem train grpo --config ...`, its
# `output_dir/train_result.json`) and plot what the paper's recipe steers: the composite reward
# (format gate x ((1 - lambda) R_act + lambda R_qual)), the strict format gate and the paper's Gate
# Fmt. on the rollouts, the curriculum's validation format validity and its lambda switch (0 -> 0.5
# past tau = 0.99), the k3 KL to the SFT reference, and the completion length.
#
# With `run_dir = ""` (the default) it first runs `lazymem.train.grpo.tiny_demo_run`: two GRPO steps
# of a tiny **random** Qwen3-architecture model on real RL prompts, phase 1 (no judge). A random model
# writes no valid decision array, so its rewards are 0 — it checks the machinery, not the method. Point
# `run_dir` at a real run to see training.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import json

import pandas as pd

from lazymem import viz
from lazymem.train.grpo import tiny_demo_run
from lazymem.train.logs import curriculum_events, log_rows

# %% tags=["parameters"]
run_dir = ""  # a finished `lazymem train grpo` output_dir (holds train_result.json); "" = the tiny demo run below
demo_dir = "runs/nb06_grpo_demo"  # where the demo run writes (resumes: a rerun reuses its checkpoint)
demo_steps = 2  # GRPO steps of the demo run (~25 s each on 2 CPU cores)
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
result = json.load(open(f"{run_dir}/train_result.json")) if run_dir else tiny_demo_run(demo_dir, steps=demo_steps)
rows = log_rows(result["log_history"])
events = curriculum_events(rows)
columns = ("reward", "lazymem/strict_gate", "lazymem/gate_fmt", "kl", "completions/mean_length",
           "curriculum/strict_gate", "curriculum/lam")
pd.DataFrame(rows).set_index("step")[[c for c in columns if any(c in r for r in rows)]]

# %% [markdown]
# ## 1. Curves over steps (the dashed line marks the lambda switch, when there is one)

# %%
metrics_plotted = [m for m in ("reward", "lazymem/strict_gate", "curriculum/strict_gate", "curriculum/lam", "kl",
                               "completions/mean_length") if any(m in r for r in rows)]
title = f"GRPO ({run_dir or 'demo: tiny random model'})"
fig = viz.training_curves(rows, metrics_plotted, title=title, events=events)
fig.show()
saved = viz.save_figures({"06_grpo_curves": fig}, figures_dir, png=png)

# %% [markdown]
# ## 2. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
cur = result["curriculum"]
metrics = {
    "steps": result["global_step"],
    "validations": len(cur["history"]),
    "lambda": cur["lam"],
    "switched_at": cur["switched_at"],
    "logged_reward_steps": sum("reward" in r for r in rows),
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
