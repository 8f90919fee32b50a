"""Memory measures that do not depend on the answerer (lazymem.eval.memory_measures): evidence recall by
identity or by the text rule, answer recall in memory, and their place in records, summaries, eval-table,
report (paired intervals) and the Pareto figure; the rewritten rate beside Gate Fmt.

Hand cases are worked out in the comments; the end-to-end tests run the real `lazymem eval`, `eval-table`
and `report` commands (real BM25 retrieval, the real extractive processor, LoCoMo's real stemmer) with the
fake answer backend on a tiny synthetic dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fakerun import FAKE, PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.answers import answer_recall
from lazymem.errors import LoadError
from lazymem.eval.f1 import answer_tokens, contains_gold
from lazymem.eval.memory_measures import (
    content_stems,
    gold_in_text,
    measure_record,
    memory_positions,
    rewritten_rate,
    summarize_measures,
)
from lazymem.eval.records import ConstructionRecord, RunRecord
from lazymem.eval.scoring import check_records, summarize
from lazymem.prompts import text_memory
from lazymem.records import History, Message, Question

REPO = Path(__file__).resolve().parents[1]


# --- hand-built memories, one per method kind --------------------------------------------------------

TEXTS = [
    ("s0", "Hi there!"),
    ("s0", "Hello, how can I help?"),
    ("s0", "I adopted a corgi named Biscuit last week."),
    ("s0", "Congratulations on Biscuit!"),
    ("s1", "I work as a nurse in Porto."),
    ("s1", "That sounds demanding."),
    ("s1", "Biscuit loves the beach."),
    ("s1", "Dogs often do."),
    ("s2", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("s2", "Thanks, Caroline!"),
]
HISTORY = History(
    "h",
    tuple(
        Message(i, f"{s}#{i}", s, i % 4, "user" if i % 2 == 0 else "assistant", t, "2023/05/08")
        for i, (s, t) in enumerate(TEXTS)
    ),
)


def question(evidence=(2, 6), answer="Biscuit, the beach", **kw) -> Question:
    return Question(
        "q",
        "multi-session",
        "What is my dog called and what does he love?",
        answer,
        "h",
        "2023/06/01",
        evidence=evidence,
        **kw,
    )


def record(method: str, memory: str | None = None, keep=(), pool=()) -> dict:
    decisions = [{"pos": p, "op": "KEEP", "content": HISTORY[p].text} for p in keep] + [
        {"pos": 3, "op": "DROP", "content": ""}
    ]
    if memory is None:
        memory = text_memory([HISTORY[p] for p in sorted(set(keep) | set(pool))])
    return RunRecord.from_json(
        {
            "question_id": "q",
            "method": method,
            "status": "ok",
            "memory": memory,
            "decisions": decisions,
            "pool": {"positions": list(pool)} if pool else None,
        }
    )


@pytest.mark.parametrize(
    "method,kw,positions,recall",
    [
        ("lazymem", {"keep": (2,)}, {2}, 0.5),  # gold 2 kept, gold 6 not: 1 of 2
        ("extractive", {"keep": (2, 6, 7)}, {2, 6, 7}, 1.0),
        ("rag", {"pool": (2, 4, 5)}, {2, 4, 5}, 0.5),  # the pool's messages, gold 2 among them
        ("oracle_turn", {}, {2, 6}, 1.0),
        ("oracle_session", {}, set(range(8)), 1.0),  # gold in s0 and s1: all 8 of their messages
        ("full", {}, set(range(10)), 1.0),
    ],
)
def test_identity_methods_count_gold_positions_in_memory(method, kw, positions, recall):
    rec = record(method, **kw)
    assert memory_positions(rec, question(), HISTORY) == positions
    m = measure_record(rec, question(), HISTORY)
    assert (m.evidence_match, m.n_gold, m.evidence_recall, m.n_gold_in_memory) == (
        "identity",
        2,
        recall,
        round(recall * 2),
    )


def test_a_kept_message_counts_by_identity_even_when_rewritten():
    rec = record("lazymem", memory="[2023/05/08] user: has a pet", keep=(2,))
    rec = rec.with_(decisions=(rec.decisions[0].with_(content="has a pet"), *rec.decisions[1:]))  # no word left
    assert measure_record(rec, question(), HISTORY).evidence_recall == 0.5


def test_empty_memory_is_zero_and_a_question_without_gold_is_none():
    for rec in (record("lazymem", memory=""), record("mem0", memory="")):
        m = measure_record(rec, question(), HISTORY)
        assert (m.evidence_recall, m.n_gold_in_memory, m.answer_recall_in_memory) == (0.0, 0, 0.0)
    assert measure_record(record("mem0", memory=""), question(), HISTORY).evidence_match == "text"
    m = measure_record(record("rag", pool=(2,)), question(evidence=(), abstention=True), HISTORY).to_dict()
    assert m == {
        "evidence_recall": None,
        "n_gold": 0,
        "n_gold_in_memory": None,
        "answer_recall_in_memory": None,
        "evidence_match": "identity",
    }


# --- the text rule (mem0 facts, nanomemory's pruned reply) ------------------------------------------

GROUP = "I went to a LGBTQ support group yesterday and it was so powerful."  # stems: went lgbtq support group
#                                                                               yesterday power (6)


def test_text_rule_hit_near_miss_and_a_documented_paraphrase_miss():
    assert content_stems(GROUP) == {"went", "lgbtq", "support", "group", "yesterday", "power"}
    # hit: lgbtq, support, group = 3 of 6 (>= half, >= 2)
    assert gold_in_text("[8 May 2023] Caroline attended an LGBTQ support group on 7 May 2023", [GROUP]) == 1
    # near miss: went, support = 2 of 6 (under half)
    assert gold_in_text("Caroline went to a support meeting", [GROUP]) == 0
    # a true paraphrase the rule misses (known false negative): no content stem in common
    assert gold_in_text("Caroline found the queer peer circle she joined very moving", [GROUP]) == 0
    # the stems of one line count, not of the whole memory: spread over two lines it is a miss
    assert gold_in_text("Caroline: LGBTQ\nsupport group", [GROUP]) == 0
    # a known false positive: a short message whose two stems another line shares
    assert gold_in_text("Caroline thanks Melanie for the painting", ["Thanks, Caroline!"]) == 1
    # at least two shared stems: one name in common is not enough
    assert gold_in_text("Caroline likes pottery", ["Thanks, Caroline!"]) == 0
    # a message without content stems is never found
    assert gold_in_text("hi there, how are you", ["How are you?"]) == 0


def test_writing_methods_are_matched_by_text():
    facts = "[8 May 2023] Went to an LGBTQ support group\n[8 May 2023] Adopted a corgi called Biscuit last week"
    q = question(evidence=(2, 6, 8), answer="Biscuit")
    for method in ("mem0", "nanomemory", "some_future_method"):
        m = measure_record(
            {"question_id": "q", "method": method, "status": "ok", "memory": facts, "baseline": {"gold_shown": 3}},
            q,
            HISTORY,
        )
        # 2: adopted corgi biscuit last week (5 of 6 stems: "named" missing); 8: lgbtq support group (+went: 4 of 6);
        # 6 "Biscuit loves the beach": biscuit only, 1 of 3 stems
        assert (m.evidence_match, m.n_gold_in_memory, m.evidence_recall) == ("text", 2, pytest.approx(2 / 3))
        assert m.answer_recall_in_memory == 1.0


# --- answer recall in memory -------------------------------------------------------------------------


def test_answer_recall_follows_locomo_normalisation():
    assert answer_recall("I moved to Lisbon.", ["Lisbon", "Porto"]) == 0.5  # a list: its items' tokens
    assert answer_recall("He has 3 dogs.", 3) == 1.0 and answer_recall("He has 13 dogs.", 3) == 0.0  # whole tokens
    assert answer_recall("How about 'the salty pedal'?", "The Salty Pedal!") == 1.0  # articles, punctuation, case
    assert answer_recall("counseling, psychology", "Psychology and counseling") == 1.0  # "and" dropped
    assert answer_recall("she counsels people", "Counseling") == 1.0  # Porter stems: counsel
    assert answer_recall("It costs $400,000.", "400,000") == 1.0  # commas removed, as official
    assert answer_recall("anything", "") is None and answer_recall("anything", "The, a!") is None
    assert answer_recall("anything", None) is None
    assert answer_recall("likely no", "Likely no; though she likes reading", category=3) == 1.0  # cut at ";"
    assert answer_recall("x", "Likely no; though", category=3) == 0.0
    assert answer_recall("not mentioned", "a thing", category=5) is None  # adversarial: nothing to find
    assert answer_recall("Lisbon", "Lisbon", abstention=True) is None
    # distinct tokens: "new" counted once in the gold
    assert answer_recall("new shoes", "New York, new shoes") == 2 / 3


# --- summaries, old records, record checks ----------------------------------------------------------


def ok_record(qid: str, measures: dict | None, **kw) -> dict:
    r = {
        "question_id": qid,
        "status": "ok",
        "method": "rag",
        "question": {"type": "multi-session"},
        "answer_f1": 0.5,
        "timings": {"total": 1.0},
        "memory_tokens": 100,
        "tokenizer": "qwen3",
        **kw,
    }
    if measures is not None:
        r["memory_measures"] = {
            "evidence_recall": None,
            "n_gold": 0,
            "n_gold_in_memory": None,
            "answer_recall_in_memory": None,
            "evidence_match": "identity",
            **measures,
        }
    return r


def test_summary_means_skip_none_and_old_records_leave_them_missing():
    recs = [
        ok_record("q1", {"evidence_recall": 1.0, "answer_recall_in_memory": 0.5}),
        ok_record("q2", {"evidence_recall": 0.0}),
        ok_record("q3", {"evidence_match": "text"}),
    ]
    s = summarize(recs)["memory_measures"]
    assert s["evidence_recall"] == {"mean": 0.5, "n": 2} and s["answer_recall_in_memory"] == {"mean": 0.5, "n": 1}
    assert s["evidence_match"] == {"identity": 2, "text": 1} and s["unmeasured"] == 0
    mixed = summarize(recs + [ok_record("q4", None)])["memory_measures"]  # a resumed run with an old record
    assert mixed["evidence_recall"] == {"mean": None, "n": 2} and mixed["unmeasured"] == 1
    old = summarize([ok_record("q4", None)])
    assert old["memory_measures"]["evidence_recall"]["mean"] is None  # missing, never 0
    assert "memory:" in __import__("lazymem.eval.scoring", fromlist=["x"]).summary_text(
        dict(summarize(recs), dataset="d")
    )


def test_rewritten_rate_from_construction_and_missing_for_old_records():
    cons = {
        "n_windows": 2,
        "n_valid": 2,
        "n_fmt": 2,
        "n_messages": 8,
        "n_kept": 3,
        "n_gold": 1,
        "n_gold_kept": 1,
        "failures": {},
    }
    new = [
        ok_record("q1", None, construction=dict(cons, n_rewritten=1, n_keep_decisions=4)),
        ok_record("q2", None, construction=dict(cons, n_rewritten=2, n_keep_decisions=4)),
    ]
    c = summarize(new)["construction"]
    assert (c["n_rewritten"], c["rewritten_rate"]) == (3, 3 / 8)
    c = summarize(new + [ok_record("q3", None, construction=cons)])["construction"]
    assert (c["n_rewritten"], c["rewritten_rate"]) == (None, None) and c["gate_fmt"] == 1.0
    # without n_keep_decisions: of n_kept
    assert rewritten_rate([ConstructionRecord.from_json(dict(cons, n_rewritten=3))]) == (3, 1.0)


@pytest.mark.parametrize(
    "measures,field",
    [
        ({"evidence_recall": "0.5"}, "memory_measures.evidence_recall"),
        ({"answer_recall_in_memory": 1.5}, "memory_measures.answer_recall_in_memory"),
        ({"n_gold": -1}, "memory_measures.n_gold"),
        ({"evidence_match": "fuzzy"}, "memory_measures.evidence_match"),
    ],
)
def test_check_records_names_a_bad_measure(measures, field):
    with pytest.raises(LoadError, match=rf"record 2 \(question_id 'q2'\), field {field}"):
        check_records([ok_record("q1", {}), ok_record("q2", measures)], "run/records.jsonl")
    bad = ok_record("q1", None)
    bad["memory_measures"] = [0.5]
    with pytest.raises(LoadError, match="field memory_measures: a list, expected an object"):
        check_records([bad], "run/records.jsonl")
    cons = {k: 1 for k in ("n_windows", "n_valid", "n_fmt", "n_messages", "n_kept", "n_gold", "n_gold_kept")}
    with pytest.raises(LoadError, match="field construction.n_rewritten: '1' is not an integer"):
        check_records([ok_record("q1", None, construction=dict(cons, n_rewritten="1"))], "r")


# --- the report's paired interval on two hand-made run folders ---------------------------------------


def write_run(folder: Path, recs: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return folder


def test_report_paired_bootstrap_interval_for_evidence_recall(tmp_path):
    from lazymem.eval.report import build_report, report_markdown
    from lazymem.notebooks.compare import report_figure

    cons = {
        "n_windows": 1,
        "n_valid": 1,
        "n_fmt": 1,
        "n_messages": 4,
        "n_kept": 2,
        "n_gold": 1,
        "n_gold_kept": 1,
        "failures": {},
        "n_rewritten": 1,
        "n_keep_decisions": 2,
    }
    # ours: 1, .5, 0, 1 (+ q5 without gold, q6 only here); reference: .5, .5, 0, 0 -> deltas .5, 0, 0, 1
    ours = [
        ok_record(f"q{i}", {"evidence_recall": v, "answer_recall_in_memory": a}, construction=cons)
        for i, v, a in ((1, 1.0, 1.0), (2, 0.5, 1.0), (3, 0.0, 0.0), (4, 1.0, 1.0), (5, None, None), (6, 1.0, 1.0))
    ]
    ref = [
        ok_record(f"q{i}", {"evidence_recall": v, "answer_recall_in_memory": 1.0})
        for i, v in ((1, 0.5), (2, 0.5), (3, 0.0), (4, 0.0), (5, None))
    ]
    old = [ok_record(f"q{i}", None) for i in range(1, 5)]  # a run made before the measures existed
    runs = [write_run(tmp_path / n, r) for n, r in (("ref", ref), ("ours", ours), ("old", old))]
    rep = build_report(runs, n_resamples=2000)
    rows = {r["system"]: r for r in rep["rows"]}
    assert rows["ours"]["evidence_recall"] == pytest.approx(0.7) and rows["ref"]["evidence_recall"] == 0.25
    assert rows["ours"]["rewritten_rate"] == 0.5 and rows["ref"]["rewritten_rate"] is None
    assert rows["old"]["evidence_recall"] is None and rows["old"]["answer_recall_in_memory"] is None
    pair = next(p for p in rep["pairs"] if p["system"] == "ours")["evidence_recall"]
    assert pair["n"] == 4 and pair["unpaired"] == 1 and pair["delta"] == pytest.approx(0.375)
    assert 0.0 <= pair["low"] < 0.375 < pair["high"] <= 1.0  # every paired difference is in [0, 1]
    ans = next(p for p in rep["pairs"] if p["system"] == "ours")["answer_recall_in_memory"]
    assert ans["n"] == 4 and ans["delta"] == pytest.approx(-0.25)
    old_pair = next(p for p in rep["pairs"] if p["system"] == "old")["evidence_recall"]
    assert old_pair["n"] == 0 and old_pair["delta"] is None
    md = report_markdown(rep)
    assert (
        "| gold-keep recall | evidence recall | answer in memory | memory tokens | Gate Fmt. | rewritten "
        "| strict gate |"
    ) in md
    assert "| ref | 5 | 0 | - | 0.500 | 0.500 | - | 0.250 | 1.000 | 100.0 | - | - | - |" in md
    assert "| ours | 6 | 0 | - | 0.500 | 0.500 | 1.000 | 0.700 | 0.800 | 100.0 | 1.000 | 0.500 | 1.000 |" in md
    assert f"| 0.375 [{pair['low']:.3f}, {pair['high']:.3f}] (4) |" in md
    assert "| old | 4 | 0.000 [0.000, 0.000] | 0.0 [0.0, 0.0] | - [-, -] (0) | - [-, -] (0) |" in md
    fig = report_figure(rep)
    titles = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("evidence recall") for t in titles) and len(titles) == 3
    ev = next(t for t in fig.data if t.name == "evidence recall")
    assert sorted(ev.y) == [0.25, pytest.approx(0.7)] and "frontier (evidence recall)" in {t.name for t in fig.data}
    only_old = build_report([runs[2]], n_resamples=10)
    assert len(report_figure(only_old).layout.annotations) == 2  # no measures: the figure as before


# --- the real commands: lazymem eval (rag, extractive), report, eval-table ---------------------------


def test_eval_records_and_summarises_measures_and_eval_table_and_report_show_them(tmp_path, capsys):
    from lazymem.cli import main as cli_main

    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 4, "judge": "none", "pipeline": PIPELINE}))
    for method in ("rag", "extractive"):
        assert cli_main(["eval", str(base), "--out", str(tmp_path / method), "--method", method, "--no-progress"]) == 0
    capsys.readouterr()
    for method in ("rag", "extractive"):
        recs = [json.loads(x) for x in (tmp_path / method / "records.jsonl").read_text().splitlines()]
        assert len(recs) == 4
        for r in recs:
            m, gold = r["memory_measures"], set(r["question"]["evidence"])
            assert m["evidence_match"] == "identity" and m["n_gold"] == len(gold) > 0
            if method == "rag":  # the memory is the pool: its gold is the pool's gold
                assert m["n_gold_in_memory"] == r["gold_in_pool"]
            else:  # the KEEPs: gold outside the windows cannot be kept, so it is the construction's count
                kept = {d["pos"] for d in r["decisions"] if d["op"] == "KEEP"}
                assert m["n_gold_in_memory"] == len(gold & kept) == r["construction"]["n_gold_kept"]
            assert m["evidence_recall"] == m["n_gold_in_memory"] / m["n_gold"]
            gold_answer = set(answer_tokens(r["question"]["answer"]))
            assert m["answer_recall_in_memory"] == len(gold_answer & set(answer_tokens(r["memory"]))) / len(gold_answer)
            if contains_gold(r["memory"], r["question"]["answer"]):
                assert m["answer_recall_in_memory"] == 1.0
        summary = json.loads((tmp_path / method / "summary.json").read_text())["memory_measures"]
        assert summary["evidence_recall"]["n"] == 4 and summary["evidence_match"] == {"identity": 4}
        assert summary["evidence_recall"]["mean"] == pytest.approx(
            sum(r["memory_measures"]["evidence_recall"] for r in recs) / 4
        )
    assert (
        cli_main(
            [
                "report",
                str(tmp_path / "rag"),
                str(tmp_path / "extractive"),
                "--out",
                str(tmp_path / "rep"),
                "--resamples",
                "200",
                "--no-png",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "evidence recall delta [95% CI] (n)" in out
    assert "| evidence recall | answer in memory | memory tokens |" in out
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["pairs"][0]["evidence_recall"]["n"] == 4
    pareto = (tmp_path / "rep" / "pareto.html").read_text()
    assert "evidence recall (gold messages in memory) vs memory tokens" in pareto

    table = tmp_path / "table.yaml"
    table.write_text(
        yaml.safe_dump(
            {
                "base": str(base),
                "sets": {"syn": {"limit": 3}},
                "rows": {"rag": {"pipeline.method": "rag"}, "extractive": {"pipeline.method": "extractive"}},
                "reference": "rag",
                "output_dir": str(tmp_path / "t"),
            }
        )
    )
    assert cli_main(["eval-table", "--config", str(table), "--no-progress"]) == 0
    t = json.loads((tmp_path / "t" / "table.json").read_text())["syn"]
    assert t["extractive"]["evidence_recall"] is not None and t["rag"]["answer_recall_in_memory"] is not None
    assert t["rag"]["rewritten_rate"] is None  # no construction, and no n_rewritten recorded yet
    md = (tmp_path / "t" / "table.md").read_text()
    assert "| evidence_recall | answer_recall_in_memory |" in md


def test_old_summaries_show_the_new_columns_as_missing():
    from lazymem.eval.table import table_markdown, table_row
    from lazymem.notebooks.tables import eval_overview

    # the main table's RAG Top20 summary as committed before the field existed (the cell is rerun since)
    old = json.loads((REPO / "tests/fixtures/summary_before_memory_measures.json").read_text())
    assert "memory_measures" not in old
    row = table_row(old)
    assert row["evidence_recall"] is None and row["answer_recall_in_memory"] is None and row["rewritten_rate"] is None
    new = dict(row, evidence_recall=0.5)
    md = table_markdown({"s": {"old": row, "new": new}})
    assert "| evidence_recall |" in md and "answer_recall_in_memory" not in md  # an all-empty column is left out
    old_line = next(x for x in md.splitlines() if x.startswith("| old |"))
    head = next(x for x in md.splitlines() if x.startswith("| row |")).split("|")
    assert old_line.split("|")[head.index(" evidence_recall ")].strip() == "-"
    (overview,) = eval_overview({"rag": old})[1]
    assert overview["evidence_recall"] is None and overview["rewritten_rate"] is None
    assert summarize_measures([])["evidence_recall"] == {"mean": None, "n": 0}
