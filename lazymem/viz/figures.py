"""Plotly figures of windows, coverage and datasets: pure functions of records and dicts.

Every function returns a ``plotly.graph_objects.Figure`` and imports plotly inside itself,
so ``import lazymem.viz`` stays cheap.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.viz.records import (
    COLORS,
    GOLD_COLOR,
    HIT_COLOR,
    STATE_CODE,
    STATE_LABELS,
    cell_states,
    get_field,
    question_gold,
    window_label,
    window_records,
)


def _wrap(text: str, width: int = 70, limit: int = 700) -> str:
    text = text if len(text) <= limit else text[:limit] + " ..."
    return "<br>".join(textwrap.wrap(html.escape(text), width)) or "(empty)"


def window_strip(
    history: Any,
    windows: Sequence[Any],
    decisions: Sequence[Any] | None = None,
    gate: Sequence[Any] | None = None,
    question: Any = None,
):
    """One row of message cells per window, coloured KEEP / DROP / gate failure / not processed.

    Row i is window W_i (label: merged.sub id and its position range); its cells are the
    window's messages left to right, each showing its history position. A black ring
    marks a retrieved message, a gold star a gold evidence message (from the window
    records, or the question's evidence). Hovering a cell shows the original message and
    the compressed content kept for it.

    Args:
        history: the History (or any sequence of Messages indexed by position).
        windows, decisions, gate: as in ``window_records``.
        question: the Question (or a dict with id/type/text/evidence), for the title and gold.
    """
    import plotly.graph_objects as go

    records = window_records(windows, decisions, gate)
    qgold = question_gold(question)
    width = max((len(r["positions"]) for r in records), default=1)
    labels = [window_label(i, r) for i, r in enumerate(records)]
    z = [[None] * width for _ in records]
    text = [[""] * width for _ in records]
    hover = [[""] * width for _ in records]
    hits: tuple[list, list] = ([], [])
    golds: tuple[list, list] = ([], [])
    for i, rec in enumerate(records):
        gold = set(rec["gold"]) | qgold
        for j, (p, (state, content)) in enumerate(cell_states(rec).items()):
            m = history[p]
            z[i][j] = STATE_CODE[state]
            text[i][j] = str(p)
            marks = " ".join(x for x, on in (("HIT", p in rec["hits"]), ("GOLD", p in gold)) if on)
            tip = (
                f"<b>pos {p}</b> {html.escape(str(m.id))} · {html.escape(str(m.role))} · "
                f"{html.escape(str(m.timestamp))} {marks}<br>{_wrap(m.text)}"
                f"<br><b>{STATE_LABELS[state]}</b>"
            )
            if state == "KEEP":
                tip += f": {_wrap(content)}"
            elif state == "fail":
                tip += f" ({html.escape(rec['verdict']['reason'])})"
            hover[i][j] = tip
            if p in rec["hits"]:
                hits[0].append(j)
                hits[1].append(i)
            if p in gold:  # the star sits in the cell's upper right corner, clear of the number
                golds[0].append(j + 0.33)
                golds[1].append(i - 0.22)
    # Codes 0..3 land at 1/8, 3/8, 5/8, 7/8 of [zmin, zmax]: one flat band of colour each.
    scale = []
    for state, code in sorted(STATE_CODE.items(), key=lambda kv: kv[1]):
        scale += [[code / 4, COLORS[state]], [(code + 1) / 4, COLORS[state]]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(width)),
            y=list(range(len(records))),
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=10),
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=scale,
            zmin=-0.5,
            zmax=3.5,
            showscale=False,
            xgap=3,
            ygap=3,
            hoverongaps=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=hits[0],
            y=hits[1],
            mode="markers",
            name="retrieved (hit)",
            hoverinfo="skip",
            marker=dict(symbol="circle-open", size=21, color=HIT_COLOR, line=dict(width=1.5)),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=golds[0],
            y=golds[1],
            mode="markers",
            name="gold evidence",
            hoverinfo="skip",
            marker=dict(symbol="star", size=11, color=GOLD_COLOR, line=dict(width=1, color="#555")),
        )
    )
    for state in ("KEEP", "DROP", "fail", "none"):  # legend entries for the heatmap colours
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=STATE_LABELS[state],
                marker=dict(symbol="square", size=12, color=COLORS[state], line=dict(width=1, color="#888")),
            )
        )
    title = f"{len(records)} windows"
    if question is not None:
        qtext = str(get_field(question, "text", ""))
        qtext = qtext[:90] + ("..." if len(qtext) > 90 else "")
        qid, qtype = (html.escape(str(get_field(question, f, ""))) for f in ("id", "type"))
        title = f"{qid} [{qtype}] {html.escape(qtext)} ({len(records)} windows)"
    fig.update_layout(
        title=dict(text=title, font=dict(size=14), x=0.01, y=0.985, yref="container", yanchor="top"),
        template="plotly_white",
        plot_bgcolor="white",
        height=150 + 34 * max(len(records), 1),
        margin=dict(l=10, r=10, t=95, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, font=dict(size=11)),
        xaxis=dict(
            title="message in window",
            tickvals=list(range(width)),
            range=[-0.5, width - 0.5],
            showgrid=False,
            zeroline=False,
        ),
        yaxis=dict(
            tickvals=list(range(len(records))), ticktext=labels, autorange="reversed", showgrid=False, zeroline=False
        ),
    )
    return fig


def _series(coverage: Mapping) -> dict[str, dict[int, float]]:
    if "all_at_k" in coverage:  # a whole metrics.coverage_table result
        coverage = coverage["all_at_k"]
    if coverage and all(isinstance(v, Mapping) for v in coverage.values()):
        nested = {str(name): v.get("all_at_k", v) for name, v in coverage.items()}
    else:
        nested = {"this run": coverage}
    return {
        name: {int(w): v for w, v in sorted(s.items(), key=lambda kv: int(kv[0])) if v is not None}
        for name, s in nested.items()
    }


def all_at_k_vs_w(coverage_by_w: Mapping, paper: Mapping | None = None, k: int = 50):
    """All@k against the window radius w, optionally beside reference lines (dashed).

    Args:
        coverage_by_w: ``{w: value}`` (keys int or str), a coverage_table result, or
            ``{series name: {w: value}}`` for several lines.
        paper: None for no reference, or ``{name: {w: value}}``: the paper's Table 2 is
            ``lazymem.eval.paper.all_at_50_reference("locomo" | "longmemeval" | "both")``.
        k: the pool size, for the axis title.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, s in _series(coverage_by_w).items():
        fig.add_trace(
            go.Scatter(
                x=list(s),
                y=list(s.values()),
                mode="lines+markers+text",
                name=name,
                text=[f"{v:.3f}" for v in s.values()],
                textposition="top center",
            )
        )
    if paper is not None and not isinstance(paper, Mapping):
        raise TypeError(
            f"paper={paper!r}: pass None or a {{name: {{w: value}}}} mapping, e.g. "
            "lazymem.eval.paper.all_at_50_reference('locomo')"
        )
    for name, s in (paper or {}).items():
        fig.add_trace(
            go.Scatter(
                x=list(s),
                y=list(s.values()),
                mode="lines+markers",
                name=name,
                line=dict(dash="dash"),
                marker=dict(symbol="x"),
            )
        )
    fig.update_layout(
        template="plotly_white",
        title=f"Evidence coverage All@{k} vs window radius w",
        xaxis=dict(title="window radius w", dtick=1),
        yaxis=dict(title=f"All@{k}", range=[0, 1.05]),
        height=420,
        margin=dict(l=10, r=10, t=50, b=40),
    )
    return fig


def _length(w: Any) -> int:
    if isinstance(w, int):
        return w
    return len(get_field(w, "positions"))


def window_length_hist(windows_by_question: Mapping[str, Sequence[Any]]):
    """Histograms of window lengths (messages per model call) and windows per question (P).

    Args:
        windows_by_question: ``{question id: windows}``; a window is a Window, a record
            dict with ``positions``, or already its length (int).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lengths = [_length(w) for ws in windows_by_question.values() for w in ws]
    per_q = [len(ws) for ws in windows_by_question.values()]
    mean_p = sum(per_q) / len(per_q) if per_q else 0.0
    mean_len = sum(lengths) / len(lengths) if lengths else 0.0
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(f"messages per window (mean {mean_len:.2f})", f"windows per question P (mean {mean_p:.2f})"),
    )
    fig.add_trace(go.Histogram(x=lengths, xbins=dict(size=1), name="window length", marker_color="#4c78a8"), 1, 1)
    fig.add_trace(go.Histogram(x=per_q, xbins=dict(size=1), name="P", marker_color="#f58518"), 1, 2)
    fig.update_layout(
        template="plotly_white", showlegend=False, height=360, bargap=0.1, margin=dict(l=10, r=10, t=50, b=40)
    )
    fig.update_xaxes(title_text="messages", row=1, col=1)
    fig.update_xaxes(title_text="windows", row=1, col=2)
    fig.update_yaxes(title_text="count", row=1, col=1)
    return fig


def type_counts(summary: Mapping):
    """Bar chart of questions per type from ``datasets.summarize(dataset)``."""
    import plotly.graph_objects as go

    counts = summary["questions_by_type"]
    fig = go.Figure(
        go.Bar(
            x=list(counts),
            y=list(counts.values()),
            text=list(counts.values()),
            textposition="outside",
            marker_color="#4c78a8",
        )
    )
    fig.update_layout(
        template="plotly_white",
        title=f"Questions by type: {summary.get('name', '')}",
        xaxis_title="type",
        yaxis_title="questions",
        height=380,
        margin=dict(l=10, r=10, t=50, b=40),
    )
    return fig


def split_table_fig(counts_by_type: Mapping[str, Mapping[str, int]], title: str = "Stratified split (seed 42)"):
    """Table of per-type split sizes (``split.Split.counts_by_type``) with a total row."""
    import plotly.graph_objects as go

    cols = ("total", "train", "validation", "test")
    rows = sorted(counts_by_type)
    cells = [rows + ["total"]] + [
        [counts_by_type[t].get(c, 0) for t in rows] + [sum(counts_by_type[t].get(c, 0) for t in rows)] for c in cols
    ]
    fig = go.Figure(
        go.Table(
            header=dict(values=["type", *cols], fill_color="#4c78a8", font=dict(color="white")),
            cells=dict(values=cells, align=["left"] + ["right"] * len(cols)),
        )
    )
    fig.update_layout(title=title, height=80 + 30 * (len(rows) + 2), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def history_stats(
    history_lengths: Mapping[str, int] | Sequence[int],
    evidence_per_question: Sequence[int],
    evidence_relpos: Sequence[float] | None = None,
):
    """Histograms: messages per history, gold messages per question, and (optionally)
    where gold evidence sits in its history (0 = first message, 1 = last)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lengths = list(history_lengths.values()) if isinstance(history_lengths, Mapping) else list(history_lengths)
    panels = ["messages per history", "gold messages per question"]
    if evidence_relpos is not None:
        panels.append("relative position of gold evidence")
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels)
    fig.add_trace(go.Histogram(x=lengths, marker_color="#4c78a8"), 1, 1)
    fig.add_trace(go.Histogram(x=list(evidence_per_question), xbins=dict(size=1), marker_color="#f58518"), 1, 2)
    if evidence_relpos is not None:
        fig.add_trace(
            go.Histogram(x=list(evidence_relpos), xbins=dict(start=0, end=1, size=0.1), marker_color="#54a24b"), 1, 3
        )
    fig.update_layout(
        template="plotly_white", showlegend=False, height=340, bargap=0.1, margin=dict(l=10, r=10, t=50, b=40)
    )
    return fig


