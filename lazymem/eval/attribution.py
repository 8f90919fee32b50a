"""Error attribution: each wrong answer assigned to its first failing stage, from run records.

The paper's analysis (Section "Further Analysis") has annotators assign each error to a
retrieval miss, an editing loss or a QA reasoning error. ``attribute`` does it automatically
from a record, in pipeline order:

1. ``retrieval miss``: some gold evidence never entered the candidate set (the windows the
   memory processor saw; the pool for RAG; the shown sessions for NanoMemory);
2. ``editing loss``: every gold message was a candidate, but construction dropped one, or
   kept it with the answer's key content lost (the gold answer's tokens that the gold
   messages contain are not all in the memory: LoCoMo's normalisation and stemming);
3. ``QA error``: the memory held the evidence and its key content; the answer is still wrong.

Questions without gold evidence (abstention, LoCoMo category 5) are ``no gold evidence``.
A record counts as wrong when its judge label is False (unparseable replies are already
False), or, without a judge, when its F1 (LoCoMo official, else the proxy) is below
``f1_threshold`` (0.5). Methods that do not edit (RAG, oracles) never get an editing loss;
for NanoMemory and Mem0 (they rewrite) only the key-content check applies, and a gold message
outside what they showed (sessions; the chunks behind Mem0's returned memories) is a retrieval miss.

>>> from lazymem.eval.records import RunRecord
>>> rec = RunRecord.from_json({"question_id": "q1", "status": "ok", "method": "rag",
...     "question": {"evidence": [3], "answer": "Lisbon", "type": "t"}, "pool": {"positions": [1, 2]},
...     "judge": {"label": False}, "windows": [], "decisions": [], "memory": ""})
>>> attribute(rec)["stage"]
'retrieval miss'
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from lazymem.eval.f1 import answer_tokens
from lazymem.eval.records import RunRecord
from lazymem.pipeline.methods import method_class, method_names

STAGES = ("retrieval miss", "editing loss", "QA error")


def _method(rec: RunRecord):
    """The record's Method class (None for a method this code does not know, e.g. a removed one)."""
    name = rec.method
    return method_class(name) if name in method_names() else None


def is_wrong(rec: RunRecord | Mapping, f1_threshold: float = 0.5) -> bool | None:
    """True/False for an ok record with a judge label or an F1; None when it cannot tell."""
    rec = RunRecord.of(rec)
    if rec.label is not None:
        return not rec.label
    f1 = rec.locomo_f1 if rec.locomo_f1 is not None else rec.answer_f1
    return None if f1 is None else f1 < f1_threshold


def candidates(rec: RunRecord | Mapping) -> set[int] | None:
    """Positions the memory could be built from (None when the method saw the whole history).

    A raw record (a dict with ``windows`` / ``pool``) is read as it is: callers with partial records use it."""
    if isinstance(rec, Mapping):
        if rec.get("windows"):
            return {p for w in rec["windows"] for p in w["positions"]}
        return set(rec["pool"]["positions"]) if rec.get("pool") else None
    if rec.windows:
        return rec.window_positions
    if rec.pool is not None:
        return set(rec.pool.positions)
    return None


def attribute(
    rec: RunRecord | Mapping, history_texts: Mapping[int, str] | None = None, f1_threshold: float = 0.5
) -> dict:
    """The stage of one record's error (``stage`` None when the answer is right or unknown).

    ``history_texts`` (position -> text) lets the editing check compare the answer tokens the
    gold messages hold with those in the memory; without it only dropped gold counts. A raw record
    (a dict of records.jsonl) is read with ``RunRecord.from_json``.
    """
    rec = RunRecord.of(rec)
    q = rec.question
    gold = set(q.evidence or ()) if q is not None else set()
    out: dict[str, Any] = {
        "question_id": rec.question_id,
        "type": None if q is None else q.type,
        "stage": None,
        "wrong": None,
        "n_gold": len(gold),
        "gold_candidates": None,
        "gold_kept": None,
        "key_tokens_missing": [],
    }
    if not rec.ok:
        out["stage"] = "pipeline error"
        return out
    out["wrong"] = wrong = is_wrong(rec, f1_threshold)
    if not wrong:
        return out
    if not gold:
        out["stage"] = "no gold evidence"
        return out
    cand = candidates(rec)
    method = _method(rec)
    if method is not None and method.writes_text and rec.has_baseline:
        # a method with its own search says how much gold it was shown (NanoMemory: gold in the
        # sessions it showed its pruning call; Mem0: gold in the chunks its memories came from)
        shown = method.gold_shown(rec)
        out["gold_candidates"] = shown
        if shown is not None and shown < len(gold):
            out["stage"] = "retrieval miss"
            return out
    elif cand is not None:
        out["gold_candidates"] = len(gold & cand)
        if not gold <= cand:
            out["stage"] = "retrieval miss"
            return out
    if method is not None and method.processing_stage:  # the memory is an edit of what was retrieved
        kept = rec.kept_positions
        if not method.writes_text:  # text writers rewrite; only the key-token check applies
            out["gold_kept"] = len(gold & kept)
            if not gold <= kept:
                out["stage"] = "editing loss"
                return out
        if history_texts is not None:
            key = set(answer_tokens(str(q.answer if "answer" in q.keys() else "")))
            in_gold = key & set(answer_tokens(" ".join(history_texts.get(p, "") for p in gold)))
            missing = sorted(in_gold - set(answer_tokens(rec.memory or "")))
            out["key_tokens_missing"] = missing
            if missing:
                out["stage"] = "editing loss"
                return out
    out["stage"] = "QA error"
    return out


def attribute_run(records: Iterable[RunRecord | Mapping], texts_of: Any = None, f1_threshold: float = 0.5) -> dict:
    """Counts by stage, overall and by question type, and the per-question attributions.

    ``texts_of(rec)`` returns the record's history texts by position (e.g. from the dataset);
    None skips the key-content check. Raw records (dicts) are read with ``RunRecord.from_json``;
    ``texts_of`` gets each record as given.
    """
    items = [attribute(RunRecord.of(r), texts_of(r) if texts_of else None, f1_threshold) for r in records]
    wrong = [a for a in items if a["stage"] is not None]
    by_type: dict[str, Counter] = defaultdict(Counter)
    for a in wrong:
        by_type[a["type"]][a["stage"]] += 1
    return {
        "questions": len(items),
        "wrong": len(wrong),
        "counts": dict(Counter(a["stage"] for a in wrong)),
        "by_type": {t: dict(c) for t, c in sorted(by_type.items())},
        "items": items,
    }


def drill_down(rec: RunRecord | Mapping, history_texts: Mapping[int, str] | None = None) -> dict:
    """One question's evidence trail: gold messages, where they went, memory and answer."""
    rec = RunRecord.of(rec)
    q = rec.question
    cand = candidates(rec)
    ops = {d.pos: d for d in rec.decisions or ()}
    gold = []
    for p in (q.evidence if q is not None else None) or ():
        d = ops.get(p)
        gold.append(
            {
                "pos": p,
                "text": (history_texts or {}).get(p),
                "candidate": None if cand is None else p in cand,
                "op": d.op if d else None,
                "kept_as": d.content if d and d.op == "KEEP" else None,
            }
        )
    return {
        "question_id": rec.question_id,
        "question": None if q is None else q.text,
        "gold_answer": None if q is None else q.answer,
        "answer": rec.answer,
        "attribution": attribute(rec, history_texts),
        "gold": gold,
        "memory": rec.memory,
    }
