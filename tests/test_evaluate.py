"""The evaluation runner (lazymem.eval: runner, config, runfiles, scoring, provenance, command): records,
summary, resume, kill -9, cache, secrets.

Every model is a scripted FakeBackend (or an unreachable server); retrieval is BM25 only or a
fixed pool, so the whole file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.cli import main as cli_main
from lazymem.errors import ConfigError
from lazymem.eval import (
    EvalConfig,
    compare_with_baseline,
    config_fingerprint,
    evaluate,
    percentiles,
    read_records,
    select_questions,
    summarize,
    summary_text,
)
from lazymem.llm import CachedClient, FakeBackend, LLMConfig
from lazymem.pipeline import PipelineConfig
from lazymem.records import Dataset, History, Message, Question
from lazymem.retrieve import Hit, Pool, RetrievalConfig, WindowConfig

REPO = Path(__file__).resolve().parents[1]
SYNTH = "synthetic:messages=60,seed=0,histories=1,questions=6"
FAKE = {"backend": "fake", "model": "fake"}
VOLATILE = {"timings", "run_id", "recorded_at", "attempt", "latency_s", "cached", "pool_timings"}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Keep the LLM cache and everything else under tmp_path (the Qwen3 tokenizer stays found)."""
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))


# --- a hand-made dataset whose numbers are checked by hand ----------------------------------------

TEXTS = [
    "Hi there!",
    "Hello, how can I help?",
    "I adopted a corgi named Biscuit last week.",
    "Congratulations on Biscuit!",
    "I work as a nurse in Porto.",
    "That sounds demanding.",
    "",
    "Anything else?",
    "My sister lives in Lyon.",
    "Lyon is lovely.",
    "Biscuit loves the beach.",
    "Dogs often do.",
    "I moved from Porto to Lisbon in May.",
    "Lisbon is a great city.",
]


def hand_dataset() -> Dataset:
    msgs = tuple(
        Message(
            i,
            f"s{i // 4}#{i % 4}",
            f"s{i // 4}",
            i % 4,
            "user" if i % 2 == 0 else "assistant",
            t,
            f"2023/05/{10 + i // 4:02d}",
        )
        for i, t in enumerate(TEXTS)
    )
    qs = (
        Question(
            "q1",
            "multi-session",
            "What is my dog called and what does he love?",
            "Biscuit; the beach",
            "h",
            "2023/06/01",
            evidence=(2, 10),
        ),
        Question("q2", "single-session-user", "Where do I work?", "Porto", "h", "2023/06/01", evidence=(4,)),
        Question("q3", "knowledge-update", "Where do I live now?", "Lisbon", "h", "2023/06/01", evidence=(12,)),
        Question(
            "q4_abs",
            "single-session-user",
            "What is my cat's name?",
            "You did not mention a cat",
            "h",
            "2023/06/01",
            evidence=(),
            abstention=True,
        ),
    )
    return Dataset("hand", {"h": History("h", msgs)}, qs, source="test", sha256="0" * 64)


POOLS = {"q1": [2, 10], "q2": [4], "q3": [12], "q4_abs": [0]}
ANSWERS = {"q1": "Biscuit", "q2": "Porto", "q3": "I don't know", "q4_abs": "You never mentioned a cat."}


class PoolByQuestion:
    """A retriever returning a fixed pool per question text."""

    def __init__(self, dataset: Dataset, pools=POOLS):
        self.by_text = {q.text: pools[q.id] for q in dataset.questions}

    def retrieve(self, history, query):
        hits = tuple(Hit(pos=p, rank=r, score=1.0) for r, p in enumerate(self.by_text[query], start=1))
        return Pool(query=query, hits=hits, stages=("fixed",), history_id=history.id, timings={"total": 0.0})


def window_texts(prompt) -> list[str]:
    block = json.loads(prompt[-1]["content"].split("# History Window\n", 1)[1])
    return [m["content"] for part in ("previous_bridge", "core_messages", "next_bridge") for m in block[part]]


def query_of(prompt) -> str:
    text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
    return re.search(r"^Query: (.*)$", text, re.MULTILINE).group(1)


def hand_mpm(prompt, sampling):
    """KEEP Biscuit/Porto/Lisbon messages; a prose answer (extra_text) for a window showing
    "Lyon is lovely."; an empty KEEP (keep_empty_content) for "Lisbon is a great city."."""
    texts = window_texts(prompt)
    if "Lyon is lovely." in texts:
        return "Here you go: []"
    out = []
    for t in texts:
        if t == "Lisbon is a great city.":
            out.append({"op": "KEEP", "compressed_content": "", "reason": "empty"})
        elif any(w in t for w in ("Biscuit", "Porto", "Lisbon")):
            out.append({"op": "KEEP", "compressed_content": t, "reason": "relevant"})
        else:
            out.append({"op": "DROP", "compressed_content": "", "reason": ""})
    return json.dumps(out)


def hand_answer(prompt, sampling):
    q = query_of(prompt)
    return next(ANSWERS[qid] for qid, text in ((x.id, x.text) for x in hand_dataset().questions) if text == q)


def lme_judge(prompt, sampling):
    assert sampling.max_tokens == 10 and sampling.temperature == 0
    response = prompt.split("Model Response: ", 1)[1]
    return "no" if response.startswith("I don't know") else "Yes."


def hand_config(**kw) -> EvalConfig:
    pipeline = PipelineConfig(
        retrieval=RetrievalConfig(dense_model=None),
        window=WindowConfig(w=1),
        mpm=LLMConfig(**FAKE),
        answer=LLMConfig(**FAKE),
        judge=LLMConfig(**FAKE),
    )
    return EvalConfig(pipeline=pipeline, dataset="hand", judge=kw.pop("judge", "longmemeval"), **kw)


def hand_clients():
    return {"mpm": FakeBackend(hand_mpm), "answer": FakeBackend(hand_answer), "judge": FakeBackend(lme_judge)}


def lines(path) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def stable(rec: dict) -> str:
    """A record without wall times, run ids, timestamps and cache flags."""

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items() if k not in VOLATILE}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    rec = dict(rec)
    if rec.get("pool"):
        rec["pool"] = dict(rec["pool"], timings=None)
    return json.dumps(walk(rec), sort_keys=True)


# --- the whole pipeline, hand-checked -------------------------------------------------------------


