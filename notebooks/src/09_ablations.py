# %% [markdown]
# # 09 · Ablations: history-window radius and training stage (paper Tables 2 and 3)
#
# **Purpose.** RQ3 as runs: the radius sweep w = 0..3 reports the score and All@k (every gold message
# of a question inside its windows) per radius (paper Table 2), and the training-stage sweep (base /
# SFT / RL adapters of the memory-processing model) reports Gate Fmt., the strict gate, gold-keep
# recall and the score (paper Table 3). Every point is an ordinary resumable eval run
# (`<out_root>/<sweep>/<point>`) through the package's one sweep engine (`lazymem.sweep`, as `lazymem
# eval-table`), so an interrupted sweep resumes where it stopped, a rerun costs nothing, and a point whose
# inputs changed is recomputed with its old results set aside.
#
# As a papermill grid, one point per run: `lazymem notebooks run 09_ablations --grid
# configs/grids/09_radius.yaml` (or `09_stages.yaml`); each run records its table in
# `metrics.json`. CPU defaults use the extractive processor (no MPM calls) on 2 questions; set
# `method = "lazymem"` and the stages' adapters for the trained model, and `config` to start every
# point from a recipe (e.g. `configs/eval/locomo_cpu.yaml`: the shipped LazyMem-135M on llama.cpp),
# as the grid files do. `lazymem eval-table --config configs/tables/ablation_radius_locomo.yaml` runs the
# same radius sweep in one process.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import pandas as pd

from lazymem.notebooks.ablations import ablation_config, ablation_sweep

# %% tags=["parameters"]
dataset = "synthetic:messages=200,seed=0,histories=1,questions=6"  # dataset SPEC (paper: locomo10.json#paper)
limit = 2  # questions per point (0 = all)
method = "extractive"  # memory processor of the radius sweep: "extractive" (no MPM) or "lazymem"
model = "smollm2-offline"  # answer (and MPM) model
base_url = ""  # OpenAI-compatible server; "" = in-process transformers
config = ""  # an eval recipe (YAML) every point starts from instead (models, pool, bias); see above
radii = [0, 1, 2, 3]  # the radius sweep (paper Table 2); [] skips it
n = 20  # pool size (paper: 50); with `config`, the recipe's own
stages = {}  # the stage sweep: name -> adapter (None = base), e.g. {"base": None, "rl": "lazymem-135m-v1"}
stage_w = 2  # radius of the stage sweep
out_root = "runs/nb09_ablations"  # <out_root>/radius/w=<w>, <out_root>/stage/<name>
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
common = {"limit": limit, "model": model, "base_url": base_url, "n": n, "recipe": config}  # every point's settings

# %% [markdown]
# ## 1. History-window radius (paper Table 2)

# %%
radius = ablation_sweep({w: (f"{out_root}/radius/w={w}", ablation_config(dataset, method, w, **common))
                         for w in radii})
pd.DataFrame(radius).T.rename_axis("w")

# %% [markdown]
# ## 2. Training stage (paper Table 3)

# %%
stage_rows = ablation_sweep({name: (f"{out_root}/stage/{name}",
                                     ablation_config(dataset, "lazymem", stage_w, adapter=adapter, **common))
                             for name, adapter in stages.items()})
pd.DataFrame(stage_rows).T.rename_axis("stage") if stage_rows else "no stages given (set `stages`)"

# %% [markdown]
# ## 3. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = {f"w={w}": {"questions": r["questions"], "errors": r["errors"],
                        "All@k": None if r["All@k"] is None else round(r["All@k"], 3)}
           for w, r in radius.items()}
metrics.update({f"stage {k}": {"questions": r["questions"], "errors": r["errors"]} for k, r in stage_rows.items()})
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
