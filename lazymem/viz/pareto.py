"""Accuracy-efficiency Pareto figures (the paper's Figure "Accuracy--efficiency trade-offs").

``pareto_figure(rows)`` draws two panels from ``lazymem report`` rows (or any dicts with
``system``, ``score``, ``memory_tokens`` and ``latency_s.total``): score vs answer-context
memory tokens (log x) and score vs mean end-to-end latency with bars from P50 to P95; the
Pareto frontier of each panel is dashed (upper left is better) and points are labelled. The
paper's reported points (``lazymem.eval.paper.REPORTED[dataset]``, passed as ``reported``) may be overlaid on the token panel,
drawn hollow and marked "(reported)": they come from another setup and never join the
measured frontier.

>>> pareto_front([("a", 10, 0.5), ("b", 100, 0.9), ("c", 50, 0.4)])
['a', 'b']
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names on the frontier of (name, cost, score): no other point has cost <= and score >= with one strict."""
    front = []
    for name, cost, score in points:
        dominated = any((c <= cost and s >= score) and (c < cost or s > score) for _, c, s in points)
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda n: next(c for m, c, _ in points if m == n))


def _frontier_xy(points: Sequence[tuple[str, float, float]]) -> tuple[list[float], list[float]]:
    front = set(pareto_front(points))
    pts = sorted((c, s) for n, c, s in points if n in front)
    return [p[0] for p in pts], [p[1] for p in pts]


def pareto_figure(rows: Sequence[Mapping], metric: str = "score", reported: Mapping[str, Mapping] | None = None,
                  title: str = "Accuracy-efficiency trade-offs", metric_label: str | None = None):
    """The two-panel figure (see the module docstring); rows without a score are skipped."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    label = metric_label or metric
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"{label} vs answer-context memory tokens",
                                                        f"{label} vs mean end-to-end latency (bars P50-P95)"))
    pts_tok, pts_lat = [], []
    for r in rows:
        score = r.get(metric)
        if score is None:
            continue
        tok = r.get("memory_tokens")
        lat = (r.get("latency_s") or {}).get("total") or {}
        if tok:
            pts_tok.append((r["system"], float(tok), float(score)))
        if lat.get("mean") is not None:
            pts_lat.append((r["system"], float(lat["mean"]), float(score), lat.get("median"), lat.get("p95")))
    if pts_tok:
        fig.add_scatter(x=[p[1] for p in pts_tok], y=[p[2] for p in pts_tok], mode="markers+text", name="measured",
                        text=[f"{p[0]} ({p[1]:,.0f} tok)" for p in pts_tok], textposition="top center",
                        marker=dict(size=11, color="#1f77b4"), row=1, col=1)
        fx, fy = _frontier_xy(pts_tok)
        fig.add_scatter(x=fx, y=fy, mode="lines", line=dict(dash="dash", color="#1f77b4"), name="frontier (measured)",
                        row=1, col=1)
    if reported:
        rep = [(n, float(v["tokens"]), float(v["lj"])) for n, v in reported.items()
               if v.get("tokens") and v.get("lj") is not None]
        fig.add_scatter(x=[p[1] for p in rep], y=[p[2] for p in rep], mode="markers+text", name="paper (reported)",
                        text=[f"{p[0]} (reported)" for p in rep], textposition="bottom center",
                        textfont=dict(color="#888", size=9),
                        marker=dict(size=9, color="rgba(0,0,0,0)", line=dict(color="#888", width=1.5)),
                        row=1, col=1)
    if pts_lat:
        fig.add_scatter(
            x=[p[1] for p in pts_lat], y=[p[2] for p in pts_lat], mode="markers+text", showlegend=False,
            text=[f"{p[0]} ({p[1]:.2f} s)" for p in pts_lat], textposition="top center",
            marker=dict(size=11, color="#d62728"),
            error_x=dict(type="data", symmetric=False,
                         array=[max(0.0, (h or m) - m) if h is not None else 0 for (_, m, _, _, h) in pts_lat],
                         arrayminus=[max(0.0, m - (md if md is not None else m)) for (_, m, _, md, _) in pts_lat]),
            row=1, col=2)
        fx, fy = _frontier_xy([(p[0], p[1], p[2]) for p in pts_lat])
        fig.add_scatter(x=fx, y=fy, mode="lines", line=dict(dash="dash", color="#d62728"), name="frontier (latency)",
                        row=1, col=2)
    fig.update_xaxes(type="log", title_text="answer-context memory tokens (log)", row=1, col=1)
    fig.update_xaxes(title_text="mean end-to-end latency (s)", row=1, col=2)
    fig.update_yaxes(title_text=label, row=1, col=1)
    fig.update_layout(title=title, template="plotly_white", height=520, width=1200)
    return fig
