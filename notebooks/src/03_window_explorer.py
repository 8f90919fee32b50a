# %% [markdown]
# # 03 · Window explorer: what the memory processor keeps and drops
#
# **Purpose.** Look at one question's windows: which messages were retrieved (ring), which hold gold
# evidence (star), and what the memory processor did with each (KEEP green, DROP grey, gate failure
# red), with the original text beside the compressed text and the final memory.
#
# Until a trained processor exists, the view shows the training-free `ExtractiveProcessor` (keep a
# message that shares at least `threshold` of the query's content words). A run folder with a
# `windows.jsonl` (one record per window: positions, hits, gold, verdict, decisions) is shown the same
# way with `method = "run:<folder>"`. The controls only re-render; all logic is in
# `lazymem.notebooks.explore_question` and `lazymem.viz`. Executed without a live kernel (papermill,
# nbval, a static viewer), section 1 shows the default question.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import functools

import ipywidgets as widgets
from IPython.display import HTML, display

from lazymem import viz
from lazymem.data import available_specs, load_dataset
from lazymem.retrieve import RetrievalConfig, Retriever, WindowConfig

# %% tags=["parameters"]
dataset = "synthetic:messages=400,seed=0,histories=4,questions=12"  # dataset SPEC shown first
datasets = ["../shared/data/locomo/locomo10.json#paper", "../shared/data/longmemeval/s_fragment_3haystacks.json"]  # more choices (missing files left out)  # noqa: E501
question_id = ""  # question shown first ("" = the first question with gold evidence)
method = "extractive"  # "extractive" or "extractive-key-span" (training-free), or "run:<folder>" holding windows.jsonl
n = 50  # pool size (paper: 50)
w = 2  # window radius (paper: 2)
threshold = 0.25  # ExtractiveProcessor: keep a message holding at least this share of the query's content words
dense_model = "minilm-offline"  # dense bi-encoder for retrieval, or None for BM25 only
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
retriever = Retriever(RetrievalConfig(n=n, dense_model=dense_model))
windowing = WindowConfig(w=w)
load = functools.lru_cache(maxsize=4)(load_dataset)
choices = available_specs([dataset, *datasets])
ds = load(dataset)

# %% [markdown]
# ## 1. The default question (static: visible in executed notebooks)

# %%
view = nb.explore_question(ds, question_id, method, retriever, windowing, threshold)
fig, page = viz.explorer_view(view)
fig.show()
display(HTML(page))
saved = viz.save_figures({"03_window_strip": fig}, figures_dir, png=png)

# %% [markdown]
# ## 2. Interactive: pick a dataset, a question and a method

# %%
ds_box = widgets.Dropdown(options=choices, value=dataset, description="dataset", layout=widgets.Layout(width="80%"))
q_box = widgets.Dropdown(options=nb.question_options(ds), value=view["question"].id, description="question",
                         layout=widgets.Layout(width="80%"))
m_box = widgets.Dropdown(options=nb.explorer_methods(), value=method, description="method")
out = widgets.Output()


def render(_=None):
    shown = nb.explore_question(load(ds_box.value), q_box.value, m_box.value, retriever, windowing, threshold)
    strip, table = viz.explorer_view(shown)
    with out:
        out.clear_output(wait=True)
        display(strip, HTML(table))


# Nothing renders until a control changes: the default question is in section 1, and a big view
# written into an Output widget while papermill/nbval run the notebook is slow (nbclient syncs it).
hint = widgets.HTML("<i>Change a control to render its view here; the default question is shown above.</i>")
ds_box.observe(lambda _: setattr(q_box, "options", nb.question_options(load(ds_box.value))), names="value")
q_box.observe(render, names="value")
m_box.observe(render, names="value")
widgets.VBox([ds_box, q_box, m_box, hint, out])

# %% [markdown]
# ## 3. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = nb.explorer_metrics(view) | {"dataset": ds.name, "method": method}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