def test_hand_checked_records_and_summary(tmp_path):
    ds = hand_dataset()
    s = evaluate(
        hand_config(),
        tmp_path / "run",
        progress=False,
        clients=hand_clients(),
        dataset=ds,
        retriever=PoolByQuestion(ds),
    )
    recs = {r["question_id"]: r for r in lines(tmp_path / "run" / "records.jsonl")}
    assert list(recs) == ["q1", "q2", "q3", "q4_abs"] and all(r["status"] == "ok" for r in recs.values())
    fields = {
        "question_id",
        "method",
        "status",
        "error",
        "pool",
        "windows",
        "decisions",
        "construction",
        "memory",
        "answer_prompt",
        "answer",
        "answer_think",
        "answer_output",
        "timings",
        "baseline",
        "question",
        "n_gold",
        "gold_in_pool",
        "memory_tokens",
        "tokenizer",
        "locomo_f1",
        "answer_f1",
        "answer_contains",
        "judge",
        "run_id",
        "config_sha256",
        "attempt",
        "recorded_at",
        "memory_measures",
        "usage",
    }
    assert all(set(r) == fields for r in recs.values())
    # the memory's own measures, by hand: q1 keeps gold 2 of (2, 10) and holds "biscuit" of {biscuit, beach};
    # q2 keeps gold 4 ("Porto"); q3's memory is empty; q4_abs has no gold and an abstention answer
    mm = {
        q: (r["memory_measures"]["evidence_recall"], r["memory_measures"]["answer_recall_in_memory"])
        for q, r in recs.items()
    }
    assert mm == {"q1": (0.5, 0.5), "q2": (1.0, 1.0), "q3": (0.0, 0.0), "q4_abs": (None, None)}
    assert s["memory_measures"]["evidence_recall"] == {"mean": 0.5, "n": 3}
    w = recs["q1"]["windows"]
    assert [x["positions"] for x in w] == [[1, 2, 3], [9, 10, 11]]
    assert [x["verdict"]["reason"] for x in w] == ["ok", "extra_text"] and w[1]["raw"] == "Here you go: []"
    assert set(w[0]) >= {"raw", "output", "verdict", "decisions", "gold", "hits", "decision_positions"}
    assert recs["q1"]["memory"] == (
        "[2023/05/10] user: I adopted a corgi named Biscuit last week.\n"
        "[2023/05/10] assistant: Congratulations on Biscuit!"
    )
    assert recs["q1"]["pool"]["positions"] == [2, 10] and recs["q1"]["gold_in_pool"] == 2
    assert recs["q3"]["windows"][0]["verdict"]["reason"] == "keep_empty_content" and recs["q3"]["memory"] == ""
    assert recs["q3"]["judge"]["prompt_name"] == "longmemeval_judge_knowledge_update"
    assert recs["q4_abs"]["judge"]["prompt_name"] == "longmemeval_judge_abstention"
    assert "unanswerable question" in recs["q4_abs"]["judge"]["prompt"]
    assert [recs[q]["judge"]["label"] for q in recs] == [True, True, False, True]
    assert recs["q2"]["answer_contains"] is True and recs["q1"]["answer_f1"] == pytest.approx(2 / 3)
    assert all(set(r["timings"]) == {"retrieval", "processing", "answer", "total", "judge"} for r in recs.values())
    from lazymem.llm import count_tokens, qwen3_tokenizer_dir

    have_tokenizer = (qwen3_tokenizer_dir() / "tokenizer.json").is_file()
    if have_tokenizer:
        assert [r["memory_tokens"] for r in recs.values()] == [count_tokens(r["memory"]) for r in recs.values()]
    else:  # a machine without it records null, never a substitute count
        assert all(r["memory_tokens"] is None and r["tokenizer"] == "missing" for r in recs.values())
    # summary, by hand: windows q1 2 (1 ok, 1 extra_text), q2 1 ok, q3 1 (keep_empty_content), q4 1 ok
    c = s["construction"]
    assert (c["n_windows"], c["n_valid"], c["n_fmt"]) == (5, 3, 4)
    assert c["gate_fmt"] == 0.8 and c["gate_pass_rate"] == 0.6
    assert c["failures"] == {"extra_text": 1, "keep_empty_content": 1}
    assert (c["n_gold"], c["n_gold_kept"], c["gold_keep_recall"]) == (4, 2, 0.5)  # 2 and 4 kept; 10, 12 lost
    a = s["accuracy"]
    assert a["overall"] == 0.75 and a["n"] == 4 and a["unjudged"] == 0
    assert a["by_type"] == {"KU": {"mean": 0.0, "n": 1}, "MS": {"mean": 1.0, "n": 1}, "SSU": {"mean": 1.0, "n": 2}}
    assert s["counts"] == {"selected": 4, "recorded": 4, "ok": 4, "error": 0, "missing": 0}
    if have_tokenizer:
        assert s["memory_tokens"]["mean"] == pytest.approx(sum(r["memory_tokens"] for r in recs.values()) / 4)
        assert s["memory_tokens"]["tokenizer"] == "qwen3"
    assert s["retrieval"]["gold_recall"] == 1.0 and s["locomo_f1"] is None
    assert set(s["latency_s"]) == {"retrieval", "processing", "answer", "total", "judge", "index", "load"}
    assert s["latency_s"]["index"]["n"] == 0  # the fixed pool indexes nothing
    assert s["latency_s"]["total"]["n"] == 4 and s["calls"]["mpm"] == 5
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == json.loads(json.dumps(s))
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["status"] == "done" and m["dataset"]["sha256"] == "0" * 64 and m["config_sha256"]
    assert set(m["prompt_hashes"]) >= {"window_annotation", "answer_compressed", "longmemeval_judge"}
    assert m["models"] == {"mpm": "fake", "answer": "fake", "judge": "fake"}
    assert m["retrieval"]["reranker_ran"] == ["none (fused order)"] and m["git_commit"]
    assert m["runs"][0]["status"] == "done" and m["runs"][0]["questions_done"] == 4
    assert m["packages"]["lazymem"] is not None
    wl = lines(tmp_path / "run" / "windows.jsonl")
    assert len(wl) == 5 and wl[0]["question_id"] == "q1" and wl[0]["memory"] == recs["q1"]["memory"]


def test_missing_tokenizer_records_null_never_a_fallback(tmp_path, monkeypatch):
    import lazymem.llm.tokens

    def missing(text):
        raise lazymem.llm.tokens.TokenizerMissing("no tokenizer here")

    monkeypatch.setattr(lazymem.llm.tokens, "count_tokens", missing)
    ds = hand_dataset()
    s = evaluate(
        hand_config(judge="none"),
        tmp_path / "run",
        progress=False,
        clients=hand_clients(),
        dataset=ds,
        retriever=PoolByQuestion(ds),
    )
    recs = lines(tmp_path / "run" / "records.jsonl")
    assert all(r["memory_tokens"] is None and r["tokenizer"] == "missing" for r in recs)
    assert s["memory_tokens"] == {"mean": None, "n": 0, "tokenizer": "missing"}
    assert s["accuracy"] is None and s["proxy"]["n"] == 4


