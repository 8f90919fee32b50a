"""Method mem0 (lazymem.pipeline.mem0): a real Mem0 (mem0ai, local qdrant, the shipped MiniLM) whose
LLM is a scripted OpenAI-compatible server on the loopback interface; the answer model is a fake.

The tests that run Mem0 are skipped where mem0ai is not installed (``pip install -e '.[mem0]'``).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
import sys

import pytest
from servers import ChatServer, free_port, mem0_extraction, new_messages

from lazymem.data import synthetic_dataset
from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.pipeline.mem0 import chunk_history, import_mem0, mem0_environment, observation_note
from lazymem.retrieve import RetrievalConfig

mem0_environment()  # telemetry off before mem0's first import (it reads MEM0_TELEMETRY once)

SPEC = "synthetic:messages=40,seed=0,histories=1,questions=2"
KEY = "s3cret-mem0-test-key"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Mem0 stores (and the LLM cache) under tmp_path; the Qwen3 tokenizer stays found."""
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def mem0():
    """mem0ai, or a skip where it is not installed."""
    return pytest.importorskip("mem0")


@pytest.fixture(scope="module")
def data():
    ds = synthetic_dataset(n_messages=40, seed=0, questions_per_history=2)
    (h,) = ds.histories.values()
    return ds, h


def mem0_config(url: str, key: bool = False, **kw) -> PipelineConfig:
    mpm = LLMConfig(
        backend="openai",
        model="scripted",
        base_url=url,
        max_retries=0,
        timeout=20,
        **({"api_key_env": "LAZYMEM_TEST_MEM0_KEY"} if key else {}),
    )
    return PipelineConfig(
        method="mem0", retrieval=RetrievalConfig(), mpm=mpm, answer=LLMConfig(backend="fake", model="answer-fake"), **kw
    )


def every_third_unparseable():
    """The scripted extractor, but every third reply is one Mem0 cannot parse."""
    calls = iter(range(1, 10**6))
    return lambda body: "Sorry, no facts." if next(calls) % 3 == 0 else mem0_extraction(body)


