"""Error attribution on hand-made records: every stage, the wrong-answer rule, drill-down."""

from __future__ import annotations

from lazymem.eval.attribution import attribute, attribute_run, drill_down, is_wrong
from lazymem.eval.records import RunRecord

TEXTS = {0: "Hi", 1: "I moved to Lisbon in May 2023.", 2: "Nice!", 3: "My dog is Biscuit.", 4: "Cute."}


def rec(
    method="lazymem",
    evidence=(1,),
    windows=((0, 1, 2),),
    kept=(1,),
    memory="[x] user: I moved to Lisbon.",
    label=False,
    answer="Lisbon",
    **kw,
):
    decisions = [
        {"pos": p, "op": "KEEP" if p in kept else "DROP", "content": memory if p in kept else "", "reason": ""}
        for w in windows
        for p in w
    ]
    r = {
        "question_id": "q",
        "status": "ok",
        "method": method,
        "answer": "Porto",
        "question": {"evidence": list(evidence), "answer": answer, "type": "temporal", "text": "Where?"},
        "windows": [{"positions": list(w)} for w in windows],
        "decisions": decisions,
        "memory": memory,
        "judge": {"label": label},
        "pool": None,
    }
    r.update(kw)
    return r


def test_each_stage_in_pipeline_order():
    assert attribute(rec(label=True))["stage"] is None  # right answers are not errors
    a = attribute(rec(evidence=(1, 3)))
    assert a["stage"] == "retrieval miss" and a["gold_candidates"] == 1
    a = attribute(rec(kept=()), TEXTS)
    assert a["stage"] == "editing loss" and a["gold_kept"] == 0
    # kept, but compressed without the answer's key content
    a = attribute(rec(memory="[x] user: I moved in May 2023.", answer="Lisbon, May 2023"), TEXTS)
    assert a["stage"] == "editing loss" and a["key_tokens_missing"] == ["lisbon"]
    a = attribute(rec(memory="[x] user: I moved to Lisbon in May 2023.", answer="Lisbon, May 2023"), TEXTS)
    assert a["stage"] == "QA error" and a["key_tokens_missing"] == []
    assert attribute(rec(kept=()))["stage"] == "editing loss"  # without texts: dropped gold still counts
    assert attribute(rec(evidence=()))["stage"] == "no gold evidence"
    assert attribute(rec(status="error"))["stage"] == "pipeline error"


def test_methods_without_editing_and_nanomemory():
    rag = rec(method="rag", windows=(), pool={"positions": [1, 2]}, memory="")
    assert attribute(rag, TEXTS)["stage"] == "QA error"  # RAG does not edit: no editing loss
    assert attribute(dict(rag, pool={"positions": [2]}))["stage"] == "retrieval miss"
    nano = rec(method="nanomemory", windows=(), baseline={"gold_shown": 0}, decisions=[])
    assert attribute(nano)["stage"] == "retrieval miss"
    nano = rec(method="nanomemory", windows=(), baseline={"gold_shown": 1}, decisions=[], memory="moved in May")
    assert attribute(nano, TEXTS)["stage"] == "editing loss"


def test_wrong_answer_rule_and_run_counts():
    def r(**kw):
        return RunRecord.from_json({"question_id": "q", "method": "rag", "status": "ok", **kw})

    assert is_wrong(r(judge={"label": True})) is False and is_wrong(r(locomo_f1=0.2)) is True
    assert is_wrong(r(answer_f1=0.8)) is False and is_wrong(r()) is None
    records = [rec(), rec(kept=()), rec(evidence=(1, 3)), rec(label=True), dict(rec(), question_id="q2")]
    run = attribute_run(records, texts_of=lambda r: TEXTS)
    assert run["wrong"] == 4 and run["counts"] == {"QA error": 2, "editing loss": 1, "retrieval miss": 1}
    assert run["by_type"] == {"temporal": {"QA error": 2, "editing loss": 1, "retrieval miss": 1}}
    d = drill_down(rec(kept=()), TEXTS)
    assert d["gold"] == [{"pos": 1, "text": TEXTS[1], "candidate": True, "op": "DROP", "kept_as": None}]
    assert d["attribution"]["stage"] == "editing loss"


def test_mem0_misses_and_losses():
    # Mem0: gold outside the chunks its returned memories came from is a retrieval miss (gold_shown)
    m = rec(method="mem0", windows=(), decisions=[], baseline={"gold_shown": 0})
    assert attribute(m, TEXTS)["stage"] == "retrieval miss"
    # returned, but its extracted fact lost the answer's key content: an editing loss, not a QA error
    m = rec(method="mem0", windows=(), decisions=[], baseline={"gold_shown": 1}, memory="[May 2023] moved abroad")
    assert attribute(m, TEXTS)["stage"] == "editing loss"
    m = rec(method="mem0", windows=(), decisions=[], baseline={"gold_shown": 1}, memory="[May 2023] moved to Lisbon")
    assert attribute(m, TEXTS)["stage"] == "QA error"


def test_attribution_bars_stack_each_stage_by_type_per_system():
    from lazymem.viz import attribution_bars

    run = attribute_run([rec(), rec(kept=()), rec(evidence=(1, 3)), rec(label=True)], texts_of=lambda r: TEXTS)
    right = attribute_run([rec(label=True)])
    fig = attribution_bars({"lazymem": run, "all right": right})
    assert fig.layout.barmode == "stack" and len(fig.layout.annotations) == 2
    assert fig.layout.annotations[0].text == "lazymem (3/4 wrong)"
    bars = {(b.name, b.xaxis): list(b.y) for b in fig.data}
    assert bars[("retrieval miss", "x")] == [1] and bars[("editing loss", "x")] == [1]
    assert bars[("QA error", "x")] == [1]
    assert bars[("QA error", "x2")] == [0] and [b.showlegend for b in fig.data].count(True) == 3