def test_locomo_f1_per_category_and_judge_skips_category_5(tmp_path):
    msgs = tuple(
        Message(i, f"D1:{i + 1}", "D1", i, "Caroline" if i % 2 == 0 else "Melanie", t, "8 May, 2023")
        for i, t in enumerate(
            [
                "I went to a LGBTQ support group on 7 May 2023.",
                "That's great!",
                "I'm studying psychology and counseling.",
                "Cool.",
                "Bye",
            ]
        )
    )
    qs = (
        Question(
            "c:q0", "multi-hop", "What does Caroline study?", "psychology, counseling", "c", category=1, evidence=(2,)
        ),
        Question(
            "c:q1", "temporal", "When did Caroline go to the group?", "7 May 2023", "c", category=2, evidence=(0,)
        ),
        Question(
            "c:q2",
            "adversarial",
            "What did Melanie study?",
            "",
            "c",
            category=5,
            evidence=(2,),
            adversarial_answer="psychology",
        ),
    )
    ds = Dataset("loco", {"c": History("c", msgs, ("Caroline", "Melanie"))}, qs, sha256="1" * 64)
    answers = {
        "What does Caroline study?": "psychology",
        "When did Caroline go to the group?": "7 May, 2023.",
        "What did Melanie study?": "Not mentioned in the conversation.",
    }
    judge = FakeBackend(lambda p, s: '{"label": "CORRECT"}' if "psychology" in p else "The dates differ. WRONG")
    cfg = EvalConfig(
        pipeline=PipelineConfig(
            method="rag", retrieval=RetrievalConfig(dense_model=None), answer=LLMConfig(**FAKE), judge=LLMConfig(**FAKE)
        ),
        dataset="loco",
        judge="locomo",
    )
    s = evaluate(
        cfg,
        tmp_path / "run",
        progress=False,
        dataset=ds,
        clients={"answer": FakeBackend(lambda p, s: answers[query_of(p)]), "judge": judge},
    )
    recs = {r["question_id"]: r for r in lines(tmp_path / "run" / "records.jsonl")}
    assert recs["c:q0"]["locomo_f1"] == 0.5 and recs["c:q1"]["locomo_f1"] == 1.0 and recs["c:q2"]["locomo_f1"] == 1.0
    assert recs["c:q2"]["judge"]["skipped"] and recs["c:q2"]["judge"]["label"] is None
    # not JSON twice (asked again with seed + 1): no verdict, an error of the judge counted and shown, never
    # a silent "wrong" (Mem0's script raises on it); the record is an error, so a resume asks again
    j1 = recs["c:q1"]["judge"]
    assert j1["label"] is None and j1["unparseable"] and j1["attempts"] == 2 and "no verdict" in j1["error"]
    assert recs["c:q1"]["status"] == "error" and recs["c:q1"]["error"].startswith("judge: judge reply has no verdict")
    assert j1["retry_of"]["response"] == "The dates differ. WRONG"
    assert recs["c:q0"]["judge"]["label"] is True and recs["c:q0"]["judge"]["attempts"] == 1
    assert len(judge.calls) == 3 and judge.calls[0][1].max_tokens == 1024
    assert [c[1].seed for c in judge.calls if "7 May 2023" in str(c[0])] == [0, 1]
    assert all(c[1].json_schema["properties"]["label"]["enum"] == ["CORRECT", "WRONG"] for c in judge.calls)
    assert s["locomo_f1"]["by_category"] == {"adversarial": {"mean": 1.0, "n": 1}, "multi-hop": {"mean": 0.5, "n": 1}}
    assert s["locomo_f1"]["overall"] == pytest.approx(0.75)
    a = s["accuracy"]
    assert a["overall"] == 1.0 and a["n"] == 1 and a["unparseable"] == 0 and a["skipped"] == 1
    assert a["unjudged"] == 1 and a["question_errors"] == 1 and a["judge_errors"] == 1 and a["judge_no_verdict"] == 1
    assert "of them judge replies with no verdict: 1" in summary_text({**s, "dataset": "loco"})
    assert s["construction"] is None and s["proxy"] is None


def test_judge_must_fit_the_questions(tmp_path):
    with pytest.raises(ConfigError, match="needs a judge model"):
        EvalConfig(judge="longmemeval")
    ds = hand_dataset()
    with pytest.raises(ConfigError, match="judge 'locomo' needs LoCoMo questions"):
        evaluate(hand_config(judge="locomo"), tmp_path / "r", progress=False, dataset=ds, clients=hand_clients())
    assert not (tmp_path / "r" / "records.jsonl").exists()


# --- resume, errors, kill -9 ---------------------------------------------------------------------------


def synth_config(**kw) -> EvalConfig:
    p = dict(retrieval={"dense_model": None, "n": 3}, window={"w": 1}, mpm=FAKE, answer=FAKE)
    p.update(kw.pop("pipeline", {}))
    return EvalConfig.from_dict({"dataset": SYNTH, "pipeline": p, **kw})


def drop_all(prompt, sampling):
    return json.dumps([{"op": "DROP", "compressed_content": "", "reason": ""} for _ in window_texts(prompt)])


def test_a_failed_question_is_recorded_and_only_it_is_redone(tmp_path, capsys):
    from lazymem.data import load_dataset

    third = load_dataset(SYNTH).questions[2]
    out = tmp_path / "run"
    mpm1 = FakeBackend(drop_all)
    ans1 = FakeBackend(lambda p, s: ConnectionError("server down") if query_of(p) == third.text else "an answer")
    s1 = evaluate(synth_config(), out, progress=False, clients={"mpm": mpm1, "answer": ans1})
    recs = lines(out / "records.jsonl")
    assert [r["status"] for r in recs] == ["ok", "ok", "error", "ok", "ok", "ok"]
    assert recs[2]["error"] == "answer: ConnectionError: server down" and recs[2]["attempt"] == 1
    assert s1["counts"] == {"selected": 6, "recorded": 6, "ok": 5, "error": 1, "missing": 0}
    assert json.loads((out / "manifest.json").read_text())["status"] == "done_with_errors"
    mpm2, ans2 = FakeBackend(drop_all), FakeBackend(lambda p, s: "an answer")
    s2 = evaluate(synth_config(), out, progress=False, clients={"mpm": mpm2, "answer": ans2})
    assert {query_of(p) for p, _ in mpm2.calls} == {third.text} and len(ans2.calls) == 1
    recs2 = lines(out / "records.jsonl")
    assert sorted(r["question_id"] for r in recs2) == sorted(r["question_id"] for r in recs)
    assert all(r["status"] == "ok" for r in recs2)
    assert [r["run_id"] for r in recs2[:5]] == [r["run_id"] for r in recs if r["status"] == "ok"]
    redone = recs2[-1]
    assert redone["question_id"] == third.id and redone["attempt"] == 2 and redone["run_id"] != recs[0]["run_id"]
    assert [r["question_id"] for r in lines(out / "errors.jsonl")] == [third.id]
    assert s2["counts"]["ok"] == 6 and s2["counts"]["error"] == 0
    m = json.loads((out / "manifest.json").read_text())
    assert [r["questions_todo"] for r in m["runs"]] == [6, 1] and m["status"] == "done"
    print(
        f"first run: {len(mpm1.calls)} MPM + {len(ans1.calls)} answer calls; "
        f"resume: {len(mpm2.calls)} MPM + {len(ans2.calls)} answer calls (question {third.id} only)"
    )


