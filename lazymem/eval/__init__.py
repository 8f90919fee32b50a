"""Evaluation (paper Sec. 4): the runner over a dataset, judging, scoring, run files and provenance, retrieval metrics.

Modules, from the ground up:

- ``config``: EvalConfig, apply_overrides, config_fingerprint, select_questions.
- ``f1``: LoCoMo's official token F1 (normalize_answer, token_f1, locomo_f1, ...).
- ``judge``: the official LLM judges' prompts and reply parsers, judge_answer, check_judge.
- ``records``: RunRecord, the typed run record (one line of records.jsonl) and its parts.
- ``runfiles``: the run folder's file names, load_records (typed) and read_records (raw JSON), atomic writes,
  secret masking, window_lines, resuming.
- ``provenance``: git_commit, package_versions, timestamps, the manifest.
- ``scoring``: summarize, compare_with_baseline, summary_text, percentiles, the running score.
- ``runner``: evaluate() and run_question(), the loop over questions.
- ``command``: the ``lazymem eval`` command line (add_arguments, run_from_args).
- ``memory_measures``: evidence recall and answer recall in memory, measures of the memory that do
  not depend on the answer model (per record; in summaries, eval-table and report).
- ``metrics``: retrieval metrics and All@k window coverage (paper Table 2).
- ``shards``: question shards (``lazymem eval --shard i/K``) and ``merge_runs`` (``lazymem merge``), which
  refuses shards of other configs, data or prompts and overlapping or missing questions.
- ``fusion_tuning``: RRF k, list weights and depths chosen by All@k on development questions,
  scored on the report set (``lazymem fusion-tuning``; not imported here).
"""

from lazymem.eval.command import add_arguments, run_from_args  # noqa: F401
from lazymem.eval.config import EvalConfig, config_fingerprint, quick_config, select_questions  # noqa: F401
from lazymem.eval.f1 import (  # noqa: F401
    answer_tokens,
    locomo_f1,
    multi_answer_f1,
    normalize_answer,
    token_f1,
)
from lazymem.eval.judge import (  # noqa: F401
    locomo_judge_prompt,
    longmemeval_judge_prompt,
    longmemeval_judge_template,
    parse_correct_wrong,
    parse_yes_no,
)
from lazymem.eval.metrics import (  # noqa: F401
    all_at_k,
    all_covered,
    coverage_table,
    dataset_windows,
    dcg,
    gold_in_windows,
    mean_skip_none,
    ndcg_any,
    recall_all,
    recall_any,
    retrieval_metrics,
    windows_summary,
)
from lazymem.eval.provenance import package_versions  # noqa: F401
from lazymem.eval.records import RunRecord  # noqa: F401
from lazymem.eval.runfiles import load_records, read_records  # noqa: F401
from lazymem.eval.runner import evaluate  # noqa: F401
from lazymem.eval.scoring import compare_with_baseline, percentiles, summarize, summary_text  # noqa: F401
