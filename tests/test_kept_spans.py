"""scripts/kept_spans.py: the gold answer's tokens in each kept gold message, whole and as kept, on hand-built
records; and on a run directory over the real synthetic generator's data (its manifest names the data set)."""

from __future__ import annotations

import json

import pytest
from script_loader import load_script


def test_a_span_that_keeps_the_greeting_loses_the_answer_and_is_counted_as_the_opening():
    ks = load_script("kept_spans")
    texts = {
        0: "Hey Sam! I adopted a corgi named Biscuit last week.",
        1: "Nice weather today.",
        2: "My sister lives in Lisbon now.",
        3: "I love Lisbon.",
    }
    record = {
        "question": {"answer": "Biscuit the corgi", "category": 4},
        "windows": [{"gold": [0]}, {"gold": [2, 3]}],
        "decisions": [
            {"pos": 0, "op": "KEEP", "content": "Hey Sam!"},  # the opening: answer lost
            {"pos": 1, "op": "KEEP", "content": "Nice weather today."},  # not gold: not counted
            {"pos": 2, "op": "DROP", "content": ""},
            {"pos": 3, "op": "KEEP", "content": "I love Lisbon."},
        ],
    }  # gold, no answer token whole
    pairs = list(ks.kept_gold(record, texts))
    assert [p[:2] for p in pairs] == [(texts[0], "Hey Sam!"), (texts[3], "I love Lisbon.")]
    s = ks.summarise(pairs)
    assert s == {
        "kept_gold_messages": 2,
        "answer_share_whole": 0.5,
        "answer_share_kept": 0.0,
        "with_answer_token_whole": 1,
        "with_answer_token_kept": 0,
        "spans_that_lost_answer_tokens": 1,
        "of_them_the_message_opening": 1,
    }
    # the span with the answer, mid-message: nothing lost
    record["decisions"][0]["content"] = "I adopted a corgi named Biscuit last week."
    s = ks.summarise(ks.kept_gold(record, texts))
    assert (s["answer_share_kept"], s["spans_that_lost_answer_tokens"]) == (0.5, 0)
    # LoCoMo's adversarial questions and abstentions have no answer to find
    assert list(ks.kept_gold({**record, "question": {"answer": "x", "category": 5}}, texts)) == []
    assert ks.summarise([])["answer_share_whole"] is None


def test_run_reads_the_messages_from_the_runs_data_set(tmp_path):
    from lazymem.data.datasets import load_dataset

    ks = load_script("kept_spans")
    spec = "synthetic:messages=60,seed=3,histories=1,questions=3"
    ds = load_dataset(spec)
    q = ds.questions[0]
    msgs = ds.histories[q.history_id].messages
    gold = sorted(q.evidence)
    decisions = [{"pos": p, "op": "KEEP", "content": msgs[p].text} for p in gold]  # whole messages kept
    record = {
        "status": "ok",
        "question": {"answer": q.answer, "category": None, "history_id": q.history_id},
        "windows": [{"gold": gold}],
        "decisions": decisions,
    }
    run = tmp_path / "run"
    run.mkdir()
    failed = {"question_id": "q-failed", "status": "error"}
    stale = {
        **record,
        "question_id": q.id,
        "decisions": decisions[:1] + [{"pos": gold[0], "op": "KEEP", "content": "x"}],
    }  # retried: not counted
    record["question_id"] = q.id
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (stale, record, failed)))
    (run / "manifest.json").write_text(json.dumps({"config": {"dataset": spec}}))
    out = ks.run(run)
    assert out["kept_gold_messages"] == len(gold) and out["spans_that_lost_answer_tokens"] == 0
    assert out["answer_share_kept"] == out["answer_share_whole"] > 0  # the generator's gold holds its answer
    (run / "manifest.json").write_text("{}")
    with pytest.raises(SystemExit, match="pass --dataset"):
        ks.run(run)
    assert ks.run(run, dataset=spec) == out
    with pytest.raises(SystemExit, match="no records.jsonl"):
        ks.run(tmp_path)


def test_openings_counts_gold_whose_first_sentence_holds_the_answer_on_the_real_generator():
    ks = load_script("kept_spans")
    spec = "synthetic-casual:conversations=1,sessions=6,seed=5,questions=6"
    out = ks.openings(spec)
    assert out["gold_with_answer_token"] > 0
    assert 0 <= out["of_them_answer_in_first_sentence"] <= out["gold_with_answer_token"]
    assert out["share"] == round(out["of_them_answer_in_first_sentence"] / out["gold_with_answer_token"], 3)
    with pytest.raises(SystemExit, match="no histories"):
        ks.openings(spec, {"conv-99"})
    assert ks.first_sentence("Hey Sam, good to hear from you! Last weekend I went to Jasper.") == (
        "Hey Sam, good to hear from you!"
    )
    assert ks.main(["--openings", spec]) == 0
    with pytest.raises(SystemExit):
        ks.main([])  # neither runs nor --openings
