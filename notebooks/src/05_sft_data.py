# %% [markdown]
# # 05 · SFT data: query-window pairs, teacher targets, balance
#
# **Purpose.** Build the memory-processing model's supervised fine-tuning data as the paper's
# Appendix "SFT data construction": training questions sampled by type, query-window pairs from the
# real retrieval and windowing (prompts built by the same `window_prompts` as inference, byte for
# byte), a teacher's KEEP/DROP targets, discards by reason, window-level balancing (every window
# with a KEEP paired with as many sampled all-DROP windows), and a data card beside the paper's numbers.
#
# Offline the teacher is the explicit **gold-label teacher** (KEEP the gold messages verbatim, DROP
# the rest), named as such in the card; with a model teacher set `teacher` to a served model (see
# `configs/recipes/quickstart-cpu/data.yaml`). At scale: `lazymem train sft-data --config configs/recipes/quickstart-cpu/data_locomo.yaml`.

# %%
import os

from lazymem import notebooks as nb

os.chdir(nb.project_root())  # relative paths mean the repository root in Jupyter, papermill and nbval alike

import pandas as pd
from IPython.display import Markdown, display

from lazymem import viz
from lazymem.train import SFTDataConfig, build_sft_data
from lazymem.train.datacard import decision_shares, example_targets, instance_lengths, read_jsonl

# %% tags=["parameters"]
dataset = "synthetic:messages=200,seed=0,histories=2,questions=12"  # SPEC; train split used (LoCoMo 9-10 are refused)
questions = 100  # at most this many training questions, sampled by type (paper: 100 of 360)
teacher = "gold"  # "gold" = the offline gold-label teacher; a model needs a recipe with an LLM section
balance = True  # pair every window with a KEEP decision with a sampled all-DROP window (paper)
output_dir = "runs/nb05_sft_data"  # sft.jsonl, annotations.jsonl, card.json, card.md
n_examples = 2  # example targets shown
figures_dir = "figures"  # save_figures writes <figures_dir>/<name>.html and <name>.png here
png = True  # also write PNGs (kaleido + Chromium; skipped with a warning when missing)
metrics_path = ""  # set by `lazymem notebooks run`: the last cell writes its metrics JSON here

# %%
config = SFTDataConfig.from_dict({"datasets": [dataset], "split": "train", "questions": questions, "teacher": teacher,
                                  "balance": balance, "output_dir": output_dir, "progress": False})
card = build_sft_data(config)
rows = read_jsonl(card["files"]["sft"]["path"])
display(Markdown(open(f"{output_dir}/card.md", encoding="utf-8").read()))

# %% [markdown]
# ## 1. KEEP / DROP balance and lengths

# %%
lengths, unit = instance_lengths(rows)
figs = {
    "05_keep_drop": viz.keep_drop_balance({
        "raw annotations": {"KEEP": card["keep_share"], "DROP": 1 - card["keep_share"]},
        "SFT instances (balanced)": decision_shares(rows),
    }),
    "05_lengths": viz.length_histograms(lengths, unit=unit,
                                        paper_means={"input": card["paper"]["input_tokens_mean"],
                                                     "target": card["paper"]["target_tokens_mean"]}),
}
for fig in figs.values():
    fig.show()
saved = viz.save_figures(figs, figures_dir, png=png)

# %% [markdown]
# ## 2. Example targets (what the model learns to write)

# %%
pd.DataFrame(example_targets(rows, n_examples))

# %% [markdown]
# ## 3. Record metrics

# %%
# NBVAL_CHECK_OUTPUT
metrics = {
    "teacher": card["teacher"],
    "questions": card["questions"],
    "query_window_pairs": card["query_window_pairs"],
    "keep_share": card["keep_share"],
    "discarded": card["discarded"],
    "windows_with_keep": card["windows_with_keep"],
    "instances": card["instances"],
}
print(nb.metrics_table(metrics))
_ = nb.record_metrics(metrics, metrics_path)
