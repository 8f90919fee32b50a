"""Figures and static HTML views for the notebooks: pure functions of records and dicts.

Every figure function returns a ``plotly.graph_objects.Figure`` and imports plotly inside
itself, so ``import lazymem.viz`` stays cheap. Inputs are the package's records (History,
Window, Decision, GateVerdict) or plain dicts with the same field names, so a run's JSONL
records can be shown exactly like live objects. ``save_figure``/``save_figures`` write
``figures/<name>.html`` (plotly.js embedded: renders offline) and ``figures/<name>.png``
(kaleido, which needs a Chromium).

The window explorer takes one record per window:

    {"positions": [37, ..., 44], "hits": [40], "gold": [41], "merged_id": 0, "sub_id": 0,
     "verdict": {"ok": True, "reason": "ok"} or None,
     "decisions": [{"pos": 37, "op": "DROP", "content": ""}, ...] or None}

``window_records`` builds them from Window objects and gate verdicts.

>>> rec = window_records([{"positions": [3, 4], "hits": [4]}])[0]
>>> rec["positions"], rec["hits"], rec["gold"], rec["verdict"], rec["decisions"]
([3, 4], [4], [], None, None)
>>> cell_states(window_records([{"positions": [3, 4], "decisions": [{"pos": 3, "op": "KEEP", "content": "x"}]}])[0])
{3: ('KEEP', 'x'), 4: ('none', '')}
"""
from __future__ import annotations

import html
import re
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Cell colours: the same in the strip figure and the HTML explorer.
COLORS = {
    "KEEP": "#2ca02c",  # kept (green)
    "DROP": "#bdbdbd",  # dropped (grey)
    "fail": "#d62728",  # the window's output failed the format gate (red)
    "none": "#f2f2f2",  # not processed (no decision for this message)
}
STATE_LABELS = {"KEEP": "KEEP", "DROP": "DROP", "fail": "gate failure", "none": "not processed"}
_STATE_CODE = {"none": 0, "KEEP": 1, "DROP": 2, "fail": 3}
HIT_COLOR = "#1f1f1f"
GOLD_COLOR = "#ffbf00"

