"""Figures of training data and training runs: KEEP/DROP balance, lengths, curves from trainer logs.

Inputs are plain dicts: a data card (``lazymem.train.datacard``), per-instance lengths, and
the rows of ``lazymem.train.log_rows`` (one per logged step), so the figures never touch a
trainer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def keep_drop_balance(counts: Mapping[str, Mapping[str, float]], title: str = "KEEP / DROP share of decisions"):
    """Stacked bars of the KEEP and DROP shares per stage, e.g. {"raw annotations": {"KEEP": 0.04,
    "DROP": 0.96}, "SFT instances": {...}}."""
    import plotly.graph_objects as go

    stages = list(counts)
    fig = go.Figure()
    for op, color in (("KEEP", "#2ca02c"), ("DROP", "#bdbdbd")):
        vals = [counts[s].get(op, 0.0) for s in stages]
        fig.add_bar(name=op, x=stages, y=vals, marker_color=color, text=[f"{v:.1%}" for v in vals])
    fig.update_layout(
        barmode="stack", title=title, yaxis_title="share of decisions", yaxis_tickformat=".0%", template="plotly_white"
    )
    return fig


def length_histograms(
    lengths: Mapping[str, Sequence[int]],
    unit: str = "tokens",
    paper_means: Mapping[str, float] | None = None,
    title: str = "Instance lengths",
):
    """Overlaid histograms (e.g. {"input": [...], "target": [...]}) with the paper's means as dashed lines."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, xs in lengths.items():
        fig.add_histogram(x=list(xs), name=f"{name} (mean {sum(xs) / max(len(xs), 1):,.0f})", opacity=0.6, nbinsx=30)
    for name, mean in (paper_means or {}).items():
        fig.add_vline(x=mean, line_dash="dash", annotation_text=f"paper {name} mean {mean:,.0f}")
    fig.update_layout(
        barmode="overlay", title=title, xaxis_title=unit, yaxis_title="instances", template="plotly_white"
    )
    return fig


def training_curves(
    rows: Sequence[Mapping], metrics: Sequence[str], title: str = "Training", events: Mapping[int, str] | None = None
):
    """One panel per metric against the step (rows: {"step": ..., metric: ...}); ``events`` marks
    steps such as the curriculum's lambda switch with a dashed line."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=len(metrics), cols=1, shared_xaxes=True, subplot_titles=list(metrics), vertical_spacing=0.06
    )
    for i, m in enumerate(metrics, start=1):
        pts = [(r["step"], r[m]) for r in rows if r.get(m) is not None]
        fig.add_trace(
            go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers", name=m), row=i, col=1
        )
        for step, label in (events or {}).items():
            fig.add_vline(
                x=step, line_dash="dash", line_color="#d62728", row=i, col=1, annotation_text=label if i == 1 else None
            )
    fig.update_layout(title=title, height=220 * len(metrics) + 80, showlegend=False, template="plotly_white")
    fig.update_xaxes(title_text="step", row=len(metrics), col=1)
    return fig


def message_length_ranges(
    lengths: Mapping[str, Mapping[str, Mapping]],
    unit: str = "words",
    title: str = "Message lengths: training data beside the test sets",
):
    """One horizontal bar per (data set, role kind): p10 to p90 of the message length, the median
    marked, the max as a faint whisker; ``lengths`` is ``lazymem data lengths --json``'s content
    ({spec: {role kind: {"words": distribution, "chars": distribution}}}).

    >>> fig = message_length_ranges({"d": {"user": {"words": {"p10": 5, "median": 9, "p90": 20, "max": 40}}}})
    >>> [t.name for t in fig.data], list(fig.data[0].y)
    (['p10-p90', 'median', 'max'], ['d · user'])
    """
    import plotly.graph_objects as go

    rows = [
        (f"{spec.split('/')[-1]} · {role}", d[unit])
        for spec, roles in lengths.items()
        for role, d in roles.items()
        if d.get(unit, {}).get("median") is not None
    ]
    labels = [r for r, _ in rows]
    fig = go.Figure()
    fig.add_bar(
        name="p10-p90",
        y=labels,
        x=[d["p90"] - d["p10"] for _, d in rows],
        base=[d["p10"] for _, d in rows],
        orientation="h",
        marker_color="#9ecae1",
    )
    fig.add_scatter(
        name="median",
        y=labels,
        x=[d["median"] for _, d in rows],
        mode="markers",
        marker={"symbol": "line-ns-open", "size": 18, "color": "#08519c", "line": {"width": 3}},
    )
    fig.add_scatter(
        name="max",
        y=labels,
        x=[d["max"] for _, d in rows],
        mode="markers",
        marker={"symbol": "x-thin-open", "size": 8, "color": "#bdbdbd"},
    )
    fig.update_layout(
        title=title,
        xaxis_title=unit,
        xaxis_type="log",
        template="plotly_white",
        height=140 + 36 * len(rows),
        yaxis={"autorange": "reversed"},
    )
    return fig


def keep_probe_roc(
    records: Mapping[str, Mapping],
    title: str = "What the model tells apart: P(KEEP), gold lines against the rest (teacher-forced)",
):
    """One ROC line per ``keep_probe`` record ({label: record}, e.g. ``keep_bias_*.json`` with its
    ``roc`` added by ``lazymem.train.probe.record_roc``): the share of non-gold lines kept against the
    share of gold lines kept as the KEEP threshold falls, its AUC in the legend, and a marker in the
    line's colour at the record's chosen bias (``chosen``). A record without ``roc`` points is left out."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#bdbdbd"}, name="chance", hoverinfo="skip"
        )
    )
    for i, (label, rec) in enumerate(records.items()):
        pts = rec.get("roc") or []
        if not pts:
            continue
        color = qualitative.D3[i % len(qualitative.D3)]  # the line and its chosen bias's marker alike
        line = go.Scatter(
            x=[p[0] for p in pts],
            y=[p[1] for p in pts],
            mode="lines",
            line={"color": color},
            name=f"{label} (AUC {rec.get('auc', 0):.3f}, {rec.get('gold_lines')} gold lines)",
        )
        fig.add_trace(line)
        chosen = rec.get("chosen") or {}
        if chosen.get("gold_recall") is not None:
            fig.add_trace(
                go.Scatter(
                    x=[chosen["nongold_keep_rate"]],
                    y=[chosen["gold_recall"]],
                    mode="markers",
                    showlegend=False,
                    marker={"size": 11, "symbol": "diamond", "color": color, "line": {"width": 1, "color": "black"}},
                    name=f"{label}: bias {chosen['keep_bias']:.3f}",
                    hovertemplate=f"{label}: KEEP bias {chosen['keep_bias']:.3f}<br>non-gold kept %{{x:.3f}}, "
                    "gold kept %{y:.3f}<extra></extra>",
                )
            )
    fig.update_layout(
        title=title,
        xaxis_title="non-gold lines kept",
        yaxis_title="gold lines kept",
        xaxis_range=[0, 1],
        yaxis_range=[0, 1.02],
        template="plotly_white",
        height=560,
        legend={"orientation": "h", "y": -0.18},
    )
    return fig