def method_comparison(rows: Sequence[Mapping], metric: str = "score", title: str | None = None):
    """Grouped bars: one group per question type, one bar per method (rows from
    ``lazymem.notebooks.eval_overview``: {"method", "type", metric})."""
    import plotly.graph_objects as go

    methods = list(dict.fromkeys(r["method"] for r in rows))
    types = list(dict.fromkeys(r["type"] for r in rows))
    fig = go.Figure()
    for m in methods:
        vals = {r["type"]: r.get(metric) for r in rows if r["method"] == m}
        fig.add_bar(
            name=m,
            x=types,
            y=[vals.get(t) for t in types],
            text=[None if vals.get(t) is None else f"{vals[t]:.2f}" for t in types],
        )
    fig.update_layout(
        barmode="group",
        title=title or f"{metric} by question type and method",
        yaxis_title=metric,
        xaxis_title="question type",
        template="plotly_white",
    )
    return fig


STAGE_COLORS = {"retrieval miss": "#d62728", "editing loss": "#ff7f0e", "QA error": "#1f77b4"}


def attribution_bars(attributions: Mapping[str, Mapping], title: str = "Wrong answers by first failing stage"):
    """Stacked bars of error attribution (``lazymem.eval.attribution.attribute_run`` per system):
    one panel per system, one bar per question type, stacked by stage (retrieval miss, editing
    loss, QA error), with the system's wrong / total count in its panel title."""
    from plotly.subplots import make_subplots

    systems = list(attributions)
    if not systems:
        raise ValueError("attribution_bars: no systems given")
    fig = make_subplots(
        rows=1,
        cols=len(systems),
        shared_yaxes=True,
        subplot_titles=[f"{s} ({a['wrong']}/{a['questions']} wrong)" for s, a in attributions.items()],
    )
    for col, a in enumerate(attributions.values(), start=1):
        types = list(a["by_type"]) or ["(none wrong)"]
        for stage, color in STAGE_COLORS.items():
            y = [a["by_type"].get(t, {}).get(stage, 0) for t in types]
            fig.add_bar(
                x=types,
                y=y,
                name=stage,
                marker_color=color,
                legendgroup=stage,
                showlegend=col == 1,
                text=[v or None for v in y],
                row=1,
                col=col,
            )
    fig.update_layout(
        barmode="stack",
        title=title,
        template="plotly_white",
        yaxis_title="wrong answers",
        width=max(520, 300 * len(systems)),
        height=420,
    )
    return fig
