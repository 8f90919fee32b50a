"""A static HTML view of one question's windows (original beside compressed text), for executed notebooks."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.viz.figures import window_strip
from lazymem.viz.records import STATE_LABELS, cell_states, get_field, question_gold, window_label, window_records

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


def window_explorer_html(
    history: Any,
    records: Sequence[Any],
    question: Any = None,
    memory: Any = None,
    answer: str | None = None,
    judge: Any = None,
    title: str | None = None,
) -> str:
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
    qgold = question_gold(question)
    parts = [_CSS, '<div class="lzm">']
    if title or question is not None:
        parts.append(f"<h3>{_esc(title or get_field(question, 'id', ''))}</h3>")
    if question is not None:
        ev = ", ".join(str(p) for p in sorted(qgold)) or "none"
        qtype, qtext = get_field(question, "type", ""), get_field(question, "text", "")
        parts.append(
            f"<div><b>[{_esc(qtype)}]</b> {_esc(qtext)}</div>"
            f"<div>gold answer: <i>{_esc(get_field(question, 'answer', ''))}</i> · "
            f"asked {_esc(get_field(question, 'query_time', '') or '?')} · gold evidence: {ev}</div>"
        )
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
        parts.append(f"<h4>{_esc(window_label(i, rec))} · {vtxt} · {kept} kept of {len(states)}</h4>")
        parts.append(
            '<table><colgroup><col style="width:11%"><col style="width:41%"><col style="width:7%">'
            '<col style="width:41%"></colgroup><tr><th>message</th><th>original</th><th>decision</th>'
            "<th>compressed</th></tr>"
        )
        for p, (state, content) in states.items():
            m = history[p]
            badges = "".join(
                [
                    '<span class="badge hit">HIT</span>' if p in rec["hits"] else "",
                    '<span class="badge gold">GOLD</span>' if p in gold else "",
                ]
            )
            parts.append(
                f'<tr class="{state}"><td>{badges}<b>{p}</b> {_esc(m.role)}<br><small>'
                f"{_esc(m.timestamp)}</small></td><td>{_esc(m.text)}</td>"
                f'<td class="op">{_esc(STATE_LABELS[state])}</td><td>{_esc(content)}</td></tr>'
            )
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


def explorer_view(view: Mapping) -> tuple[Any, str]:
    """The strip figure and the explorer HTML for one question's view
    (``lazymem.notebooks.explore_question``: question, history, records, memory, answer, judge)."""
    fig = window_strip(view["history"], view["records"], question=view["question"])
    page = window_explorer_html(
        view["history"],
        view["records"],
        view["question"],
        memory=view.get("memory"),
        answer=view.get("answer"),
        judge=view.get("judge"),
    )
    return fig, page
