# %% [markdown]
# # 10 · Error attribution: where each wrong answer first fails
#
# **Purpose.** The paper's error analysis (Section "Further Analysis") without annotators:
# `lazymem.eval.attribution` assigns each wrong answer (judge label False, else F1 below
# `f1_threshold`) to its first failing stage, in pipeline order: **retrieval miss** (a gold message
# never entered the windows the memory step saw: the pool for RAG, the shown sessions for
# NanoMemory), **editing loss** (every gold message was shown, but construction dropped one or kept
# it without the answer's key tokens) and **QA error** (the memory held the evidence; the answer is
# still wrong). Stacked bars by question type per system, drill-downs (gold messages, where they
# went, memory, answer) and any question opened in the window explorer.
#
# CPU defaults reuse `08_compare`'s quick runs (same `out_root`: nothing is recomputed); point
# `runs` at finished run folders, e.g. `-p runs='["docs/results/main_table/locomo_paper/lazymem_135m_v2_independent"]'
# -p dataset=../shared/data/locomo/locomo10.json#paper`. The CLI: `python scripts/attribute_runs.py RUN_DIR ...`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import json
from pathlib import Path

import pandas as pd
from IPython.display import HTML, display

from lazymem import viz
from lazymem.data import load_dataset
from lazymem.eval import load_records
from lazymem.eval.attribution import STAGES, attribute_run, drill_down
from lazymem.notebooks import explore_question
from lazymem.notebooks.compare import method_runs

# %% tags=["parameters"]
dataset = "synthetic:messages=200,seed=0,histories=1,questions=6"  # dataset SPEC the runs answered (feeds key checks)
limit = 2  # questions per method (0 = all)
methods = ["oracle_turn", "oracle_session", "rag", "extractive"]  # run (or resume) these when `runs` is empty
model = "smollm2-offline"  # answer / memory-processing model (alias, path or server model name)
base_url = ""  # OpenAI-compatible server; "" = in-process transformers
backend = ""  # "" = in-process transformers (or the server at base_url); "fake" echoes (tests)
n = 20  # RAG / LazyMem pool size (paper: 50)
runs = []  # finished run folders to attribute instead of running `methods` (names = folder names)
out_root = "runs/nb08_compare"  # the same as 08_compare: its finished runs are reused
f1_threshold = 0.5  # without a judge, an answer is wrong below this F1 (LoCoMo official, else the proxy)
drill = 3  # drill-downs to print (the first wrong answers, one stage after another)
question_id = ""  # a question to open in the window explorer ("" = the first drilled one with windows)
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
run_dirs = method_runs(runs, methods, dataset, out_root, limit=limit, model=model, base_url=base_url,
                       backend=backend, n=n)
ds = load_dataset(dataset)
texts = {h.id: {m.pos: m.text for m in h.messages} for h in ds.histories.values()}
records = {Path(d).name: [r for r in load_records(Path(d) / "records.jsonl")[0] if r.ok]
           for d in run_dirs}
attributions = {name: attribute_run(recs, lambda r: texts.get(r.question.history_id), f1_threshold)
                for name, recs in records.items()}
counts = pd.DataFrame({k: {"questions": a["questions"], "wrong": a["wrong"],
                           **{s: a["counts"].get(s, 0) for s in STAGES}} for k, a in attributions.items()}).T
counts

# %% [markdown]
# ## 1. Stacked bars by question type

# %%
fig = viz.attribution_bars(attributions)
fig.show()
saved = viz.save_figures({"10_errors": fig}, figures_dir, png=png)

# %% [markdown]
# ## 2. Drill-downs: the first wrong answers, one stage after another

# %%
order = [(s, name, item) for s in STAGES for name, a in attributions.items()
         for item in a["items"] if item["stage"] == s]
picked, seen = [], set()
for stage, name, item in order:  # one per stage first, then the rest
    if stage not in seen:
        picked.append((name, item))
        seen.add(stage)
picked += [(n_, i) for _, n_, i in order if (n_, i) not in picked]
for name, item in picked[:drill]:
    rec = next(r for r in records[name] if r.question_id == item["question_id"])
    print(f"--- {name}: {item['stage']}")
    print(json.dumps(drill_down(rec, texts.get(rec.question.history_id)), indent=1, ensure_ascii=False)[:2500])

# %% [markdown]
# ## 3. One question in the window explorer

# %%
with_windows = [(n_, i) for n_, i in picked
                if any(r.windows for r in records[n_] if r.question_id == i["question_id"])]
if question_id:
    run_name = next(n_ for n_, recs in records.items() if any(r.question_id == question_id for r in recs))
    qid = question_id
elif with_windows:
    run_name, qid = with_windows[0][0], with_windows[0][1]["question_id"]
else:
    run_name = qid = None
if qid is None:
    print("no wrong answer of these runs went through windows (RAG and oracles have none)")
else:
    run_dir = run_dirs[[Path(d).name for d in run_dirs].index(run_name)]
    strip, page = viz.explorer_view(explore_question(ds, qid, method=f"run:{run_dir}"))
    strip.show()
    display(HTML(page))

# %% [markdown]
# ## 4. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = {name: {"questions": a["questions"], "every wrong answer attributed":
                   all(i["stage"] in (*STAGES, "no gold evidence") for i in a["items"] if i["wrong"])}
           for name, a in attributions.items()}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