def test_a_bug_in_one_question_does_not_stop_the_run(tmp_path):
    from lazymem.data import load_dataset

    second = load_dataset(SYNTH).questions[1]

    def mpm(prompt, sampling):
        if query_of(prompt) == second.text:
            return 42  # not a str: FakeBackend then fails inside, like a backend bug would
        return drop_all(prompt, sampling)

    s = evaluate(
        synth_config(),
        tmp_path / "run",
        progress=False,
        clients={"mpm": FakeBackend(mpm), "answer": FakeBackend(lambda p, s: "a")},
    )
    recs = lines(tmp_path / "run" / "records.jsonl")
    assert s["counts"] == {"selected": 6, "recorded": 6, "ok": 5, "error": 1, "missing": 0}
    bad = recs[1]
    assert bad["question_id"] == second.id and bad["status"] == "error"
    assert bad["error"].startswith("pipeline: AttributeError") and "Traceback" in bad["traceback"]
    assert bad["question"]["text"] == second.text and bad["answer_f1"] is None


def test_truncated_last_line_is_dropped_and_redone(tmp_path):
    out = tmp_path / "run"
    evaluate(
        synth_config(limit=3),
        out,
        progress=False,
        clients={"mpm": FakeBackend(drop_all), "answer": FakeBackend(lambda p, s: "a")},
    )
    text = (out / "records.jsonl").read_text()
    cut = text[: len(text) - 40]  # the last record loses its end, as after a kill mid-write
    (out / "records.jsonl").write_text(cut)
    recs, truncated = read_records(out / "records.jsonl")
    assert truncated and len(recs) == 2
    ans = FakeBackend(lambda p, s: "a")
    evaluate(synth_config(limit=3), out, progress=False, clients={"mpm": FakeBackend(drop_all), "answer": ans})
    assert len(ans.calls) == 1
    recs = lines(out / "records.jsonl")
    assert len(recs) == 3 and len({r["question_id"] for r in recs}) == 3
    m = json.loads((out / "manifest.json").read_text())
    assert m["runs"][-1]["dropped_truncated_line"] is True
    # damage anywhere but the end is not guessed at
    (out / "records.jsonl").write_text("{broken\n" + (out / "records.jsonl").read_text())
    with pytest.raises(ValueError, match="line 1 is not a question record"):
        read_records(out / "records.jsonl")


DRIVER = textwrap.dedent("""
    import json, sys, time
    from lazymem.eval import EvalConfig, evaluate
    from lazymem.llm import FakeBackend

    out, delay = sys.argv[1], float(sys.argv[2])
    config = EvalConfig.from_dict(json.loads(sys.argv[3]))

    def mpm(prompt, sampling):
        time.sleep(delay)
        block = json.loads(prompt[-1]["content"].split("# History Window\\n", 1)[1])
        n = sum(len(v) for v in block.values())
        return json.dumps([{"op": "DROP", "compressed_content": "", "reason": ""}] * n)

    def answer(prompt, sampling):
        time.sleep(delay)
        return "slow answer"

    evaluate(config, out, progress=False, clients={"mpm": FakeBackend(mpm), "answer": FakeBackend(answer)})
""")


@pytest.mark.slow
def test_kill_dash_9_loses_nothing_finished(tmp_path, capsys):
    out = tmp_path / "run"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    raw = {
        "dataset": SYNTH,
        "pipeline": {"retrieval": {"dense_model": None, "n": 3}, "window": {"w": 1}, "mpm": FAKE, "answer": FAKE},
    }
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(out), "0.25", json.dumps(raw)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 90
    try:
        while time.time() < deadline:
            if (out / "records.jsonl").exists() and len(lines(out / "records.jsonl")) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail(f"driver ended early: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        else:
            pytest.fail("no records within 90 s")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before, truncated = read_records(out / "records.jsonl")
    assert len(before) >= 2 and all(r["status"] == "ok" for r in before)
    mpm, ans = FakeBackend(drop_all), FakeBackend(lambda p, s: "fast answer")
    s = evaluate(EvalConfig.from_dict(raw), out, progress=False, clients={"mpm": mpm, "answer": ans})
    after = lines(out / "records.jsonl")
    ids = [r["question_id"] for r in after]
    assert len(ids) == 6 and len(set(ids)) == 6 and all(r["status"] == "ok" for r in after)
    first = {r["question_id"]: r for r in before}
    for r in after:
        if r["question_id"] in first:  # finished before the kill: kept as it was
            assert r == first[r["question_id"]] and r["answer"] == "slow answer"
        else:
            assert r["answer"] == "fast answer" and r["run_id"] != before[0]["run_id"]
    assert len(ans.calls) == 6 - len(before) and s["counts"]["ok"] == 6
    runs = json.loads((out / "manifest.json").read_text())["runs"]
    assert runs[0]["status"] == "interrupted" and runs[1]["status"] == "done"  # the killed run never closed
    with capsys.disabled():
        print(
            f"\n  kill -9 after {len(before)} records (truncated tail: {truncated}); "
            f"resume recomputed {6 - len(before)}, kept {len(before)}"
        )


# --- cache, secrets, config checks -----------------------------------------------------------------


def test_warm_cache_rerun_gives_identical_records(tmp_path):
    cache = tmp_path / "llm_cache"
    cfg = synth_config(pipeline={"judge": FAKE}, judge="longmemeval", llm_cache_dir=str(cache))
    s1 = evaluate(cfg, tmp_path / "a", progress=False)  # backend fake through make_client + CachedClient
    s2 = evaluate(cfg, tmp_path / "b", progress=False)
    a, b = lines(tmp_path / "a" / "records.jsonl"), lines(tmp_path / "b" / "records.jsonl")
    assert len(a) == 6 and [stable(r) for r in a] == [stable(r) for r in b]
    assert not any(w["output"]["cached"] for r in a for w in r["windows"])
    assert all(w["output"]["cached"] for r in b for w in r["windows"]) and all(r["answer_output"]["cached"] for r in b)
    assert all(r["judge"]["output"]["cached"] for r in b)
    assert s1["calls"]["mpm_cached"] == 0 and s2["calls"]["mpm_cached"] == s2["calls"]["mpm"] > 0
    assert (cache / CachedClient.FILENAME).exists()
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["llm_cache_dir"] == str(cache)


def test_a_wrapped_fake_cache_makes_the_second_run_call_nothing(tmp_path):
    ds = hand_dataset()

    def clients(fail: bool):
        def wrap(fn):
            return CachedClient(
                FakeBackend((lambda p, s: RuntimeError("must not be called")) if fail else fn), tmp_path / "cache"
            )

        return {"mpm": wrap(hand_mpm), "answer": wrap(hand_answer), "judge": wrap(lme_judge)}

    evaluate(
        hand_config(), tmp_path / "a", progress=False, clients=clients(False), dataset=ds, retriever=PoolByQuestion(ds)
    )
    s = evaluate(
        hand_config(), tmp_path / "b", progress=False, clients=clients(True), dataset=ds, retriever=PoolByQuestion(ds)
    )
    assert s["counts"]["ok"] == 4
    a, b = lines(tmp_path / "a" / "records.jsonl"), lines(tmp_path / "b" / "records.jsonl")
    assert [stable(r) for r in a] == [stable(r) for r in b]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_api_keys_never_reach_records_manifests_or_logs(tmp_path, monkeypatch, caplog, capsys):
    sentinel = "sk-SENTINEL-do-not-leak-0123456789"
    pasted = "sk-PASTED-into-extra-body-987654"  # a key put in the config by mistake
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    server = {
        "backend": "openai",
        "model": "Qwen/Qwen3-4B",
        "base_url": f"http://127.0.0.1:{free_port()}/v1",
        "timeout": 2,
        "max_retries": 0,
    }
    raw = {
        "dataset": SYNTH,
        "limit": 2,
        "judge": "longmemeval",
        "llm_cache_dir": str(tmp_path / "cache"),
        "pipeline": {
            "retrieval": {"dense_model": None, "n": 3},
            "window": {"w": 1},
            "mpm": dict(server, extra_body={"api_key": pasted}),
            "answer": server,
            "judge": server,
        },
    }
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(raw))
    caplog.set_level(logging.DEBUG)
    rc = cli_main(["eval", str(cfg_path), "--out", str(tmp_path / "run"), "--no-progress"])
    assert rc == 3  # finished, every question failed (recorded): not 1 (a bug) nor 2 (bad input)
    recs = lines(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 2 and all(
        r["status"] == "error" and r["error"].startswith("mpm: APIConnectionError") for r in recs
    )
    cli_main(["eval", str(cfg_path), "--print-config"])
    captured = capsys.readouterr()
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != cfg_path]
    assert {p.name for p in written} >= {"records.jsonl", "summary.json", "manifest.json", "windows.jsonl"}
    for p in written:
        assert sentinel.encode() not in p.read_bytes() and pasted.encode() not in p.read_bytes(), p
    assert sentinel not in captured.out + captured.err and sentinel not in caplog.text
    assert pasted not in captured.out  # --print-config scrubs it (lazymem.llm.factory's own log line does not)
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["config"]["pipeline"]["mpm"]["api_key_env"] == "OPENAI_API_KEY"
    assert m["config"]["pipeline"]["mpm"]["extra_body"] == {"api_key": "<redacted>"}


