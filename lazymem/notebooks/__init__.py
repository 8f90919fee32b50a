"""The notebooks' side of the package: building them from their sources, running them in batch, their helpers.

The notebooks' sources are ``notebooks/src/NN_name.py`` (jupytext percent format, linted like the
package); ``notebooks/NN_name.ipynb`` is generated from them. Logic a notebook needs lives here or
in the stages, never in the notebook.

Modules:

- ``build``: ``lazymem notebooks build [names] [--no-execute]`` writes each
  ``.ipynb`` from its source, executes it and keeps only the ``# NBVAL_CHECK_OUTPUT`` cells'
  outputs (``build``, ``read_source``, ``source_names``);
- ``params``: notebook paths (``project_root``, ``resolve_notebook``), the ``parameters``
  cell (``notebook_parameters``), ``-p name=value`` (``parse_param``), grid files
  (``load_grid``, ``expand_grid``) and readable run ids (``run_id``);
- ``runner``: ``run_grid`` executes a notebook per grid point into
  ``papermill_runs/<stem>/<run_id>/`` with a provenance manifest (the points go through the sweep
  engine, ``lazymem.sweep``); ``RunResult``, ``results_table``;
- ``tables``: notebook-side ``record_metrics``/``metrics_table`` and ``eval_overview``;
- ``explorer``: the window explorer's data (``explore_question``, ``explorer_metrics``, ...);
- ``ablations``: notebook 09's sweep points (``ablation_config``, ``ablation_sweep`` through
  ``lazymem.sweep``, ``ablation_point``, ``run_all_at_k``);
- ``compare``: the report with its Pareto figure and notebooks 08/10's run folders
  (``report_with_figures``, ``method_runs``);
- ``recipe``: the LazyMem-135M training recipe notebook 07 runs (``RECIPE``, ``run_recipe``).

Credentials are named and redacted by ``lazymem.secrets`` (``is_secret``, ``redact`` and
``REDACTED`` are re-exported here).
"""

from lazymem.notebooks.ablations import UNCHANGED, ablation_config, ablation_point, ablation_sweep, run_all_at_k
from lazymem.notebooks.explorer import (
    EXTRACTIVE_METHODS,
    WINDOW_RECORDS_FILE,
    explore_question,
    explorer_methods,
    explorer_metrics,
    load_window_records,
    question_options,
)
from lazymem.notebooks.params import (
    expand_grid,
    load_grid,
    notebook_parameters,
    parse_param,
    project_root,
    resolve_notebook,
    run_id,
)
from lazymem.notebooks.runner import (
    MANIFEST_PACKAGES,
    METRICS_PARAM,
    RunResult,
    git_state,
    results_table,
    run_grid,
    sha256_file,
)
from lazymem.notebooks.tables import eval_overview, metrics_table, record_metrics
from lazymem.secrets import REDACTED, is_secret, redact

__all__ = [
    "UNCHANGED",
    "ablation_config",
    "ablation_point",
    "ablation_sweep",
    "run_all_at_k",
    "EXTRACTIVE_METHODS",
    "WINDOW_RECORDS_FILE",
    "explore_question",
    "explorer_methods",
    "explorer_metrics",
    "load_window_records",
    "question_options",
    "expand_grid",
    "load_grid",
    "notebook_parameters",
    "parse_param",
    "project_root",
    "resolve_notebook",
    "run_id",
    "MANIFEST_PACKAGES",
    "METRICS_PARAM",
    "RunResult",
    "git_state",
    "results_table",
    "run_grid",
    "sha256_file",
    "eval_overview",
    "metrics_table",
    "record_metrics",
    "REDACTED",
    "is_secret",
    "redact",
]