# Paper Table 2 (window radius ablation): All@50 at w = 0..3.
PAPER_ALL_AT_50: dict[str, dict[int, float]] = {
    "LongMemEval (paper)": {0: 0.950, 1: 0.970, 2: 0.980, 3: 0.980},
    "LoCoMo (paper)": {0: 0.781, 1: 0.847, 2: 0.889, 3: 0.892},
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --- records --------------------------------------------------------------------------------

def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Field of a record given as a dataclass/object or a dict."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _decision_dict(d: Any) -> dict:
    content = _get(d, "content", None)
    if content is None:  # the model's raw field name
        content = _get(d, "compressed_content", "")
    return {"pos": int(_get(d, "pos")), "op": str(_get(d, "op")), "content": content or ""}


def _verdict_dict(v: Any) -> dict | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return {"ok": v, "reason": "ok" if v else "failed"}
    return {"ok": bool(_get(v, "ok")), "reason": str(_get(v, "reason", "") or ""),
            "detail": str(_get(v, "detail", "") or "")}


def window_records(windows: Sequence[Any], decisions: Sequence[Any] | None = None,
                   gate: Sequence[Any] | None = None) -> list[dict]:
    """Plain per-window records (see the module docstring) from windows and their results.

    Args:
        windows: Window objects or dicts with ``positions`` (and optionally ``hits``,
            ``gold``, ``merged_id``, ``sub_id``, ``verdict``, ``decisions``).
        decisions: per window, a list of Decision objects/dicts (or None); or one flat
            list of decisions (e.g. merged ones) applied to every window holding the position.
        gate: per window, a GateVerdict, a dict with ``ok``/``reason``, a bool, or None.
            A verdict's own ``decisions`` are used when ``decisions`` is not given.

    >>> window_records([{"positions": [1, 2]}], gate=[False])[0]["verdict"]
    {'ok': False, 'reason': 'failed'}
    """
    windows = list(windows)
    if gate is not None and len(gate) != len(windows):
        raise ValueError(f"gate has {len(gate)} verdicts for {len(windows)} windows")
    per_window: list[Any] | None = None
    flat: dict[int, dict] | None = None
    if decisions is not None:
        decisions = list(decisions)
        if decisions and all(d is None or isinstance(d, (list, tuple)) for d in decisions):
            if len(decisions) != len(windows):
                raise ValueError(f"decisions has {len(decisions)} entries for {len(windows)} windows")
            per_window = decisions
        else:
            flat = {dd["pos"]: dd for dd in map(_decision_dict, decisions)}
    out = []
    for i, w in enumerate(windows):
        positions = [int(p) for p in _get(w, "positions")]
        verdict = gate[i] if gate is not None else _get(w, "verdict")
        if per_window is not None:
            ds = per_window[i]
        elif flat is not None:
            ds = [flat[p] for p in positions if p in flat]
        elif _get(w, "decisions") is not None:
            ds = _get(w, "decisions")
        else:
            ds = _get(verdict, "decisions") if verdict is not None and not isinstance(verdict, bool) else None
            if verdict is not None and not _get(verdict, "ok", verdict) and not ds:
                ds = None  # a failed gate decided nothing
        out.append({
            "positions": positions,
            "hits": [int(p) for p in _get(w, "hits", ()) or ()],
            "gold": [int(p) for p in _get(w, "gold", ()) or ()],
            "merged_id": int(_get(w, "merged_id", 0) or 0),
            "sub_id": int(_get(w, "sub_id", 0) or 0),
            "verdict": _verdict_dict(verdict),
            "decisions": None if ds is None else [_decision_dict(d) for d in ds],
        })
    return out


def cell_states(record: Mapping) -> dict[int, tuple[str, str]]:
    """State and compressed content of each position of a window record.

    State is "fail" for every message of a window whose output failed the gate, else the
    decision's op ("KEEP"/"DROP"), else "none" (not processed, e.g. an empty message).

    >>> cell_states({"positions": [5], "verdict": {"ok": False, "reason": "wrong_count"}, "decisions": None})
    {5: ('fail', '')}
    """
    verdict = record.get("verdict")
    if verdict is not None and not verdict.get("ok", True):
        return {p: ("fail", "") for p in record["positions"]}
    by_pos = {d["pos"]: d for d in record.get("decisions") or ()}
    out = {}
    for p in record["positions"]:
        d = by_pos.get(p)
        out[p] = (d["op"], d["content"]) if d is not None and d["op"] in ("KEEP", "DROP") else ("none", "")
    return out


def _wrap(text: str, width: int = 70, limit: int = 700) -> str:
    text = text if len(text) <= limit else text[:limit] + " ..."
    return "<br>".join(textwrap.wrap(html.escape(text), width)) or "(empty)"


def _question_gold(question: Any) -> set[int]:
    if question is None or _get(question, "abstention", False):
        return set()
    return {int(p) for p in _get(question, "evidence", ()) or ()}


def _window_label(i: int, rec: Mapping) -> str:
    return f"W{i + 1} ({rec['merged_id']}.{rec['sub_id']}) {rec['positions'][0]}-{rec['positions'][-1]}"


# --- figures --------------------------------------------------------------------------------

def window_strip(history: Any, windows: Sequence[Any], decisions: Sequence[Any] | None = None,
                 gate: Sequence[Any] | None = None, question: Any = None):
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
    qgold = _question_gold(question)
    width = max((len(r["positions"]) for r in records), default=1)
    labels = [_window_label(i, r) for i, r in enumerate(records)]
    z = [[None] * width for _ in records]
    text = [[""] * width for _ in records]
    hover = [[""] * width for _ in records]
    hits: tuple[list, list] = ([], [])
    golds: tuple[list, list] = ([], [])
    for i, rec in enumerate(records):
        gold = set(rec["gold"]) | qgold
        for j, (p, (state, content)) in enumerate(cell_states(rec).items()):
            m = history[p]
            z[i][j] = _STATE_CODE[state]
            text[i][j] = str(p)
            marks = " ".join(x for x, on in (("HIT", p in rec["hits"]), ("GOLD", p in gold)) if on)
            tip = (f"<b>pos {p}</b> {html.escape(str(m.id))} · {html.escape(str(m.role))} · "
                   f"{html.escape(str(m.timestamp))} {marks}<br>{_wrap(m.text)}"
                   f"<br><b>{STATE_LABELS[state]}</b>")
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
    for state, code in sorted(_STATE_CODE.items(), key=lambda kv: kv[1]):
        scale += [[code / 4, COLORS[state]], [(code + 1) / 4, COLORS[state]]]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(width)), y=list(range(len(records))), text=text, texttemplate="%{text}",
        textfont=dict(size=10), customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorscale=scale, zmin=-0.5, zmax=3.5, showscale=False, xgap=3, ygap=3, hoverongaps=False))
    fig.add_trace(go.Scatter(x=hits[0], y=hits[1], mode="markers", name="retrieved (hit)", hoverinfo="skip",
                             marker=dict(symbol="circle-open", size=21, color=HIT_COLOR, line=dict(width=1.5))))
    fig.add_trace(go.Scatter(x=golds[0], y=golds[1], mode="markers", name="gold evidence", hoverinfo="skip",
                             marker=dict(symbol="star", size=11, color=GOLD_COLOR, line=dict(width=1, color="#555"))))
    for state in ("KEEP", "DROP", "fail", "none"):  # legend entries for the heatmap colours
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=STATE_LABELS[state],
                                 marker=dict(symbol="square", size=12, color=COLORS[state],
                                             line=dict(width=1, color="#888"))))
    title = f"{len(records)} windows"
    if question is not None:
        qtext = str(_get(question, "text", ""))
        qtext = qtext[:90] + ("..." if len(qtext) > 90 else "")
        title = (f"{html.escape(str(_get(question, 'id', '')))} [{html.escape(str(_get(question, 'type', '')))}] "
                 f"{html.escape(qtext)} ({len(records)} windows)")
    fig.update_layout(
        title=dict(text=title, font=dict(size=14), x=0.01, y=0.985, yref="container", yanchor="top"),
        template="plotly_white", plot_bgcolor="white",
        height=150 + 34 * max(len(records), 1), margin=dict(l=10, r=10, t=95, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, font=dict(size=11)),
        xaxis=dict(title="message in window", tickvals=list(range(width)), range=[-0.5, width - 0.5],
                   showgrid=False, zeroline=False),
        yaxis=dict(tickvals=list(range(len(records))), ticktext=labels, autorange="reversed",
                   showgrid=False, zeroline=False))
    return fig