def test_a_different_config_will_not_resume_into_the_same_folder(tmp_path):
    clients = {"answer": FakeBackend(lambda p, s: "a"), "mpm": FakeBackend(drop_all)}
    evaluate(synth_config(limit=2, pipeline={"method": "rag"}), tmp_path / "run", progress=False, clients=clients)
    with pytest.raises(ConfigError, match="different configuration"):
        evaluate(synth_config(limit=2, pipeline={"method": "full"}), tmp_path / "run", progress=False, clients=clients)
    # operational settings and the question selection may change
    s = evaluate(
        synth_config(limit=4, workers=2, pipeline={"method": "rag", "answer": dict(FAKE, concurrency=3)}),
        tmp_path / "run",
        progress=False,
        clients=clients,
    )
    assert s["counts"]["ok"] == 4
    s = evaluate(
        synth_config(limit=2, pipeline={"method": "full"}),
        tmp_path / "run",
        progress=False,
        clients=clients,
        overwrite=True,
    )
    assert s["counts"]["recorded"] == 2 and s["method"] == "full"


def test_workers_give_the_same_records(tmp_path):
    def run(workers, name):
        evaluate(
            synth_config(workers=workers),
            tmp_path / name,
            progress=False,
            clients={"mpm": FakeBackend(drop_all), "answer": FakeBackend(lambda p, s: query_of(p)[::-1])},
        )
        return sorted(stable(r) for r in lines(tmp_path / name / "records.jsonl"))

    assert run(1, "one") == run(3, "three")


def test_baseline_ratios(tmp_path):
    clients = {"answer": FakeBackend(lambda p, s: "a"), "mpm": FakeBackend(drop_all)}
    base = evaluate(synth_config(pipeline={"method": "full"}), tmp_path / "full", progress=False, clients=clients)
    s = evaluate(
        synth_config(pipeline={"method": "rag"}, baseline=str(tmp_path / "full")),
        tmp_path / "rag",
        progress=False,
        clients=clients,
    )
    b = s["baseline"]
    assert b["method"] == "full" and b["baseline_dir"] == str(tmp_path / "full")
    assert b["memory_tokens"]["reduction"] == pytest.approx(base["memory_tokens"]["mean"] / s["memory_tokens"]["mean"])
    assert b["memory_tokens"]["reduction"] > 1
    assert compare_with_baseline({}, {})["accuracy"] == {"ours": None, "baseline": None}


# --- config, selection, helpers --------------------------------------------------------------------


