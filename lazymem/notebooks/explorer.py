"""The window explorer's data: one question's windows, decisions and memory as plain records.

The explorer shows either a training-free extractive processor run live, or a run folder's
``windows.jsonl`` (written by the evaluation runner); ``lazymem.viz`` draws what this returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError

EXTRACTIVE_METHODS = {"extractive": "verbatim", "extractive-key-span": "key_span"}
WINDOW_RECORDS_FILE = "windows.jsonl"  # a run's per-window records, one JSON object per line


def explorer_methods(runs_root: str | Path = "runs") -> list[str]:
    """Methods the explorer can show: the training-free extractive processors, then every
    run folder under ``runs_root`` holding a ``windows.jsonl`` (as ``run:<folder>``)."""
    runs = sorted(p.parent for p in Path(runs_root).glob(f"**/{WINDOW_RECORDS_FILE}"))
    return [*EXTRACTIVE_METHODS, *(f"run:{p}" for p in runs)]


def load_window_records(run_dir: str | Path, question_id: str) -> list[dict]:
    """One question's records from a run's ``windows.jsonl``.

    Each line: ``{"question_id", "positions", "hits", "gold", "verdict": {"ok", "reason"},
    "decisions": [{"pos", "op", "content"}]}``, optionally with the question's
    ``memory``, ``answer`` and ``judge``; lines are kept in file order (window order).
    """
    out = []
    with open(Path(run_dir) / WINDOW_RECORDS_FILE, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                if rec.get("question_id") == question_id:
                    out.append(rec)
    return out


def explore_question(
    dataset: Any,
    question_id: str = "",
    method: str = "extractive",
    retriever: Any = None,
    window: Any = None,
    threshold: float = 0.25,
) -> dict:
    """Everything the window explorer shows for one question, as plain records.

    ``method`` "extractive"/"extractive-key-span" retrieves the pool, builds the windows and
    runs the training-free ExtractiveProcessor; "run:<folder>" reads a run's windows.jsonl.
    An empty ``question_id`` picks the first question with gold evidence.

    Returns:
        ``{"question", "history", "records", "memory", "answer", "judge", "stats"}``.
    """
    from lazymem.construct import ExtractiveConfig
    from lazymem.pipeline import LazyMemPipeline, PipelineConfig
    from lazymem.retrieve import RetrievalConfig, WindowConfig
    from lazymem.viz import window_records

    if question_id:
        question = dataset.question(question_id)
    else:
        question = next((q for q in dataset.questions if q.evidence), dataset.questions[0])
    history = dataset.history(question)
    view = {"question": question, "history": history, "memory": None, "answer": None, "judge": None, "stats": None}
    if method.startswith("run:"):
        recs = load_window_records(method[4:], question.id)
        extra = next((r for r in recs if "memory" in r or "answer" in r), {})
        view.update(
            records=window_records(recs),
            memory=extra.get("memory"),
            answer=extra.get("answer"),
            judge=extra.get("judge"),
        )
        return view
    if method not in EXTRACTIVE_METHODS:
        raise ConfigError(f"explorer method {method!r}: use one of {list(EXTRACTIVE_METHODS)} or 'run:<folder>'")
    retrieval = retriever.config if retriever is not None else RetrievalConfig()
    config = PipelineConfig(
        method="extractive",
        retrieval=retrieval,
        window=window or WindowConfig(),
        extractive=ExtractiveConfig(threshold=threshold, mode=EXTRACTIVE_METHODS[method]),
    )
    r = LazyMemPipeline(config, retriever=retriever).process(history, question)
    view.update(
        records=window_records([w.window for w in r.windows], gate=[w.verdict for w in r.windows]),
        memory=r.memory,
        stats=r.stats,
    )
    return view


def question_options(dataset: Any, width: int = 70) -> list[tuple[str, str]]:
    """``(label, question id)`` pairs for a dropdown: id, type abbreviation and text."""
    out = []
    for q in dataset.questions:
        label = f"{q.id} [{q.abbrev}] {q.text}"
        out.append((label if len(label) <= width else label[: width - 3] + "...", q.id))
    return out


def explorer_metrics(view: Mapping[str, Any]) -> dict:
    """Counts of one explorer view, from its records (so runs and live processors compare).

    >>> explorer_metrics({"question": None, "records": [{"positions": [1, 2], "gold": [2], "verdict": {"ok": True},
    ...     "decisions": [{"pos": 1, "op": "DROP", "content": ""}, {"pos": 2, "op": "KEEP", "content": "x"}]}]})
    {'question': None, 'windows': 1, 'gate_ok': 1, 'messages': 2, 'kept': 1, 'gold_in_windows': 1, 'gold_kept': 1}
    """
    records = view["records"]
    kept = {
        d["pos"]
        for r in records
        if (r.get("verdict") or {}).get("ok", True)
        for d in r.get("decisions") or ()
        if d["op"] == "KEEP"
    }
    gold = {p for r in records for p in r.get("gold") or ()}
    q = view.get("question")
    return {
        "question": getattr(q, "id", q),
        "windows": len(records),
        "gate_ok": sum(1 for r in records if (r.get("verdict") or {}).get("ok", False)),
        "messages": len({p for r in records for p in r["positions"]}),
        "kept": len(kept),
        "gold_in_windows": len(gold),
        "gold_kept": len(gold & kept),
    }
