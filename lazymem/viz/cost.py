"""What a memory costs against what it holds: the whole bill of a memory method, not only its memory tokens.

``memory_cost_figure(rows)`` draws, for every row (a ``lazymem report`` row, or a results table's row), the two
answerer-free memory measures against the two costs a question pays before the answer is read: a 2 x 2 grid,
evidence recall (top) and answer recall in memory (bottom) against all-call tokens (left, log x: every model
call's tokens in and out a question, ``lazymem.eval.usage``) and against processing seconds (right: the memory
step's mean seconds a question). The dashed line in each panel is its Pareto frontier (upper left is better). A
row without a value for a panel is left out of that panel only (runs made before all-call accounting have no
all-call tokens), and the figure's subtitle names the rows left out.

>>> memory_cost_points([{"system": "a", "evidence_recall": 0.5, "all_call_tokens": 900.0, "processing_s": 2.0},
...                     {"system": "b", "evidence_recall": 0.4}], "evidence_recall", "all_call_tokens")
[('a', 900.0, 0.5)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MEASURES = {  # a row's key -> the panel's y-axis title
    "evidence_recall": "evidence recall (gold messages in memory)",
    "answer_recall_in_memory": "answer recall in memory",
}
COSTS = {  # a row's key -> the panel's x-axis title
    "all_call_tokens": "all-call tokens a question (log)",
    "processing_s": "processing seconds a question",
}


def row_value(row: Mapping, key: str) -> float | None:
    """A row's value of ``key``; ``processing_s`` also from a report row's ``latency_s.processing.mean``.

    >>> row_value({"latency_s": {"processing": {"mean": 3.5}}}, "processing_s"), row_value({}, "all_call_tokens")
    (3.5, None)
    """
    v = row.get(key)
    if v is None and key == "processing_s":
        v = ((row.get("latency_s") or {}).get("processing") or {}).get("mean")
    return None if v is None else float(v)


def memory_cost_points(rows: Sequence[Mapping], measure: str, cost: str) -> list[tuple[str, float, float]]:
    """(name, cost, measure) of the rows that have both (all-call tokens must be positive: a log axis)."""
    from lazymem.viz.pareto import point_name

    out = []
    for r in rows:
        x, y = row_value(r, cost), row_value(r, measure)
        if x is None or y is None or (cost == "all_call_tokens" and x <= 0):
            continue
        out.append((point_name(r), x, y))
    return out


def memory_cost_figure(rows: Sequence[Mapping], title: str = "What a memory holds against what it costs"):
    """The 2 x 2 figure (see the module docstring)."""
    from plotly.subplots import make_subplots

    from lazymem.viz.pareto import _points, point_name

    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[f"{MEASURES[m].split(' (')[0]} vs {COSTS[c].split(' (')[0]}" for m in MEASURES for c in COSTS],
        horizontal_spacing=0.1,
        vertical_spacing=0.16,
    )
    missing: set[str] = set()
    for i, measure in enumerate(MEASURES, start=1):
        for j, cost in enumerate(COSTS, start=1):
            pts = memory_cost_points(rows, measure, cost)
            shown = {p[0] for p in pts}
            missing |= {point_name(r) for r in rows if point_name(r) not in shown}
            logx = cost == "all_call_tokens"
            if pts:
                color, unit = ("#1f77b4", "tokens") if logx else ("#d62728", "s")
                _points(fig, pts, measure, color, j, unit, row=i, logx=logx, legend=False, digits=1)
            fig.update_xaxes(title_text=COSTS[cost], type="log" if logx else "linear", row=i, col=j)
            fig.update_yaxes(title_text=MEASURES[measure], range=[-0.05, 1.05], row=i, col=j)
    note = f"<br><sup>not in every panel (no value there): {', '.join(sorted(missing))}</sup>" if missing else ""
    top = 110 + 20 * title.count("<br>")
    fig.update_layout(
        title=title + note, template="plotly_white", height=900, width=1300, margin=dict(l=70, r=90, t=top, b=60)
    )
    return fig