def test_recipes_in_configs_load():
    demo = EvalConfig.from_yaml(REPO / "configs" / "eval" / "demo.yaml")
    assert demo.pipeline.method == "lazymem" and demo.judge == "none"
    # the default LazyMem-135M (v2) under the decoding it was chosen with: count-constrained with its trace, grounded
    decoding = demo.pipeline.lazymem
    assert decoding.structured and decoding.structured_trace and decoding.grounded
    from lazymem.llm.base import cpu_backend

    # the fastest installed engine: llama.cpp where `make env` built it, else transformers
    assert demo.pipeline.mpm.backend == cpu_backend("smollm2-offline") and demo.pipeline.mpm.model == "smollm2-offline"
    assert demo.pipeline.mpm.adapter == "lazymem-135m"  # the shipped default
    assert demo.dataset.startswith("synthetic") and demo.limit <= 6
    from lazymem.demo import demo_eval_config

    base = demo_eval_config("base")
    s = base.pipeline.lazymem
    assert base.pipeline.mpm.adapter is None and s.structured and s.schema_max_reason == 0
    assert not s.structured_trace and not s.grounded  # the untrained base writes no trace
    assert base.pipeline.mpm_sampling.logit_bias is None  # the KEEP bias belongs to LazyMem-135M
    assert demo_eval_config("extractive").pipeline.method == "extractive"
    with pytest.raises(ConfigError, match="demo mpm"):
        demo_eval_config("gpt")
    paper = EvalConfig.from_yaml(REPO / "configs" / "eval" / "locomo_paper.yaml")
    assert paper.dataset.endswith("locomo10.json#paper") or paper.subset == "paper"
    assert paper.pipeline.mpm.model == "smollm2-offline" and paper.pipeline.lazymem.structured
    server = EvalConfig.from_yaml(
        REPO / "configs" / "eval" / "locomo_paper.yaml",
        [
            "pipeline.mpm.backend=openai",
            "pipeline.mpm.base_url=http://127.0.0.1:8000/v1",
            "pipeline.mpm.model=Qwen/Qwen3-4B",
        ],
    )
    assert server.pipeline.mpm.base_url == "http://127.0.0.1:8000/v1"


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match=r"eval config: unknown field\(s\) \['limt'\]"):
        EvalConfig.from_dict({"limt": 3})
    with pytest.raises(ConfigError, match=r"EvalConfig.limit"):
        EvalConfig.from_dict({"limit": -1})
    with pytest.raises(ConfigError, match=r"EvalConfig.limit"):
        EvalConfig.from_dict({"limit": True})
    with pytest.raises(ConfigError, match=r"pipeline.answer: unknown field"):
        EvalConfig.from_dict({"pipeline": {"answer": {"modle": "x"}}})
    with pytest.raises(ConfigError, match=r"EvalConfig.judge"):
        EvalConfig.from_dict({"judge": "gpt"})
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        EvalConfig.from_yaml(REPO / "configs" / "eval" / "demo.yaml", ["limit"])
    assert EvalConfig.from_dict({"ids": "a"}).ids == ("a",)


def test_fingerprint_ignores_operational_settings():
    a = synth_config()
    b = synth_config(
        limit=2, workers=4, llm_cache_dir="/x", pipeline={"mpm": dict(FAKE, concurrency=2, cache_dir="/y")}
    )
    c = synth_config(seed=1)
    assert config_fingerprint(a) == config_fingerprint(b) != config_fingerprint(c)


def test_select_questions():
    from lazymem.data import load_dataset, stratified_split

    ds = load_dataset("synthetic:messages=60,seed=0,histories=4,questions=6")
    test_ids = set(stratified_split(ds.questions).test)
    assert {q.id for q in select_questions(ds, EvalConfig(split="test"))} == test_ids
    assert [q.abbrev for q in select_questions(ds, EvalConfig(types=("KU", "temporal-reasoning")))][:2] == ["TR", "KU"]
    assert len(select_questions(ds, EvalConfig(types=("KU",), limit=2))) == 2
    assert [q.id for q in select_questions(ds, EvalConfig(ids=(ds.questions[3].id, ds.questions[1].id)))] == [
        ds.questions[1].id,
        ds.questions[3].id,
    ]
    with pytest.raises(ConfigError, match="not among"):
        select_questions(ds, EvalConfig(ids=("nope",)))
    with pytest.raises(ConfigError, match="match no question"):
        select_questions(ds, EvalConfig(types=("XX",)))


def test_limit_0_selects_every_question():
    from lazymem.data import load_dataset

    ds = load_dataset("synthetic:messages=60,seed=0,histories=4,questions=6")
    every = [q.id for q in ds.questions]
    assert [q.id for q in select_questions(ds, EvalConfig(limit=0))] == every
    assert [q.id for q in select_questions(ds, EvalConfig.from_dict({"limit": 0}))] == every
    assert select_questions(ds, EvalConfig(limit=0)) == select_questions(ds, EvalConfig(limit=None))
    assert [q.id for q in select_questions(ds, EvalConfig(limit=2))] == every[:2]
    assert [q.abbrev for q in select_questions(ds, EvalConfig(types=("KU",), limit=0))] == [
        q.abbrev for q in ds.questions if q.abbrev == "KU"
    ]


def test_percentiles_and_summary_of_nothing():
    assert percentiles([]) == {"mean": None, "median": None, "p90": None, "p95": None, "n": 0}
    assert percentiles([2.0])["p95"] == 2.0
    s = summarize([], "longmemeval", selected=["a", "b"])
    assert s["counts"] == {"selected": 2, "recorded": 0, "ok": 0, "error": 0, "missing": 2}
    assert s["accuracy"]["overall"] is None and s["construction"] is None


