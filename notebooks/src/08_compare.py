# %% [markdown]
# # 08 · Compare systems: tables with paired bootstrap intervals, Pareto figures, error attribution
#
# **Purpose.** The paper's main comparison (RQ1, RQ2) for any set of systems: run each method on the
# same questions (or point `runs` at finished run folders), then `lazymem.eval.report` gives the score
# overall and by type, errors and unparseable judge replies, answer-context memory tokens (Qwen3),
# latency per stage (mean, median, P90, P95), Gate Fmt. and gold-keep recall, and paired bootstrap 95%
# intervals against a reference system; `lazymem.viz.pareto_figure` draws score vs memory tokens (log
# x) and vs mean latency (P50-P95 bars) with dashed frontiers, the paper's reported points overlaid
# hollow when `paper` names a benchmark. `lazymem.eval.attribution` assigns each wrong answer to its
# first failing stage (notebook `10_errors`). The CLI does the same: `lazymem report RUN_DIR ... --out DIR`.
#
# CPU defaults are tiny (SmolLM2 answers 2 questions per method); on a GPU node point it at the
# paper's configs (`configs/eval/paper_locomo.yaml`) or at finished runs: `-p runs='[runs/eval/a, runs/eval/b]'`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

from pathlib import Path

import pandas as pd

from lazymem import viz
from lazymem.notebooks.compare import method_runs, report_cost_figure, report_with_figures

# %% tags=["parameters"]
dataset = "synthetic:messages=200,seed=0,histories=1,questions=6"  # dataset SPEC (lazymem.data.datasets)
limit = 2  # questions per method (0 = all)
methods = ["oracle_turn", "oracle_session", "rag", "extractive"]  # also "lazymem", "nanomemory", "full"
model = "smollm2-offline"  # answer / memory-processing model (alias, path or server model name)
base_url = ""  # OpenAI-compatible server; "" = in-process transformers
backend = ""  # "" = in-process transformers (or the server at base_url); "fake" echoes (tests)
n = 20  # RAG / LazyMem pool size (paper: 50)
reference = "rag"  # the system the paired intervals compare with (a method name or a run folder name)
paper = ""  # "locomo" / "longmemeval": overlay the paper's reported points on the Pareto figure
runs = []  # finished run folders to compare instead of running `methods` (names = folder names)
out_root = "runs/nb08_compare"  # one run folder per method, and the report in <out_root>/report
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
judge_audit = ""  # a judge_audit.json (`lazymem judge-audit --config ...`): its false-accept/-reject rates
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
run_dirs = method_runs(runs, methods, dataset, out_root, limit=limit, model=model, base_url=base_url,
                       backend=backend, n=n)
names = [Path(d).name for d in run_dirs]
run_dirs

# %% [markdown]
# ## 1. The tables

# %%
report, pareto = report_with_figures(run_dirs, reference=reference if reference in names else None,
                                     dataset=paper or None, out=f"{out_root}/report", png=False, n_resamples=2000)
cols = ["system", "questions", "errors", "unparseable_judge", "score", "memory_tokens", "gate_fmt", "gold_keep_recall"]
print("score:", report["metric"], "| paired intervals against", report["reference"])
pd.DataFrame(report["rows"])[cols].set_index("system").round(3)

# %%
pd.DataFrame([{"system": p["system"], "vs": p["reference"], "shared questions": p["score"]["n"],
               "delta": p["score"]["delta"], "95% low": p["score"]["low"], "95% high": p["score"]["high"],
               "token delta": p["memory_tokens"]["delta"]} for p in report["pairs"]]).round(3)

# %% [markdown]
# ## 2. Pareto figure

# %%
pareto.show()
saved = viz.save_figures({"08_pareto": pareto}, figures_dir, png=png)

# %% [markdown]
# The whole bill: what each memory holds (evidence recall, answer recall in memory) against what it costs
# before the answer is read, all-call tokens a question (every model call, in and out: the memory model's
# passes, the answer, Mem0's ingestion spread over its questions) and processing seconds a question. A
# learned processor earns its place only where it sits above the extractive one and its own prior here.

# %%
cost = report_cost_figure(report)
if cost is not None:
    cost.show()
    saved.update(viz.save_figures({"08_cost": cost}, figures_dir, png=png))

# %% [markdown]
# ## 3. Where the wrong answers fail
#
# `10_errors` assigns each wrong answer of these runs to its first failing stage (it reuses this
# notebook's run folders when `out_root` is the same), with stacked bars by question type and
# drill-downs into the window explorer.

# %% [markdown]
# ## 4. Audited LoCoMo and the judge
#
# LoCoMo's evidence ids and golden answers are not always right: with the audit's errata loaded
# (`dataset = ".../locomo10.json#paper?errata=.../locomo10_audit_errata.json"`, or `lazymem remeasure RUN
# --errata PATH` on finished runs) every memory measure is reported against the published and the corrected
# gold, accuracy on the clean questions too, and the ceiling (the share of questions whose published answer is
# right) so no score is read above it. `judge_audit` shows how often the configured judge accepts wrong
# answers (vague, specific, abstaining) and rejects right ones.

# %%
import json

audited = {Path(d).name: json.loads((Path(d) / "summary.json").read_text()).get("audited") for d in run_dirs}
audited = {name: a for name, a in audited.items() if a}
if audited:
    view = pd.DataFrame([{"system": name, "flagged": a["flagged"], "wrong answers": a["wrong_answer"],
                          "evidence recall, published": a["evidence_recall"]["published"]["mean"],
                          "evidence recall, audited": a["evidence_recall"]["audited"]["mean"],
                          "answer in memory, published": a["answer_recall_in_memory"]["published"]["mean"],
                          "answer in memory, audited": a["answer_recall_in_memory"]["audited"]["mean"]}
                         for name, a in audited.items()]).set_index("system").round(3)
else:
    view = "no audited measures: these runs' dataset carries no errata"
view

# %%
if judge_audit and Path(judge_audit).is_file():
    from lazymem.eval.judge_audit import audit_markdown

    print(audit_markdown(json.loads(Path(judge_audit).read_text())))
else:
    print("no judge audit given (lazymem judge-audit --config CONFIG --out DIR writes DIR/judge_audit.json)")

# %% [markdown]
# ## 5. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = {row["system"]: {"questions": row["questions"], "errors": row["errors"],
                            "paired": next((p["score"]["n"] for p in report["pairs"] if p["system"] == row["system"]),
                                           "reference")} for row in report["rows"]}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
