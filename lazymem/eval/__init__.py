"""Evaluation (paper Sec. 4): the runner over a dataset, judging, scoring, run files and provenance, retrieval metrics."""

from lazymem.eval.judge import (  # noqa: F401
    answer_tokens,
    locomo_f1,
    locomo_judge_prompt,
    longmemeval_judge_prompt,
    longmemeval_judge_template,
    multi_answer_f1,
    normalize_answer,
    parse_correct_wrong,
    parse_yes_no,
    token_f1,
)
from lazymem.eval.metrics import (  # noqa: F401
    all_at_k,
    all_covered,
    coverage_table,
    dcg,
    gold_in_windows,
    mean_skip_none,
    ndcg_any,
    recall_all,
    recall_any,
    retrieval_metrics,
)
from lazymem.eval.runner import (  # noqa: F401
    EvalConfig,
    build_parser,
    compare_with_baseline,
    config_fingerprint,
    evaluate,
    main,
    package_versions,
    percentiles,
    read_records,
    run_from_args,
    select_questions,
    summarize,
    summary_text,
)