def test_cli_runs_a_recipe_with_flags_and_overrides(tmp_path, capsys):
    cfg = tmp_path / "rag.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "dataset": SYNTH,
                "pipeline": {"method": "lazymem", "retrieval": {"dense_model": None}, "answer": FAKE, "mpm": FAKE},
            }
        )
    )
    rc = cli_main(
        [
            "eval",
            str(cfg),
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
            "--method",
            "rag",
            "--limit",
            "2",
            "--set",
            "pipeline.retrieval.n=4",
            "--cache-dir",
            str(tmp_path / "c"),
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and json.loads(out)["counts"]["ok"] == 2 and json.loads(out)["method"] == "rag"
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["config"]["pipeline"]["retrieval"]["n"] == 4 and m["config"]["limit"] == 2
    assert m["runs"][0]["command"][:3] == ["lazymem", "eval", str(cfg)] and m["runs"][0]["command"][-1] == "--json"
    recs = lines(tmp_path / "run" / "records.jsonl")
    assert all(len(r["pool"]["positions"]) <= 4 for r in recs)
    rc = cli_main(
        ["eval", str(cfg), "--out", str(tmp_path / "run2"), "--no-progress", "--method", "rag", "--limit", "1"]
    )
    assert rc == 0 and "rag on synthetic" in capsys.readouterr().out


def test_a_model_that_cannot_load_stops_the_run_and_the_manifest_says_why(tmp_path):
    class Unloadable(FakeBackend):
        def load(self):
            raise OSError("no weights at /nowhere")

    with pytest.raises(OSError, match="no weights"):
        evaluate(
            synth_config(),
            tmp_path / "run",
            progress=False,
            clients={"mpm": Unloadable(drop_all), "answer": FakeBackend(lambda p, s: "a")},
        )
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["runs"][-1]["error"] == "OSError: no weights at /nowhere"
    assert not (tmp_path / "run" / "records.jsonl").exists()


class SlowToLoad(FakeBackend):
    """A fake model whose load takes time and is counted (a real backend loads weights)."""

    def __init__(self, *a, fail: bool = False, **kw):
        super().__init__(*a, **kw)
        self.loads, self.fail = 0, fail

    def load(self):
        self.loads += 1
        if self.fail:
            raise OSError("no weights at /nowhere")
        time.sleep(0.3)
        return self


def test_a_fully_cached_rerun_loads_no_model_and_load_time_is_not_latency(tmp_path):
    from lazymem.llm.cache import CachedClient

    def run(out):
        mpm, answer = SlowToLoad(drop_all), SlowToLoad(lambda p, s: "a")
        clients = {"mpm": CachedClient(mpm, tmp_path / "cache"), "answer": CachedClient(answer, tmp_path / "cache")}
        evaluate(synth_config(limit=2), tmp_path / out, progress=False, clients=clients)
        return mpm, answer, lines(tmp_path / out / "records.jsonl")

    mpm, answer, cold = run("cold")
    assert (mpm.loads, answer.loads) == (1, 1)  # loaded once, on the first miss
    first = cold[0]["timings"]
    assert first["load"] >= 0.6 and first["processing"] < 0.3 and first["answer"] < 0.3
    assert (
        "load" not in cold[1]["timings"]
        and abs(first["total"] - sum(first[k] for k in ("retrieval", "processing", "answer"))) < 1e-9
    )
    mpm, answer, warm = run("warm")  # same calls, new run folder: every call is a cache hit
    assert (mpm.loads, answer.loads) == (0, 0) and all("load" not in r["timings"] for r in warm)
    assert [r["answer"] for r in warm] == [r["answer"] for r in cold]


def test_a_cached_model_that_cannot_load_stops_the_run(tmp_path):
    from lazymem.errors import ModelLoadError
    from lazymem.llm.cache import CachedClient

    clients = {
        "mpm": CachedClient(SlowToLoad(drop_all, fail=True), tmp_path / "cache"),
        "answer": FakeBackend(lambda p, s: "a"),
    }
    with pytest.raises(ModelLoadError, match="no weights"):
        evaluate(synth_config(), tmp_path / "run", progress=False, clients=clients)
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["status"] == "failed" and "no weights" in m["runs"][-1]["error"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=6), st.data())
def test_read_records_keeps_exactly_the_complete_lines(tmp_path_factory, answers, data):
    path = tmp_path_factory.mktemp("rr") / "records.jsonl"
    recs = [{"question_id": f"q{i}", "status": "ok", "answer": a} for i, a in enumerate(answers)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode("utf-8")
    last_start = len(text) - len((json.dumps(recs[-1], ensure_ascii=False) + "\n").encode("utf-8"))
    cut = data.draw(st.integers(min_value=last_start, max_value=len(text)))
    path.write_bytes(text[:cut])
    got, truncated = read_records(path)
    if cut == len(text):
        assert got == recs and not truncated
    else:  # any cut inside the last line (even right before its newline) drops that record only
        assert got == recs[:-1] and truncated == (cut > last_start)


@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=40))
def test_percentiles_are_ordered(xs):
    p = percentiles(xs)
    assert min(xs) - 1e-6 <= p["median"] <= p["p90"] + 1e-6 <= p["p95"] + 2e-6 <= max(xs) + 3e-6
    assert p["n"] == len(xs)


@pytest.mark.slow
def test_server_killed_mid_eval_records_errors_and_rerun_completes(served, tmp_path, capsys):
    """A real OpenAI-compatible server (transformers serve, tiny model) is SIGKILLed while
    `evaluate` runs: the run finishes, the unfinished questions are recorded as errors, and
    a rerun against the restarted server completes exactly those."""
    import threading

    url = served.ensure()
    llm = {
        "backend": "openai",
        "base_url": url,
        "model": served.model,
        "concurrency": 1,
        "max_retries": 1,
        "retry_wait": 0.05,
        "timeout": 30,
    }
    raw = {
        "dataset": "synthetic:messages=120,seed=0,histories=1,questions=12",
        "judge": "none",
        "llm_cache_dir": str(tmp_path / "llm-cache"),
        "pipeline": {
            "method": "rag",
            "retrieval": {"dense_model": None, "n": 3},
            "mpm": llm,
            "answer": llm,
            "answer_sampling": {"temperature": 0.0, "max_tokens": 32},
        },
    }
    out = tmp_path / "run"

    def kill_after_first_record():
        deadline = time.time() + 120
        while time.time() < deadline:
            if (out / "records.jsonl").exists() and lines(out / "records.jsonl"):
                break
            time.sleep(0.01)
        served.proc.send_signal(signal.SIGKILL)

    killer = threading.Thread(target=kill_after_first_record)
    killer.start()
    first = evaluate(EvalConfig.from_dict(raw), out, progress=False)  # must not raise
    killer.join()
    assert served.proc.poll() is not None  # the server really died
    recs = lines(out / "records.jsonl")
    ok_before = {r["question_id"] for r in recs if r["status"] == "ok"}
    errors = [r for r in recs if r["status"] == "error"]
    assert first["counts"]["ok"] == len(ok_before) >= 1 and len(errors) >= 1
    assert first["counts"]["ok"] + first["counts"]["error"] == 12
    assert all("APIConnectionError" in (r["error"] or "") for r in errors), [r["error"] for r in errors]

    served.start(keep_port=True)  # same URL: the rerun resumes the same run folder
    second = evaluate(EvalConfig.from_dict(raw), out, progress=False)
    latest = {r["question_id"]: r for r in lines(out / "records.jsonl")}
    assert second["counts"]["ok"] == 12 and second["counts"]["error"] == 0
    assert all(r["status"] == "ok" for r in latest.values()) and len(latest) == 12
    redone = {q for q, r in latest.items() if q not in ok_before}
    assert len(redone) == len(errors)  # only the failed questions were recomputed
    with capsys.disabled():
        print(
            f"\n  server killed after {len(ok_before)} answered; {len(errors)} recorded as errors; "
            f"rerun completed {len(redone)}, kept {len(ok_before)}"
        )


def test_fingerprint_ignores_an_unset_adapter_so_older_runs_stay_resumable():
    import dataclasses

    from lazymem.eval import EvalConfig, config_fingerprint

    c = EvalConfig.from_dict({"dataset": "synthetic:messages=50,seed=0", "pipeline": {"method": "rag"}})
    d = c.to_dict()
    d["pipeline"] = c.pipeline.legacy_dict()  # fingerprint version 1: the method sections flat
    for role in ("mpm", "answer"):
        del d["pipeline"][role]["adapter"]  # what a config looked like before the field existed
    del d["judge_json_mode"], d["pipeline"]["nanomemory_top_k"], d["pipeline"]["nanomemory_context"]  # the same
    for k in ("mem0_top_k", "mem0_chunk", "mem0_observation_date"):
        del d["pipeline"][k]  # and Mem0's settings (method mem0 came later still)
    import hashlib
    import json

    from lazymem.eval.config import _OPERATIONAL

    for k in _OPERATIONAL["eval"]:
        d.pop(k, None)
    for role in ("mpm", "answer"):
        for k in _OPERATIONAL["llm"]:
            d["pipeline"][role].pop(k, None)
    for k in _OPERATIONAL["retrieval"]:
        d["pipeline"]["retrieval"].pop(k, None)
    old = hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode("utf-8")).hexdigest()
    for role in ("mpm", "answer"):  # the thinking budget came later still: version 1 hashed it unset
        del d["pipeline"][role]["thinking_budget"], d["pipeline"][role]["thinking_budget_mode"]
    before_thinking = hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode("utf-8")).hexdigest()
    from lazymem.eval.config import config_fingerprints

    assert config_fingerprints(c)[1:] == (before_thinking, old)  # version 2's hash, then version 1's
    old = before_thinking
    adapted = dataclasses.replace(
        c,
        pipeline=dataclasses.replace(
            c.pipeline, mpm=dataclasses.replace(c.pipeline.mpm, adapter="runs/train/sft/final")
        ),
    )
    assert config_fingerprints(adapted)[1] != old  # a set adapter is part of what decides the records
    from lazymem.pipeline.methods.nanomemory import NanoMemorySettings

    nano = dataclasses.replace(c, pipeline=dataclasses.replace(c.pipeline, method="nanomemory"))
    assert config_fingerprint(nano) != config_fingerprint(
        dataclasses.replace(nano, pipeline=dataclasses.replace(nano.pipeline, nanomemory=NanoMemorySettings(top_k=5)))
    )  # it counts


