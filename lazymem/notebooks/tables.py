"""Notebook-side helpers: write and print a notebook's metrics, flatten evaluation summaries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def record_metrics(metrics: Mapping[str, Any], path: str | Path | None) -> str | None:
    """Write a notebook's metrics as JSON to ``path`` (the ``metrics_path`` parameter); no-op
    when it is empty. Returns the path written, or None."""
    if not path:
        return None
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(metrics, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return str(p)


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return "-" if v is None else str(v)


def metrics_table(metrics: Mapping[str, Any], digits: int = 3) -> str:
    """A small, stable text table of (flattened) metrics, for the notebooks' last cell.

    Floats are rounded so the printed table is identical across runs (nbval compares it).

    >>> print(metrics_table({"all_at_k": {"0": 0.5, "1": 0.75}, "n_questions": 12}))
    all_at_k.0   0.500
    all_at_k.1   0.750
    n_questions  12
    """
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            flat[prefix] = value

    walk("", metrics)
    width = max((len(k) for k in flat), default=0)
    return "\n".join(f"{k:<{width}}  {_fmt(v, digits)}" for k, v in flat.items())


def eval_overview(summaries: Mapping[str, Mapping]) -> tuple[list[dict], list[dict]]:
    """Flatten evaluation summaries (method -> summary.json) for the evaluation notebook.

    Returns ``(by_type_rows, method_rows)``: per (method, type) the score (judge accuracy
    when a judge ran, else LoCoMo F1, else the answer-F1 proxy) and per method the headline
    numbers (score, Gate Fmt., rewritten rate, gold-keep recall, evidence recall, answer recall in
    memory, memory tokens, latency medians); a number a summary does not have (made before it was
    recorded) is None.
    """
    by_type, per_method = [], []
    for method, s in summaries.items():
        if s.get("accuracy"):
            score, groups, kind = s["accuracy"]["overall"], s["accuracy"]["by_type"], "judge accuracy"
        elif s.get("locomo_f1"):
            score, groups, kind = s["locomo_f1"]["overall"], s["locomo_f1"]["by_category"], "LoCoMo F1"
        elif s.get("proxy"):
            score, groups, kind = s["proxy"]["answer_f1"], s["proxy"]["answer_f1_by_type"], "answer F1 (proxy)"
        else:
            score, groups, kind = None, {}, "none"
        for t, g in groups.items():
            by_type.append({"method": method, "type": t, "score": g["mean"], "n": g["n"]})
        c, lat, mm = s.get("construction") or {}, s.get("latency_s") or {}, s.get("memory_measures") or {}
        per_method.append(
            {
                "method": method,
                "score": score,
                "score_kind": kind,
                "questions_ok": s["counts"]["ok"],
                "errors": s["counts"]["error"],
                "gate_fmt": c.get("gate_fmt"),
                "rewritten_rate": c.get("rewritten_rate"),
                "gold_keep_recall": c.get("gold_keep_recall"),
                "evidence_recall": (mm.get("evidence_recall") or {}).get("mean"),
                "answer_recall_in_memory": (mm.get("answer_recall_in_memory") or {}).get("mean"),
                "memory_tokens": (s.get("memory_tokens") or {}).get("mean"),
                **{
                    f"{stage}_median_s": (lat.get(stage) or {}).get("median")
                    for stage in ("retrieval", "processing", "answer")
                },
            }
        )
    return by_type, per_method