def _series(coverage: Mapping) -> dict[str, dict[int, float]]:
    if "all_at_k" in coverage:  # a whole metrics.coverage_table result
        coverage = coverage["all_at_k"]
    if coverage and all(isinstance(v, Mapping) for v in coverage.values()):
        nested = {str(name): v.get("all_at_k", v) for name, v in coverage.items()}
    else:
        nested = {"this run": coverage}
    return {name: {int(w): v for w, v in sorted(s.items(), key=lambda kv: int(kv[0])) if v is not None}
            for name, s in nested.items()}


def all_at_k_vs_w(coverage_by_w: Mapping, paper: bool | str | Mapping | None = None, k: int = 50):
    """All@k against the window radius w, optionally beside the paper's Table 2.

    Args:
        coverage_by_w: ``{w: value}`` (keys int or str), a coverage_table result, or
            ``{series name: {w: value}}`` for several lines.
        paper: None/False/"" for no reference; True or "both" for both datasets; "locomo" or
            "longmemeval" for one; or a ``{name: {w: value}}`` mapping.
        k: the pool size, for the axis title.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, s in _series(coverage_by_w).items():
        fig.add_trace(go.Scatter(x=list(s), y=list(s.values()), mode="lines+markers+text", name=name,
                                 text=[f"{v:.3f}" for v in s.values()], textposition="top center"))
    refs: Mapping = {}
    if paper is True or paper == "both":
        refs = PAPER_ALL_AT_50
    elif isinstance(paper, str):
        refs = {n: v for n, v in PAPER_ALL_AT_50.items() if n.lower().startswith(paper.lower())}
        if not refs:
            raise ValueError(f"paper={paper!r}: choose 'locomo', 'longmemeval', True or a mapping")
    elif isinstance(paper, Mapping):
        refs = paper
    for name, s in refs.items():
        fig.add_trace(go.Scatter(x=list(s), y=list(s.values()), mode="lines+markers", name=name,
                                 line=dict(dash="dash"), marker=dict(symbol="x")))
    fig.update_layout(template="plotly_white", title=f"Evidence coverage All@{k} vs window radius w",
                      xaxis=dict(title="window radius w", dtick=1), yaxis=dict(title=f"All@{k}", range=[0, 1.05]),
                      height=420, margin=dict(l=10, r=10, t=50, b=40))
    return fig


def _length(w: Any) -> int:
    if isinstance(w, int):
        return w
    return len(_get(w, "positions"))


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
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"messages per window (mean {mean_len:.2f})",
                                                        f"windows per question P (mean {mean_p:.2f})"))
    fig.add_trace(go.Histogram(x=lengths, xbins=dict(size=1), name="window length", marker_color="#4c78a8"), 1, 1)
    fig.add_trace(go.Histogram(x=per_q, xbins=dict(size=1), name="P", marker_color="#f58518"), 1, 2)
    fig.update_layout(template="plotly_white", showlegend=False, height=360, bargap=0.1,
                      margin=dict(l=10, r=10, t=50, b=40))
    fig.update_xaxes(title_text="messages", row=1, col=1)
    fig.update_xaxes(title_text="windows", row=1, col=2)
    fig.update_yaxes(title_text="count", row=1, col=1)
    return fig


def type_counts(summary: Mapping):
    """Bar chart of questions per type from ``datasets.summarize(dataset)``."""
    import plotly.graph_objects as go

    counts = summary["questions_by_type"]
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), text=list(counts.values()),
                           textposition="outside", marker_color="#4c78a8"))
    fig.update_layout(template="plotly_white", title=f"Questions by type: {summary.get('name', '')}",
                      xaxis_title="type", yaxis_title="questions", height=380, margin=dict(l=10, r=10, t=50, b=40))
    return fig


def split_table_fig(counts_by_type: Mapping[str, Mapping[str, int]], title: str = "Stratified split (seed 42)"):
    """Table of per-type split sizes (``split.Split.counts_by_type``) with a total row."""
    import plotly.graph_objects as go

    cols = ("total", "train", "validation", "test")
    rows = sorted(counts_by_type)
    cells = [rows + ["total"]] + [[counts_by_type[t].get(c, 0) for t in rows]
                                 + [sum(counts_by_type[t].get(c, 0) for t in rows)] for c in cols]
    fig = go.Figure(go.Table(header=dict(values=["type", *cols], fill_color="#4c78a8", font=dict(color="white")),
                             cells=dict(values=cells, align=["left"] + ["right"] * len(cols))))
    fig.update_layout(title=title, height=80 + 30 * (len(rows) + 2), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def history_stats(history_lengths: Mapping[str, int] | Sequence[int], evidence_per_question: Sequence[int],
                  evidence_relpos: Sequence[float] | None = None):
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
        fig.add_trace(go.Histogram(x=list(evidence_relpos), xbins=dict(start=0, end=1, size=0.1),
                                   marker_color="#54a24b"), 1, 3)
    fig.update_layout(template="plotly_white", showlegend=False, height=340, bargap=0.1,
                      margin=dict(l=10, r=10, t=50, b=40))
    return fig


# --- static HTML explorer -------------------------------------------------------------------

_CSS = """
<style>
.lzm {font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; font-size: 13px; color: #222;}
.lzm h3 {margin: 6px 0;} .lzm h4 {margin: 14px 0 4px 0;}
.lzm table {border-collapse: collapse; width: 100%; table-layout: fixed; margin-bottom: 6px;}
.lzm td, .lzm th {border: 1px solid #ddd !important; padding: 3px 6px !important; vertical-align: top;
                  text-align: left !important; white-space: pre-wrap; word-wrap: break-word;}
.lzm th {background: #f7f7f7;}
.lzm .KEEP {background: #dff3df;} .lzm .DROP {background: #f0f0f0; color: #777;}
.lzm .fail {background: #fbe0e0;} .lzm .none {background: #fff;}
.lzm .op {font-weight: bold;} .lzm .KEEP .op {color: #2ca02c;} .lzm .fail .op {color: #d62728;}
.lzm .badge {display: inline-block; border-radius: 3px; padding: 0 4px; margin-right: 3px; font-size: 11px;}
.lzm .hit {border: 1.5px solid #1f1f1f;} .lzm .gold {background: #ffbf00;}
.lzm .okv {color: #2ca02c;} .lzm .failv {color: #d62728; font-weight: bold;}
.lzm pre {background: #f7f7f7; padding: 6px; white-space: pre-wrap;}
</style>
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def window_explorer_html(history: Any, records: Sequence[Any], question: Any = None, memory: Any = None,
                         answer: str | None = None, judge: Any = None, title: str | None = None) -> str:
    """A self-contained HTML view of one question's windows, for executed notebooks.

    One table per window: position, speaker and time, the original text beside the
    compressed text, the decision (KEEP green, DROP grey, gate failure red), HIT/GOLD
    badges; then the final memory, the answer and the judge label when given.

    Args:
        history: the History (indexable by position).
        records: window records (``window_records`` output, or Windows/dicts it accepts).
        question: the Question (or dict with id/type/text/answer/evidence), optional.
        memory: the assembled memory text, or a list of lines.
        answer: the answering model's answer.
        judge: the judge's label (e.g. True/False, "yes", 0.73).
        title: heading; defaults to the question id.

    >>> from lazymem.records import History, Message
    >>> h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", f"m{i}", "t") for i in range(3)))
    >>> out = window_explorer_html(h, [{"positions": [0, 1], "hits": [1], "decisions": [
    ...     {"pos": 0, "op": "DROP", "content": ""}, {"pos": 1, "op": "KEEP", "content": "M1"}]}])
    >>> "M1" in out and 'class="KEEP"' in out and "HIT" in out
    True
    """
    records = window_records(records)  # idempotent on records, converts Windows and loose dicts
    qgold = _question_gold(question)
    parts = [_CSS, '<div class="lzm">']
    if title or question is not None:
        parts.append(f"<h3>{_esc(title or _get(question, 'id', ''))}</h3>")
    if question is not None:
        ev = ", ".join(str(p) for p in sorted(qgold)) or "none"
        parts.append(f"<div><b>[{_esc(_get(question, 'type', ''))}]</b> {_esc(_get(question, 'text', ''))}</div>"
                     f"<div>gold answer: <i>{_esc(_get(question, 'answer', ''))}</i> · "
                     f"asked {_esc(_get(question, 'query_time', '') or '?')} · gold evidence: {ev}</div>")
    n_ok = sum(1 for r in records if r["verdict"] is None or r["verdict"]["ok"])
    parts.append(f"<div>{len(records)} windows, {n_ok} passed the gate (or were not gated)</div>")
    for i, rec in enumerate(records):
        states = cell_states(rec)
        gold = set(rec["gold"]) | qgold
        v = rec["verdict"]
        if v is None:
            vtxt = "not gated"
        elif v["ok"]:
            vtxt = '<span class="okv">gate ok</span>'
        else:
            vtxt = f'<span class="failv">gate failed: {_esc(v["reason"])}</span> {_esc(v.get("detail", ""))}'
        kept = sum(1 for s, _ in states.values() if s == "KEEP")
        parts.append(f"<h4>{_esc(_window_label(i, rec))} · {vtxt} · {kept} kept of {len(states)}</h4>")
        parts.append('<table><colgroup><col style="width:11%"><col style="width:41%"><col style="width:7%">'
                     '<col style="width:41%"></colgroup><tr><th>message</th><th>original</th><th>decision</th>'
                     "<th>compressed</th></tr>")
        for p, (state, content) in states.items():
            m = history[p]
            badges = ("".join([f'<span class="badge hit">HIT</span>' if p in rec["hits"] else "",
                               f'<span class="badge gold">GOLD</span>' if p in gold else ""]))
            parts.append(f'<tr class="{state}"><td>{badges}<b>{p}</b> {_esc(m.role)}<br><small>'
                         f"{_esc(m.timestamp)}</small></td><td>{_esc(m.text)}</td>"
                         f'<td class="op">{_esc(STATE_LABELS[state])}</td><td>{_esc(content)}</td></tr>')
        parts.append("</table>")
    if memory is not None:
        text = memory if isinstance(memory, str) else "\n".join(map(str, memory))
        parts.append(f"<h4>Final memory ({len(text.splitlines())} lines)</h4><pre>{_esc(text) or '(empty)'}</pre>")
    if answer is not None:
        parts.append(f"<h4>Answer</h4><pre>{_esc(answer)}</pre>")
    if judge is not None:
        parts.append(f"<h4>Judge</h4><div><b>{_esc(judge)}</b></div>")
    parts.append("</div>")
    return "\n".join(parts)


# --- saving ---------------------------------------------------------------------------------

PNG_FIX = ("install a Chromium for kaleido: `apt-get install -y chromium` (Debian/Ubuntu) "
           "or `python -c 'import kaleido; kaleido.get_chrome_sync()'` with internet access")


def save_figures(figures: Mapping[str, Any], out_dir: str | Path = "figures", png: bool = True,
                 include_plotlyjs: bool | str = "directory") -> dict[str, dict[str, str | None]]:
    """Write ``<out_dir>/<name>.html`` for each figure and, in one kaleido batch, ``<name>.png``.

    HTML loads plotly.js from ``<out_dir>/plotly.min.js`` (``include_plotlyjs="directory"``,
    written once, 4.8 MB, instead of embedding it in every file), so it renders offline
    ('cdn' renders blank without internet; True embeds it per file) and uses the name as div id, so the same figure gives the same
    bytes. When kaleido or its Chromium is missing the PNGs are skipped with a warning that
    names the fix; the HTML is written regardless.

    Returns:
        ``{name: {"html": path, "png": path or None}}``.
    """
    import plotly.io as pio

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in figures:
        if not _NAME.match(name):
            raise ValueError(f"figure name {name!r}: use letters, digits, '_', '-', '.' (it becomes a file name)")
    written: dict[str, dict[str, str | None]] = {}
    for name, fig in figures.items():
        path = out / f"{name}.html"
        fig.write_html(path, include_plotlyjs=include_plotlyjs, full_html=True, div_id=name)
        written[name] = {"html": str(path), "png": None}
    if png and figures:
        paths = [out / f"{name}.png" for name in figures]
        try:
            import kaleido  # noqa: F401  (fail here with ImportError rather than deep inside plotly)

            pio.write_images(list(figures.values()), paths)
        except Exception as e:  # missing kaleido/Chromium surfaces as several exception types
            warnings.warn(f"PNG not written for {', '.join(figures)} ({type(e).__name__}: {str(e)[:200]}); "
                          f"HTML only. Fix: {PNG_FIX}", RuntimeWarning, stacklevel=2)
        else:
            for name, p in zip(figures, paths):
                written[name]["png"] = str(p)
    return written


def save_figure(fig: Any, name: str, out_dir: str | Path = "figures", png: bool = True,
                include_plotlyjs: bool | str = "directory") -> dict[str, str | None]:
    """Write ``<out_dir>/<name>.html`` and ``<out_dir>/<name>.png``; returns ``{"html", "png"}``
    paths (png None when it could not be written). See ``save_figures``."""
    return save_figures({name: fig}, out_dir, png=png, include_plotlyjs=include_plotlyjs)[name]


def explorer_view(view: Mapping) -> tuple[Any, str]:
    """The strip figure and the explorer HTML for one question's view
    (``lazymem.notebooks.explore_question``: question, history, records, memory, answer, judge)."""
    fig = window_strip(view["history"], view["records"], question=view["question"])
    page = window_explorer_html(view["history"], view["records"], view["question"], memory=view.get("memory"),
                                answer=view.get("answer"), judge=view.get("judge"))
    return fig, page


def method_comparison(rows: Sequence[Mapping], metric: str = "score", title: str | None = None):
    """Grouped bars: one group per question type, one bar per method (rows from
    ``lazymem.notebooks.eval_overview``: {"method", "type", metric})."""
    import plotly.graph_objects as go

    methods = list(dict.fromkeys(r["method"] for r in rows))
    types = list(dict.fromkeys(r["type"] for r in rows))
    fig = go.Figure()
    for m in methods:
        vals = {r["type"]: r.get(metric) for r in rows if r["method"] == m}
        fig.add_bar(name=m, x=types, y=[vals.get(t) for t in types],
                    text=[None if vals.get(t) is None else f"{vals[t]:.2f}" for t in types])
    fig.update_layout(barmode="group", title=title or f"{metric} by question type and method",
                      yaxis_title=metric, xaxis_title="question type", template="plotly_white")
    return fig
