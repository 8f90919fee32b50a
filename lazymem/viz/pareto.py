"""Accuracy-efficiency Pareto figures (the paper's Figure "Accuracy--efficiency trade-offs").

``pareto_figure(rows)`` draws two panels from ``lazymem report`` rows (or any dicts with
``system``, ``score``, ``memory_tokens`` and ``latency_s.total``): score vs answer-context
memory tokens (log x) and score vs mean end-to-end latency with bars from P50 to P95, and,
when rows carry ``evidence_recall`` (``lazymem.eval.memory_measures``: the share of gold
messages in the memory, which does not depend on the answer model), a third panel of evidence
recall vs memory tokens (log x); the Pareto frontier of each panel is dashed (upper left is
better) and points are labelled
(``label_positions`` places the labels so they overlap as little as possible). The paper's
reported points (``lazymem.eval.paper.REPORTED[dataset]``, passed as ``reported``) are
overlaid on the token panel, drawn hollow and marked "(reported)", or get a third panel when
their scores lie far above the measured ones (after the evidence panel): they come from
another setup and never join the measured frontier.

``bench_latency_rows(rows, {system: bench})`` puts ``lazymem bench latency`` results (the
paper's latency protocol) into those rows, so the latency panel can show them.

>>> pareto_front([("a", 10, 0.5), ("b", 100, 0.9), ("c", 50, 0.4)])
['a', 'b']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lazymem.errors import ConfigError

X_AXES = {  # pareto_figure's token axes: a row's key -> (its axis title, its short name)
    "memory_tokens": ("answer-context memory tokens", "memory tokens"),
    "all_call_tokens": ("all-call tokens a question (every model call, in + out)", "all-call tokens"),
}


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


POSITIONS = ("top center", "bottom center", "middle right", "middle left", "top right", "bottom left")


def label_positions(
    xs: Sequence[float],
    ys: Sequence[float],
    texts: Sequence[str],
    logx: bool = False,
    char_w: float = 0.018,
    line_h: float = 0.07,
) -> list[str]:
    """A plotly ``textposition`` per point so that labels overlap as little as possible.

    Greedy, in order of x: each label takes the first of ``POSITIONS`` whose box (in axis
    fractions: ``char_w`` a character, ``line_h`` a line) overlaps no label placed before and
    stays within the panel's sides, else the one that does least of either.

    >>> label_positions([1, 1.01, 5], [0.5, 0.5, 0.9], ["aaaa", "bbbb", "c"])
    ['top center', 'bottom center', 'top center']
    """
    import math

    if not xs:
        return []
    fx = [math.log10(x) if logx else x for x in xs]
    lo_x, hi_x, lo_y, hi_y = min(fx), max(fx), min(ys), max(ys)
    nx = [(x - lo_x) / (hi_x - lo_x) if hi_x > lo_x else 0.5 for x in fx]
    ny = [(y - lo_y) / (hi_y - lo_y) if hi_y > lo_y else 0.5 for y in ys]
    boxes: list[tuple[float, float, float, float]] = [(x - 0.01, x + 0.01, y - 0.02, y + 0.02) for x, y in zip(nx, ny)]
    out = [""] * len(xs)

    def box(i: int, pos: str) -> tuple[float, float, float, float]:
        w, x, y = char_w * len(texts[i]), nx[i], ny[i]
        cx = x + (w / 2 + 0.015 if "right" in pos else -w / 2 - 0.015 if "left" in pos else 0.0)
        cy = y + (line_h * 0.8 if "top" in pos else -line_h * 0.8 if "bottom" in pos else 0.0)
        return cx - w / 2, cx + w / 2, cy - line_h / 2, cy + line_h / 2

    def overlap(a, b) -> float:
        return max(0.0, min(a[1], b[1]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[2], b[2]))

    def outside(b) -> float:  # past the panel's sides: into the next panel or off the figure
        return (max(0.0, -0.05 - b[0]) + max(0.0, b[1] - 1.05)) * line_h

    for i in sorted(range(len(xs)), key=lambda k: (nx[k], ny[k])):
        costs = [
            sum(overlap(box(i, p), b) for j, b in enumerate(boxes) if j != i) + outside(box(i, p)) for p in POSITIONS
        ]
        best = POSITIONS[costs.index(min(costs))]
        out[i] = best
        boxes.append(box(i, best))
    return out


def point_name(row: Mapping) -> str:
    """A point's label: the system as the report shows it (``label``: Oracle Session on LoCoMo is
    "(ours, not in the paper)"), and how many questions it answered when some errored.

    >>> point_name({"system": "nano", "questions": 36, "errors": 22}), point_name({"system": "rag", "errors": 0})
    ('nano (14/36 answered)', 'rag')
    """
    errors, n, name = row.get("errors") or 0, row.get("questions"), row.get("label") or row["system"]
    return f"{name} ({n - errors}/{n} answered)" if errors and n else name


LATENCY_STAGES = ("retrieval", "processing", "answer", "total")


def bench_latency_rows(rows: Sequence[Mapping], benches: Mapping[str, Mapping]) -> list[dict]:
    """Report rows with the latency of ``lazymem bench latency`` instead of the eval run's.

    ``benches`` maps a row's ``system`` to a bench result (its JSON, read): that row's
    ``latency_s`` becomes the bench's per-stage statistics (the paper's protocol: warm-up runs
    discarded, questions one at a time, no LLM cache) and ``latency_source`` says so; the
    other rows are copied unchanged. The result draws in ``pareto_figure``'s latency panel
    (notebook 08) like any report.

    >>> bench = {"method": "rag", "protocol": {"warmup_runs": 3, "measured_runs": 3},
    ...          "stages": {k: {"mean": 2.0, "median": 1.5, "p90": 3.0, "p95": 3.5, "n": 6}
    ...                     for k in ("retrieval", "processing", "answer", "total")}}
    >>> row = bench_latency_rows([{"system": "rag", "score": 0.5}], {"rag": bench})[0]
    >>> row["latency_s"]["total"]["median"], row["latency_source"]
    (1.5, 'bench latency: 3 warm-up runs discarded, statistics over 3')
    """
    names = {r["system"] for r in rows}
    unknown = sorted(set(benches) - names)
    if unknown:
        raise ConfigError(f"bench_latency_rows: {unknown} name no row; rows are {sorted(names)}")
    out = []
    for r in rows:
        b = benches.get(r["system"])
        if b is None:
            out.append(dict(r))
            continue
        if b.get("method") and r.get("method") and b["method"] != r["method"]:
            raise ConfigError(
                f"bench_latency_rows: row {r['system']!r} is method {r['method']!r}, its bench timed {b['method']!r}"
            )
        p = b.get("protocol") or {}
        out.append(
            {
                **r,
                "latency_s": {k: dict(b["stages"][k]) for k in LATENCY_STAGES},
                "latency_source": f"bench latency: {p.get('warmup_runs')} warm-up runs discarded, "
                f"statistics over {p.get('measured_runs')}",
            }
        )
    return out


def pareto_figure(
    rows: Sequence[Mapping],
    metric: str = "score",
    reported: Mapping[str, Mapping] | None = None,
    title: str = "Accuracy-efficiency trade-offs",
    metric_label: str | None = None,
    tokens: str = "memory_tokens",
):
    """The figure (see the module docstring); rows without a score are skipped (in the evidence
    panel: rows without evidence recall).

    ``tokens`` is the x-axis of the token panels (``X_AXES``): ``memory_tokens`` (what the answer model
    reads, the paper's measure) or ``all_call_tokens`` (every model call's tokens in and out a question:
    the memory-processing model, the answer, Mem0's ingestion spread over its questions;
    ``lazymem.eval.usage``); rows without it are skipped, and the paper's reported points, which
    count memory tokens, are drawn only on the memory-token axis.

    When the reported points' scores lie far above every measured one (the smallest reported
    more than twice the largest measured, e.g. a 135M answerer against the paper's Qwen3-32B),
    they get a panel of their own, so that neither set squeezes the other flat.
    """
    from plotly.subplots import make_subplots

    if tokens not in X_AXES:
        raise ConfigError(f"pareto_figure tokens={tokens!r}: must be one of {sorted(X_AXES)}")
    label, (axis, short) = metric_label or metric, X_AXES[tokens]
    pts_tok, pts_lat, pts_ev = [], [], []
    for r in rows:
        tok = r.get(tokens)
        if tok and r.get("evidence_recall") is not None:
            pts_ev.append((point_name(r), float(tok), float(r["evidence_recall"])))
        score = r.get(metric)
        if score is None:
            continue
        lat = (r.get("latency_s") or {}).get("total") or {}
        if tok:
            pts_tok.append((point_name(r), float(tok), float(score)))
        if lat.get("mean") is not None:
            pts_lat.append((point_name(r), float(lat["mean"]), float(score), lat.get("median"), lat.get("p95")))
    rep = [
        (n, float(v["tokens"]), float(v["lj"]))
        for n, v in (reported or {}).items()
        if v.get("tokens") and v.get("lj") is not None and tokens == "memory_tokens"
    ]
    apart = bool(rep and pts_tok) and min(p[2] for p in rep) > 2 * max(max(p[2] for p in pts_tok), 1e-9)
    titles = [f"{label} vs {axis}", f"{label} vs mean end-to-end latency (bars P50-P95)"]
    if pts_ev:
        titles.append(f"evidence recall (gold messages in memory) vs {short}")
    if apart:
        titles.append("the paper's reported points (its models)")
    col_ev, col_rep = 3, len(titles)
    widths = {2: None, 3: [0.36, 0.36, 0.28] if apart else [1 / 3] * 3, 4: [0.27, 0.27, 0.27, 0.19]}[len(titles)]
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, column_widths=widths, horizontal_spacing=0.07)
    if pts_tok:
        _points(fig, pts_tok, "measured", "#1f77b4", 1, "tokens")
    if rep:
        text = [f"{p[0]} (reported)" for p in rep]
        fig.add_scatter(
            x=[p[1] for p in rep],
            y=[p[2] for p in rep],
            mode="markers+text",
            name="paper (reported)",
            text=text,
            cliponaxis=False,
            textposition=label_positions(
                [p[1] for p in rep], [p[2] for p in rep], text, logx=True, char_w=0.011 if not apart else 0.02
            ),
            textfont=dict(color="#888", size=9),
            marker=dict(size=9, color="rgba(0,0,0,0)", line=dict(color="#888", width=1.5)),
            row=1,
            col=col_rep if apart else 1,
        )
    if pts_lat:
        text = [p[0] for p in pts_lat]
        fig.add_scatter(
            x=[p[1] for p in pts_lat],
            y=[p[2] for p in pts_lat],
            mode="markers+text",
            showlegend=False,
            text=text,
            textposition=label_positions([p[1] for p in pts_lat], [p[2] for p in pts_lat], text),
            customdata=[f"mean {p[1]:.2f} s" for p in pts_lat],
            cliponaxis=False,
            hovertemplate="%{text}: %{y:.3f}, %{customdata}<extra></extra>",
            marker=dict(size=11, color="#d62728"),
            error_x=dict(
                type="data",
                symmetric=False,
                array=[max(0.0, (h or m) - m) if h is not None else 0 for (_, m, _, _, h) in pts_lat],
                arrayminus=[max(0.0, m - (md if md is not None else m)) for (_, m, _, md, _) in pts_lat],
            ),
            row=1,
            col=2,
        )
        fx, fy = _frontier_xy([(p[0], p[1], p[2]) for p in pts_lat])
        fig.add_scatter(
            x=fx, y=fy, mode="lines", line=dict(dash="dash", color="#d62728"), name="frontier (latency)", row=1, col=2
        )
    if pts_ev:
        _points(fig, pts_ev, "evidence recall", "#2ca02c", col_ev, "tokens")
        fig.update_xaxes(type="log", title_text=f"{axis} (log)", row=1, col=col_ev)
        fig.update_yaxes(title_text="evidence recall", range=[-0.05, 1.05], row=1, col=col_ev)
    fig.update_xaxes(type="log", title_text=f"{axis} (log)", row=1, col=1)
    fig.update_xaxes(title_text="mean end-to-end latency (s)", row=1, col=2)
    fig.update_yaxes(title_text=label, row=1, col=1)
    if apart:
        fig.update_xaxes(type="log", title_text="memory tokens (log), as reported", row=1, col=col_rep)
    fig.update_layout(
        title=title,
        template="plotly_white",
        height=560,
        width=600 * len(titles) - (300 if apart else 0),
        margin=dict(l=70, r=90, t=110, b=70),
        legend=dict(orientation="h", y=-0.18),
    )
    return fig


def _points(
    fig,
    pts: Sequence[tuple[str, float, float]],
    name: str,
    color: str,
    col: int,
    unit: str,
    row: int = 1,
    logx: bool = True,
    legend: bool = True,
    digits: int = 0,
) -> None:
    """Labelled points and their dashed Pareto frontier in panel (``row``, ``col``); ``logx``: the panel's x
    axis is logarithmic (the labels are placed for it); ``digits``: of x in the hover text."""
    text = [p[0] for p in pts]
    shown = {} if legend else {"showlegend": False}
    fig.add_scatter(
        x=[p[1] for p in pts],
        y=[p[2] for p in pts],
        mode="markers+text",
        name=name,
        text=text,
        textposition=label_positions([p[1] for p in pts], [p[2] for p in pts], text, logx=logx),
        customdata=[f"{p[1]:,.{digits}f} {unit}" for p in pts],
        cliponaxis=False,
        hovertemplate="%{text}: %{y:.3f}, %{customdata}<extra></extra>",
        marker=dict(size=11, color=color),
        row=row,
        col=col,
        **shown,
    )
    fx, fy = _frontier_xy(pts)
    fig.add_scatter(
        x=fx,
        y=fy,
        mode="lines",
        line=dict(dash="dash", color=color),
        name=f"frontier ({name})",
        row=row,
        col=col,
        **shown,
    )
