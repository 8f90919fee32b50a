"""Oracle Session on LoCoMo is the project's extension (the paper's Table 1 cell is empty): every
report, table and Pareto label of such a run says "(ours, not in the paper)"; nothing else is marked."""

from __future__ import annotations

import pytest

from lazymem.eval.paper import REPORTED, not_in_paper, system_label
from lazymem.eval.records import RunRecord
from lazymem.eval.report import report_markdown, system_row
from lazymem.eval.table import table_markdown, table_row
from lazymem.pipeline.methods import method_names

LOCOMO = "../shared/data/locomo/locomo10.json#paper"
STAGES = ("retrieval", "processing", "answer", "total")


def _summary(method: str, dataset: str = "locomo10-paper") -> dict:
    lat = {k: {"mean": 1.0, "median": 1.0, "p90": 1.0, "p95": 1.0, "n": 1} for k in STAGES}
    return {
        "method": method,
        "dataset": dataset,
        "counts": {"recorded": 1, "ok": 1, "error": 0},
        "memory_tokens": {"mean": 100.0},
        "latency_s": lat,
    }


def _run(name: str, method: str, dataset: str = LOCOMO) -> dict:
    latest = {
        "q1": RunRecord.from_json(
            {
                "question_id": "q1",
                "method": method,
                "status": "ok",
                "question": {"type": "single-hop"},
                "locomo_f1": 0.5,
            }
        )
    }
    return {"name": name, "summary": _summary(method), "latest": latest, "dataset": dataset}


def test_only_cells_the_paper_leaves_empty_are_marked():
    assert "Oracle Session" not in REPORTED["locomo"] and "Oracle Session" in REPORTED["longmemeval"]
    assert not_in_paper("oracle_session", LOCOMO) and not_in_paper("oracle_session", "locomo10-paper")
    assert not not_in_paper("oracle_session", "longmemeval_s_cleaned")
    assert not not_in_paper("oracle_session", "synthetic:messages=60,seed=0")  # no paper number to compare with
    assert system_label("oracle_session", "oracle_session", LOCOMO) == "oracle_session (ours, not in the paper)"


@pytest.mark.parametrize("method", [*(m for m in method_names() if m != "oracle_session"), None])
def test_no_other_method_is_marked(method):
    assert not not_in_paper(method, LOCOMO)


def test_report_tables_and_pareto_show_the_mark():
    from lazymem.viz.pareto import pareto_figure, point_name

    rows = [
        system_row(_run("oracle_session", "oracle_session"), "locomo_f1"),
        system_row(_run("rag_top50", "rag"), "locomo_f1"),
        system_row(_run("oracle_session_lme", "oracle_session", "longmemeval_s_cleaned"), "locomo_f1"),
    ]
    assert [r["label"] for r in rows] == ["oracle_session (ours, not in the paper)", "rag_top50", "oracle_session_lme"]
    md = report_markdown({"metric": "locomo_f1", "reference": "rag_top50", "rows": rows, "pairs": []})
    assert md.count("| oracle_session (ours, not in the paper) |") == 2  # systems and latency tables
    assert "| rag_top50 |" in md and "oracle_session_lme (ours" not in md
    assert point_name(rows[0]) == "oracle_session (ours, not in the paper)"
    fig = pareto_figure(rows, "score")
    shown = {t for trace in fig.data if trace.text is not None for t in trace.text}
    assert "oracle_session (ours, not in the paper)" in shown and "rag_top50" in shown
    table = {
        "locomo_paper": {
            "oracle_session": table_row(_summary("oracle_session")),
            "rag_top50": table_row(_summary("rag")),
        }
    }
    md = table_markdown(table)
    assert "| oracle_session (ours, not in the paper) |" in md and "| rag_top50 |" in md


def test_a_row_that_answered_fewer_questions_than_it_was_asked_says_so():
    part = {**_summary("mem0"), "counts": {"selected": 36, "recorded": 36, "ok": 0, "error": 36, "missing": 0}}
    some = {**_summary("oracle_session"), "counts": {"selected": 36, "recorded": 36, "ok": 35, "error": 1}}
    assert table_row(part)["note"] == "0 of 36 answered"
    assert table_row(some)["note"] == "ours, not in the paper; 35 of 36 answered"
    assert table_row(_summary("rag"))["note"] is None  # every question answered: no note
    md = table_markdown({"locomo_paper": {"mem0": table_row(part)}})
    assert "| mem0 (0 of 36 answered) | 0 |" in md