def user_prompt(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_real_mem0_ingests_once_searches_and_answers_with_the_shared_prompt(mem0, data, monkeypatch):
    ds, h = data
    monkeypatch.setenv("LAZYMEM_TEST_MEM0_KEY", KEY)
    q1, q2 = ds.questions
    chunks = chunk_history(h, 2)
    user_texts = {m.text for m in h.messages if m.role == "user"}
    srv = ChatServer(reply=every_third_unparseable(), api_key=KEY)  # 401 unless Mem0 sends the key
    answer = FakeBackend()  # echoes the answer prompt
    with srv as url:
        p = LazyMemPipeline(mem0_config(url, key=True), clients={"answer": answer})
        r1 = p.answer(h, q1)
        after_first = len(srv.requests)
        r2 = p.answer(h, q2)
        assert len(srv.requests) == after_first  # the second question added nothing
        p.mem0.close()
        p3 = LazyMemPipeline(mem0_config(url, key=True), clients={"answer": FakeBackend()})  # a later run, same store
        r3 = p3.answer(h, q1)
        assert len(srv.requests) == after_first
        p3.mem0.close()
    assert r1.ok and r2.ok and r3.ok, (r1.error, r2.error, r3.error)
    ing = r1.baseline["ingestion"]
    assert ing["built_now"] and ing["complete"] and ing["chunks_done"] == ing["n_chunks"] == len(chunks)
    assert after_first == ing["llm_calls"] == len(chunks)  # one extraction call per add
    assert ing["parse_failed"] == len(chunks) // 3 > 0 and ing["no_facts"] == 0
    assert ing["empty_adds"] >= len(chunks) // 3
    assert ing["memories_added"] == ing["memories"] == r1.baseline["n_memories"] > 0
    assert ing["resumes"] == ing["dropped_on_resume"] == 0
    cost = ing["add_seconds"]  # each add timed in progress.json; the record holds the statistics
    assert cost["n"] == len(chunks) and 0 < cost["median"] <= cost["max"]
    usage = ing["usage"]  # every extraction call's tokens (the server's counts) and seconds, for the whole store
    assert usage["calls"] == usage["chunks"] == len(chunks) and usage["prompt_tokens"] == 0  # this server says 0
    assert usage["completion_tokens"] > 0 and usage["seconds"] > 0
    assert usage["cached_prompt_tokens"] is None  # it sends no prompt_tokens_details: not measured, never 0
    from lazymem.eval.records import RunRecord
    from lazymem.eval.usage import record_usage

    stage = record_usage(RunRecord.from_result(r1))["ingestion"]
    assert stage["calls"] == len(chunks) and stage["complete"] and "cached_prompt_tokens" not in stage
    # what Mem0 sent: JSON mode, the session date as Observation Date, each chunk's messages
    first = srv.requests[0]
    assert first["response_format"] == {"type": "json_object"} and first["model"] == "scripted"
    assert observation_note(chunks[0][0].timestamp) in user_prompt(first)
    assert new_messages(first) == [f"{m.role}: {m.text}" for m in chunks[0]]
    # search results: Mem0's memories (the user lines), its order, with dates; the memory text has one line each
    res = r1.baseline["results"]
    assert 0 < len(res) <= 30 and all(x["memory"] in user_texts for x in res)
    assert [x["score"] for x in res] == sorted((x["score"] for x in res), reverse=True)
    assert r1.memory.splitlines() == [f"[{x['date']}] {x['memory']}" for x in res]
    assert all(x["date"] == h[x["positions"][0]].timestamp for x in res)
    assert r1.baseline["gold_shown"] == len(set(q1.evidence) & {p for x in res for p in x["positions"]})
    assert r1.answer_prompt == "answer_text"
    assert f"# Memory\n{r1.memory}\n\n# Answer" in answer.calls[0][0][1]["content"]
    assert r1.answer == answer.calls[0][0][1]["content"].strip()
    assert set(r1.timings) >= {"index", "retrieval", "processing", "answer", "total"}
    assert "index" not in r2.timings and not r2.baseline["ingestion"]["built_now"]  # store open, nothing added
    assert "index" in r3.timings and not r3.baseline["ingestion"]["built_now"]  # opened, not rebuilt
    assert [x["id"] for x in r3.baseline["results"]] == [x["id"] for x in res]
    rec = r1.to_dict()
    json.dumps(rec)  # a run record
    assert rec["method"] == "mem0" and rec["baseline"]["settings"]["chunk"] == 2 and KEY not in json.dumps(rec)


def test_a_process_killed_mid_chunk_resumes_without_duplicate_memories(mem0, data):
    ds, h = data
    chunks = chunk_history(h, 2)
    k = next(i for i, c in enumerate(chunks) if i >= 2 and any(m.role == "user" for m in c))
    calls = iter(range(1, 10**6))

    def numbered(body):  # a new text each call: Mem0's own hash dedup cannot hide a re-added chunk
        reply = json.loads(mem0_extraction(body))
        for item in reply["memory"]:
            item["text"] += f" (call {next(calls)})"
        return json.dumps(reply)

    srv = ChatServer(reply=numbered)
    with srv as url:
        p = LazyMemPipeline(mem0_config(url), clients={"answer": FakeBackend()})
        store = p.mem0
        mem, _, _ = store.open(h)
        add = mem.add

        def dies_after_chunk_k(*a, **kw):
            out = add(*a, **kw)  # chunk k's memories are written ...
            if kw["metadata"]["chunk"] == k:
                raise KeyboardInterrupt  # ... and the process dies before recording the chunk
            return out

        mem.add = dies_after_chunk_k
        with pytest.raises(KeyboardInterrupt):
            p.answer(h, ds.questions[0])
        prog = store.read_progress(h)
        assert prog["chunks_done"] == k and not prog["complete"]
        uid = store.user_id(h)
        assert [r["metadata"]["chunk"] for r in store._rows(mem, uid)].count(k) == 1
        store.close()
        p2 = LazyMemPipeline(mem0_config(url), clients={"answer": FakeBackend()})
        r = p2.answer(h, ds.questions[0])
        rows = p2.mem0._rows(p2.mem0.open(h)[0], uid)
        p2.mem0.close()
    assert r.ok, r.error
    ing = r.baseline["ingestion"]
    assert ing["resumes"] == 1 and ing["dropped_on_resume"] == 1 and ing["complete"]
    assert ing["add_seconds"]["n"] == len(chunks) + 1  # the add that died is timed too, and its redo
    assert len(srv.requests) == len(chunks) + 1  # chunk k asked twice, every other chunk once
    per_chunk = collections.Counter(row["metadata"]["chunk"] for row in rows)
    assert set(per_chunk.values()) == {1} and k in per_chunk
    assert len(rows) == ing["memories"] == sum(any(m.role == "user" for m in c) for c in chunks)


def test_a_reply_mem0_itself_crashes_on_is_an_add_error_and_ingestion_goes_on(mem0, data):
    """mem0ai 2.2.1 raises AttributeError on a "memory" list with a bare string (SmolLM2 wrote one at LoCoMo
    conversation 49's chunk 51): that add is counted, keeps what it wrote, and the later chunks are added.
    (A server that does not answer still fails the question: test_eval_run_records_mem0_and_a_down_server...)"""
    ds, h = data
    chunks = chunk_history(h, 2)
    calls = iter(range(1, 10**6))
    bad = next(i for i, c in enumerate(chunks) if any(m.role == "user" for m in c)) + 1  # the bad reply's call

    def reply(body):
        if next(calls) == bad:  # the shape SmolLM2 wrote: a dict item, then an id as a bare string
            return json.dumps({"memory": [{"id": "0", "text": "User's dog Max has a birthday."}, "1b2c3d4"]})
        return mem0_extraction(body)

    with ChatServer(reply=reply) as url:
        p = LazyMemPipeline(mem0_config(url), clients={"answer": FakeBackend()})
        r = p.answer(h, ds.questions[0])
        p.mem0.close()
    assert r.ok, r.error
    ing = r.baseline["ingestion"]
    assert ing["complete"] and ing["chunks_done"] == len(chunks) and ing["add_errors"] == 1
    (err,) = ing["add_error_chunks"]
    assert err["chunk"] == bad - 1 and err["error"].startswith("AttributeError")
    assert ing["llm_calls"] == len(chunks) and ing["add_seconds"]["n"] == len(chunks)
    assert ing["memories"] == ing["memories_added"] > 0


def test_chunks_stay_in_their_session_and_locomo_speakers_are_written_as_mem0_s_evaluation_does():
    from lazymem.pipeline.mem0 import mem0_message
    from lazymem.records import History, Message

    rows = [
        ("s1", "Ann", "I got a cat."),
        ("s1", "Bob", ""),
        ("s1", "Bob", "Nice!"),
        ("s1", "Ann", "Her name is Kiki."),
        ("s2", "Bob", "I moved."),
        ("s2", "Ann", "Where to?"),
    ]
    h = History(
        "conv-1",
        tuple(Message(i, f"m{i}", sid, i, who, text, f"date {sid}") for i, (sid, who, text) in enumerate(rows)),
        speakers=("Ann", "Bob"),
    )
    assert [[m.pos for m in c] for c in chunk_history(h, 2)] == [[0, 2], [3], [4, 5]]  # blanks out, never across
    assert [[m.pos for m in c] for c in chunk_history(h, 5)] == [[0, 2, 3], [4, 5]]
    assert mem0_message(h[0], "Ann") == {"role": "user", "content": "Ann: I got a cat."}
    assert mem0_message(h[4], "Ann") == {"role": "assistant", "content": "Bob: I moved."}
    m = Message(0, "x", "s", 0, "assistant", "Hi", "d")
    assert mem0_message(m, "user") == {"role": "assistant", "content": "Hi"}  # user/assistant data as it is


def test_extraction_replies_are_counted_as_mem0_parses_them_and_memories_are_dated_lines(mem0):
    from lazymem.pipeline.mem0 import extracted_count, memory_text

    assert extracted_count('{"memory": [{"text": "a"}, {"text": "b"}]}') == 2
    assert extracted_count('```json\n{"memory": [{"text": "a"}]}\n```') == 1
    assert extracted_count('<think>hmm</think>{"memory": []}') == 0
    assert extracted_count('{"memory": [{"fact": "a"}, {"text": ""}]}') == 0  # nothing Mem0 would store
    assert extracted_count('Here: {"memory": [{"text": "a"}]} done') == 1  # Mem0's extract_json fallback
    assert extracted_count("Sorry, no facts.") is None and extracted_count("") == 0
    rows = [{"memory": "A", "metadata": {"timestamp": "2023/05/01"}}, {"memory": "B"}]
    assert memory_text(rows) == "[2023/05/01] A\nB"


def test_config_errors_say_what_to_do(monkeypatch):
    with pytest.raises(ConfigError, match=r"mpm.backend: openai.*llama_cpp.server.*vllm serve"):
        PipelineConfig(method="mem0")  # the default mpm runs in process: Mem0 cannot call it
    with pytest.raises(ConfigError, match=r"mem0 needs mpm.base_url \(unset, Mem0 would call api.openai.com\)"):
        PipelineConfig(method="mem0", mpm=LLMConfig(backend="openai", model="m"))
    with pytest.raises(ConfigError, match=r"mem0.top_k=0: must be an integer >= 1"):
        PipelineConfig.from_dict(
            {
                "method": "mem0",
                "mem0": {"top_k": 0},
                "mpm": {"backend": "openai", "model": "m", "base_url": "http://x/v1"},
            }
        )
    cfg = mem0_config("http://127.0.0.1:9/v1")
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if mem0ai were not installed
    with pytest.raises(ConfigError, match=re.escape("pip install -e '.[mem0]'")):
        import_mem0()
    with pytest.raises(ConfigError, match=re.escape("pip install -e '.[mem0]'")):
        LazyMemPipeline(cfg, clients={"answer": FakeBackend()}).warm_up()  # a run stops before its first question


def test_the_recipe_loads():
    from pathlib import Path

    from lazymem.eval import EvalConfig

    c = EvalConfig.from_yaml(Path(__file__).resolve().parents[1] / "configs" / "eval" / "mem0.yaml")
    p = c.pipeline
    assert (p.method, p.mem0.top_k, p.mem0.chunk, p.mpm.backend) == ("mem0", 30, 2, "openai") and p.mpm.base_url


def test_fingerprints_of_other_methods_ignore_the_mem0_fields():
    from lazymem.eval import EvalConfig, config_fingerprint
    from lazymem.pipeline.methods.mem0 import Mem0Settings

    rag = EvalConfig.from_dict({"dataset": SPEC, "pipeline": {"method": "rag"}})
    other = dataclasses.replace(rag, pipeline=dataclasses.replace(rag.pipeline, mem0=Mem0Settings(5, 4, False)))
    assert config_fingerprint(rag) == config_fingerprint(other)
    m = EvalConfig(dataset=SPEC, pipeline=mem0_config("http://127.0.0.1:8000/v1"))
    assert config_fingerprint(m) != config_fingerprint(
        dataclasses.replace(m, pipeline=dataclasses.replace(m.pipeline, mem0=Mem0Settings(top_k=5)))
    )  # where they act, they count


def test_eval_run_records_mem0_and_a_down_server_is_each_question_s_error(mem0, data, tmp_path, monkeypatch):
    from lazymem.eval import EvalConfig, evaluate, read_records

    ds, _ = data
    with ChatServer() as url:
        evaluate(
            EvalConfig(dataset=SPEC, pipeline=mem0_config(url)),
            tmp_path / "run",
            progress=False,
            clients={"answer": FakeBackend()},
            dataset=ds,
        )
    recs, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 2 and all(r["status"] == "ok" and r["method"] == "mem0" for r in recs), recs[0].get("error")
    assert all(
        r["baseline"]["results"] and r["memory"] and r["gold_in_pool"] == r["baseline"]["gold_shown"] for r in recs
    )
    assert recs[0]["baseline"]["ingestion"]["built_now"] and not recs[1]["baseline"]["ingestion"]["built_now"]
    assert all(r["tokenizer"] in ("qwen3", "missing") for r in recs)
    assert all((r["memory_tokens"] or 0) > 0 for r in recs if r["tokenizer"] == "qwen3")
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache-down"))  # no finished store to reuse
    evaluate(
        EvalConfig(dataset=SPEC, pipeline=mem0_config(down)),
        tmp_path / "down",
        progress=False,
        clients={"answer": FakeBackend()},
        dataset=ds,
    )
    recs, _ = read_records(tmp_path / "down" / "records.jsonl")
    assert len(recs) == 2 and all(r["status"] == "error" and r["error"].startswith("mem0 add: LLMError") for r in recs)
    assert all(r["baseline"]["ingestion"]["chunks_done"] == 0 and r["answer"] == "" for r in recs)
