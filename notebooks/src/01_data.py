# %% [markdown]
# # 01 · Data: the benchmarks at a glance
#
# **Purpose.** Load a dataset with `lazymem.data.datasets.load_dataset`, summarise it (questions by type,
# history lengths, gold evidence) and reproduce the paper's stratified 72/8/20 split (Appendix
# "Dataset and Split Construction", seed 42).
#
# Runs offline on the embedded synthetic generator by default. With the shared data present, set
# `dataset = "../shared/data/locomo/locomo10.json#paper"` (the paper's 314 LoCoMo test questions) or a
# LongMemEval JSON path; in batch: `lazymem notebooks run 01_data -p dataset=...`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import pandas as pd

from lazymem import viz
from lazymem.data import SPLITS, evidence_profile, load_dataset, stratified_split, summarize

# %% tags=["parameters"]
dataset = "synthetic:messages=400,seed=0,histories=4,questions=12"  # dataset SPEC (lazymem.data.datasets)
split_seed = 42  # seed of the stratified split (the paper's: 42)
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %% [markdown]
# ## 1. Load and summarise

# %%
ds = load_dataset(dataset)
summary = summarize(ds)
pd.Series({k: v for k, v in summary.items() if isinstance(v, (int, str))}, name="value").to_frame()

# %%
pd.Series(summary["questions_by_type"], name="questions").to_frame()

# %% [markdown]
# ## 2. The paper's split (per type: sort by id, shuffle with the seed, largest-remainder cut)

# %%
split = stratified_split(ds.questions, seed=split_seed)
split_counts = split.counts_by_type(ds.questions)
pd.DataFrame(split_counts).T.sort_index()

# %% [markdown]
# ## 3. Figures: question types, split, history lengths and where the evidence sits

# %%
figs = {
    "01_type_counts": viz.type_counts(summary),
    "01_split_table": viz.split_table_fig(split_counts, title=f"Stratified split of {ds.name} (seed {split_seed})"),
    "01_history_stats": viz.history_stats(**evidence_profile(ds)),
}
for fig in figs.values():
    fig.show()
saved = viz.save_figures(figs, figures_dir, png=png)

# %% [markdown]
# ## 4. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = {
    "dataset": ds.name,
    "histories": summary["histories"],
    "messages": summary["messages"],
    "questions": summary["questions"],
    "abstention": summary["abstention_questions"],
    "evidence_refs": summary["gold_evidence"]["evidence_refs"],
    "split": {s: len(split.ids(s)) for s in SPLITS},
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
