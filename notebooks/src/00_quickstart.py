# %% [markdown]
# # 00 · Quickstart: the whole LazyMem query path on the embedded default
#
# **Purpose.** One question end to end, as in the paper's Figure 1: store messages verbatim, then at
# query time *retrieve broadly* (BM25 + dense, RRF, top `n`), *window* the hits (radius `w`, max length
# `L`, stride `s`), *construct* a compact memory (KEEP/DROP + compression per message), and *answer*
# from it.
#
# Offline CPU defaults: the embedded synthetic data, BM25 + all-MiniLM-L6-v2, the training-free
# `extractive` processor and SmolLM2-135M-Instruct (shipped on PyPI) as the answerer. Set
# `method = "lazymem"` to use SmolLM2 as the memory-processing model too (schema-constrained decoding;
# slow on CPU). On a GPU node point `base_url` at a vLLM server (`vllm serve Qwen/Qwen3-4B`) and set
# `model`; e.g.
# `lazymem notebooks run 00_quickstart -p base_url=http://127.0.0.1:8000/v1 -p model=Qwen/Qwen3-4B -p method=lazymem`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

from IPython.display import HTML, display

from lazymem import viz
from lazymem.data import load_dataset
from lazymem.eval import evaluate, quick_config, summary_text

# %% tags=["parameters"]
dataset = "synthetic:messages=200,seed=0,histories=1,questions=6"  # dataset SPEC (lazymem.data.datasets)
limit = 2  # questions to run (the first N of the dataset)
method = "extractive"  # "lazymem" (model KEEP/DROP), "extractive" (training-free), "rag" (top-n, no construction)
model = "smollm2-offline"  # answer (and memory-processing) model: alias, local path, or a server's model name
base_url = ""  # OpenAI-compatible server (vLLM, transformers serve) e.g. "http://127.0.0.1:8000/v1"; "" = in-process
backend = ""  # "" = in-process transformers (or the server at base_url); "vllm" in process on a GPU; "fake" (tests)
n = 50  # retrieval pool size (paper: 50)
w = 2  # window radius (paper: 2)
L = 8  # max window length (paper: 8)
s = 7  # sub-window stride (paper: 7)
out_dir = "runs/nb00_quickstart"  # records.jsonl, summary.json, manifest.json (resumable; reruns read the LLM cache)
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
config = quick_config(dataset, method, limit=limit, model=model, base_url=base_url, backend=backend, n=n, w=w, L=L, s=s)
ds = load_dataset(dataset)
print(config.pipeline.method, "|", config.pipeline.answer.backend, config.pipeline.answer.model)

# %% [markdown]
# ## 1. Run the query path

# %%
summary = evaluate(config, out_dir, progress=False)
print(summary_text(summary))

# %% [markdown]
# ## 2. Look at the first question: windows, decisions, memory, answer

# %%
view = nb.explore_question(ds, ds.questions[0].id, f"run:{out_dir}")
fig, page = viz.explorer_view(view)
fig.show()
display(HTML(page))
saved = viz.save_figures({"00_window_strip": fig}, figures_dir, png=png)

# %% [markdown]
# ## 3. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
c = summary["construction"] or {}
metrics = {
    "dataset": ds.name,
    "method": method,
    "questions_ok": summary["counts"]["ok"],
    "errors": summary["counts"]["error"],
    "windows_per_question": c.get("windows_per_question"),
    "gate_pass_rate": c.get("gate_pass_rate"),
    "gold_keep_recall": c.get("gold_keep_recall"),
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