def test_report_tables_and_paired_intervals_from_two_runs(tmp_path, capsys):
    from lazymem.cli import main as cli_main
    from lazymem.eval.report import build_report, report_markdown

    ds = hand_dataset()
    evaluate(
        hand_config(),
        tmp_path / "lazy",
        progress=False,
        clients=hand_clients(),
        dataset=ds,
        retriever=PoolByQuestion(ds),
    )
    always_yes = {"answer": FakeBackend(hand_answer), "judge": FakeBackend(lambda p, s: "yes")}
    oracle = hand_config()
    oracle = dataclasses.replace(oracle, pipeline=dataclasses.replace(oracle.pipeline, method="oracle_turn"))
    evaluate(oracle, tmp_path / "oracle", progress=False, clients=always_yes, dataset=ds)
    rep = build_report([tmp_path / "oracle", tmp_path / "lazy"], n_resamples=500)
    assert rep["metric"] == "accuracy" and rep["reference"] == "oracle"
    rows = {r["system"]: r for r in rep["rows"]}
    assert rows["oracle"]["score"] == 1.0 and rows["lazy"]["score"] == 0.75 and rows["lazy"]["scored"] == 4
    assert rows["lazy"]["by_type"]["knowledge-update"] == 0.0 and rows["lazy"]["gate_fmt"] is not None
    assert rows["oracle"]["gate_fmt"] is None and rows["lazy"]["errors"] == 0
    assert set(rows["lazy"]["latency_s"]) == {"retrieval", "processing", "answer", "total"}
    (pair,) = rep["pairs"]
    assert pair["system"] == "lazy" and pair["score"]["n"] == 4 and pair["score"]["delta"] == -0.25
    assert pair["score"]["low"] <= -0.25 <= pair["score"]["high"] <= 0.0
    md = report_markdown(rep)
    assert "| lazy | 4 | 0 |" in md and "paired bootstrap 95% intervals" in md
    assert (
        cli_main(
            [
                "report",
                str(tmp_path / "lazy"),
                str(tmp_path / "oracle"),
                "--names",
                "LazyMem,Oracle",
                "--reference",
                "Oracle",
                "--out",
                str(tmp_path / "rep"),
                "--resamples",
                "200",
                "--paper",
                "longmemeval",
                "--no-png",
            ]
        )
        == 0
    )
    saved = json.loads((tmp_path / "rep" / "report.json").read_text())
    html = (tmp_path / "rep" / "pareto.html").read_text()
    assert "LazyMem-4B (reported)" in html and "frontier (measured)" in html
    assert [r["system"] for r in saved["rows"]] == ["LazyMem", "Oracle"] and saved["pairs"][0]["system"] == "LazyMem"
    assert "| LazyMem |" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="not a lazymem eval run folder"):
        build_report([tmp_path])


def test_pareto_front_and_figure():
    from lazymem.notebooks.compare import report_figure
    from lazymem.viz import pareto_front

    pts = [("rag", 3800.0, 0.66), ("oracle", 170.0, 0.75), ("lazy", 700.0, 0.68), ("bad", 9000.0, 0.45)]
    assert pareto_front(pts) == ["oracle"]
    assert pareto_front(pts + [("best", 5000.0, 0.9)]) == ["oracle", "best"]
    rows = [
        {
            "system": n,
            "score": s,
            "memory_tokens": c,
            "latency_s": {"total": {"mean": c / 1000, "median": c / 1200, "p95": c / 800}},
        }
        for n, c, s in pts
    ]
    fig = report_figure({"rows": rows, "metric": "locomo_f1"}, "locomo")
    names = [t.name for t in fig.data]
    assert names[:3] == ["measured", "frontier (measured)", "paper (reported)"]
    reported = fig.data[2]
    assert "NanoMemory (reported)" in reported.text and "Oracle Session (reported)" not in reported.text
    assert fig.layout.xaxis.type == "log" and list(fig.data[1].x) == [170.0]
    lat = fig.data[3]
    assert list(lat.error_x.array)[0] == pytest.approx(3800 / 800 - 3.8)
    assert reported.xaxis == "x" and len(fig.layout.annotations) == 2  # same scale: overlaid on the token panel
    small = [dict(r, score=r["score"] / 20) for r in rows]  # a tiny answerer: far below every reported point
    fig = report_figure({"rows": small, "metric": "locomo_f1"}, "locomo")
    reported = next(t for t in fig.data if t.name == "paper (reported)")
    assert reported.xaxis == "x3" and fig.layout.annotations[2].text.startswith("the paper's reported points")
    assert "(reported)" not in " ".join(next(t for t in fig.data if t.name == "measured").text)
    with pytest.raises(ValueError, match="the paper reports"):
        report_figure({"rows": rows, "metric": "locomo_f1"}, "msc")


def test_stratified_limit_takes_each_types_share_and_keeps_resuming():
    from collections import Counter

    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, config_fingerprint, select_questions

    ds = load_dataset("synthetic:messages=200,seed=0,histories=2,questions=12")
    shares = Counter(q.type for q in ds.questions)
    plain = EvalConfig(dataset="x", limit=6)
    strat = EvalConfig(dataset="x", limit=6, stratified=True)
    picked = select_questions(ds, strat)
    assert len(picked) == 6 and picked == [q for q in ds.questions if q in picked]  # dataset order kept
    got = Counter(q.type for q in picked)
    assert all(abs(got[t] - 6 * c / len(ds.questions)) < 1 for t, c in shares.items())
    assert config_fingerprint(plain) == config_fingerprint(strat)  # question selection: records still resume
    assert select_questions(ds, EvalConfig(dataset="x", limit=0, stratified=True)) == list(ds.questions)
    with pytest.raises(ConfigError, match="stratified"):
        EvalConfig(dataset="x", stratified="yes")
