"""Plain per-window records for the figures and the explorer, and the cell states they show.

Inputs are the package's records (Window, Decision, GateVerdict) or plain dicts with the
same field names, so a run's JSONL records can be shown exactly like live objects. One
record per window:

    {"positions": [37, ..., 44], "hits": [40], "gold": [41], "merged_id": 0, "sub_id": 0,
     "verdict": {"ok": True, "reason": "ok"} or None,
     "decisions": [{"pos": 37, "op": "DROP", "content": ""}, ...] or None}

>>> rec = window_records([{"positions": [3, 4], "hits": [4]}])[0]
>>> rec["positions"], rec["hits"], rec["gold"], rec["verdict"], rec["decisions"]
([3, 4], [4], [], None, None)
>>> cell_states(window_records([{"positions": [3, 4], "decisions": [{"pos": 3, "op": "KEEP", "content": "x"}]}])[0])
{3: ('KEEP', 'x'), 4: ('none', '')}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Cell colours: the same in the strip figure and the HTML explorer.
COLORS = {
    "KEEP": "#2ca02c",  # kept (green)
    "DROP": "#bdbdbd",  # dropped (grey)
    "fail": "#d62728",  # the window's output failed the format gate (red)
    "none": "#f2f2f2",  # not processed (no decision for this message)
}
STATE_LABELS = {"KEEP": "KEEP", "DROP": "DROP", "fail": "gate failure", "none": "not processed"}
STATE_CODE = {"none": 0, "KEEP": 1, "DROP": 2, "fail": 3}  # the strip figure's heatmap values
HIT_COLOR = "#1f1f1f"
GOLD_COLOR = "#ffbf00"


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """Field of a record given as a dataclass/object or a dict.

    >>> get_field({"a": 1}, "a"), get_field(object(), "a", 0)
    (1, 0)
    """
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _decision_dict(d: Any) -> dict:
    content = get_field(d, "content", None)
    if content is None:  # the model's raw field name
        content = get_field(d, "compressed_content", "")
    return {"pos": int(get_field(d, "pos")), "op": str(get_field(d, "op")), "content": content or ""}


def _verdict_dict(v: Any) -> dict | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return {"ok": v, "reason": "ok" if v else "failed"}
    return {
        "ok": bool(get_field(v, "ok")),
        "reason": str(get_field(v, "reason", "") or ""),
        "detail": str(get_field(v, "detail", "") or ""),
    }


def window_records(
    windows: Sequence[Any], decisions: Sequence[Any] | None = None, gate: Sequence[Any] | None = None
) -> list[dict]:
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
        positions = [int(p) for p in get_field(w, "positions")]
        verdict = gate[i] if gate is not None else get_field(w, "verdict")
        if per_window is not None:
            ds = per_window[i]
        elif flat is not None:
            ds = [flat[p] for p in positions if p in flat]
        elif get_field(w, "decisions") is not None:
            ds = get_field(w, "decisions")
        else:
            ds = get_field(verdict, "decisions") if verdict is not None and not isinstance(verdict, bool) else None
            if verdict is not None and not get_field(verdict, "ok", verdict) and not ds:
                ds = None  # a failed gate decided nothing
        out.append(
            {
                "positions": positions,
                "hits": [int(p) for p in get_field(w, "hits", ()) or ()],
                "gold": [int(p) for p in get_field(w, "gold", ()) or ()],
                "merged_id": int(get_field(w, "merged_id", 0) or 0),
                "sub_id": int(get_field(w, "sub_id", 0) or 0),
                "verdict": _verdict_dict(verdict),
                "decisions": None if ds is None else [_decision_dict(d) for d in ds],
            }
        )
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


def question_gold(question: Any) -> set[int]:
    """The gold evidence positions of a Question or dict (none for an abstention question).

    >>> question_gold({"evidence": [4, 2]}), question_gold({"evidence": [4], "abstention": True})
    ({2, 4}, set())
    """
    if question is None or get_field(question, "abstention", False):
        return set()
    return {int(p) for p in get_field(question, "evidence", ()) or ()}


def window_label(i: int, rec: Mapping) -> str:
    """Row label of the i-th window record: ``W<i+1> (merged.sub) first-last``.

    >>> window_label(0, {"merged_id": 2, "sub_id": 1, "positions": [7, 8, 9]})
    'W1 (2.1) 7-9'
    """
    return f"W{i + 1} ({rec['merged_id']}.{rec['sub_id']}) {rec['positions'][0]}-{rec['positions'][-1]}"
