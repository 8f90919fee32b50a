"""Figures and static HTML views for the notebooks: pure functions of records and dicts.

Inputs are the package's records (History, Window, Decision, GateVerdict) or plain dicts
with the same field names, so a run's JSONL records can be shown exactly like live
objects; plotly is imported inside the functions, so ``import lazymem.viz`` stays cheap.

Modules:

- ``records``: ``window_records`` (one plain record per window), ``cell_states`` and the
  state colours and labels shared by the figures and the explorer;
- ``figures``: plotly figures: ``window_strip``, ``all_at_k_vs_w`` (beside reference
  lines such as the paper's Table 2), ``window_length_hist``, ``type_counts``, ``split_table_fig``, ``history_stats``,
  ``method_comparison``, ``attribution_bars`` (wrong answers by first failing stage and type);
- ``training``: ``keep_drop_balance``, ``keep_probe_roc``, ``length_histograms``, ``message_length_ranges``,
  ``training_curves`` (SFT data cards, KEEP probes, message lengths and trainer logs);
- ``pareto``: ``pareto_figure`` (score vs memory tokens, log x, and vs mean latency with P50-P95
  bars; evidence recall vs memory tokens when the runs carry it; dashed frontiers; the paper's
  reported points overlaid hollow) and ``pareto_front``;
- ``cost``: ``memory_cost_figure`` (evidence recall and answer recall in memory against all-call tokens
  and processing seconds a question, dashed frontiers: the whole bill of a memory method);
- ``explorer``: the static HTML window explorer (``window_explorer_html``, ``explorer_view``);
- ``save``: ``save_figures``/``save_figure`` write ``figures/<name>.html`` (plotly.js written
  once beside them: renders offline) and ``figures/<name>.png`` (kaleido, which needs a Chromium).
"""

from lazymem.viz.cost import memory_cost_figure
from lazymem.viz.explorer import explorer_view, window_explorer_html
from lazymem.viz.figures import (
    all_at_k_vs_w,
    attribution_bars,
    history_stats,
    method_comparison,
    split_table_fig,
    type_counts,
    window_length_hist,
    window_strip,
)
from lazymem.viz.pareto import pareto_figure, pareto_front
from lazymem.viz.records import COLORS, GOLD_COLOR, HIT_COLOR, STATE_CODE, STATE_LABELS, cell_states, window_records
from lazymem.viz.save import PNG_FIX, save_figure, save_figures
from lazymem.viz.training import (
    keep_drop_balance,
    keep_probe_roc,
    length_histograms,
    message_length_ranges,
    training_curves,
)

__all__ = [
    "explorer_view",
    "window_explorer_html",
    "all_at_k_vs_w",
    "attribution_bars",
    "history_stats",
    "method_comparison",
    "split_table_fig",
    "type_counts",
    "window_length_hist",
    "window_strip",
    "COLORS",
    "GOLD_COLOR",
    "HIT_COLOR",
    "STATE_CODE",
    "STATE_LABELS",
    "cell_states",
    "window_records",
    "PNG_FIX",
    "save_figure",
    "save_figures",
    "keep_drop_balance",
    "keep_probe_roc",
    "length_histograms",
    "message_length_ranges",
    "training_curves",
    "pareto_figure",
    "pareto_front",
    "memory_cost_figure",
]
