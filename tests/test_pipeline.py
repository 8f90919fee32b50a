"""The query path (lazymem.pipeline.query) with scripted fakes: no real model, no encoder."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading

import pytest

from lazymem.construct import bridge_sizes, decision_schema
from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig, Sampling
from lazymem.pipeline import (
    LazyMemPipeline,
    PipelineConfig,
)
from lazymem.pipeline.methods.nanomemory import NanoMemorySettings
from lazymem.records import History, Message, Question
from lazymem.retrieve import Hit, Pool, RetrievalConfig, WindowConfig, build_windows

# --- a hand-made history and helpers ---------------------------------------------------------------

TEXTS = [
    "Hi there!",
    "Hello, how can I help?",
    "I adopted a corgi named Biscuit last week.",
    "Congratulations on Biscuit!",
    "I work as a nurse in Porto.",
    "That sounds demanding.",
    "",
    "Anything else?",  # position 6 is blank: neither shown nor decided
    "My sister lives in Lyon.",
    "Lyon is lovely.",
    "Biscuit loves the beach.",
    "Dogs often do.",
    "I moved from Porto to Lisbon in May.",
    "Lisbon is a great city.",
]


def make_history() -> History:
    msgs = tuple(
        Message(
            i,
            f"s{i // 4}#{i % 4}",
            f"s{i // 4}",
            i % 4,
            "user" if i % 2 == 0 else "assistant",
            t,
            f"2023/05/{10 + i // 4:02d}",
            gold_for=("q1",) if i in (2, 10) else (),
        )
        for i, t in enumerate(TEXTS)
    )
    return History("h", msgs)


Q = Question(
    "q1",
    "multi-session",
    "What is my dog's name and what does he love?",
    "Biscuit; the beach",
    "h",
    query_time="2023/06/01",
    evidence=(2, 10),
)


class FixedRetriever:
    """Returns a fixed pool (ranked positions), counting calls."""

    def __init__(self, positions):
        self.positions = list(positions)
        self.calls = 0

    def retrieve(self, history, query):
        self.calls += 1
        hits = tuple(Hit(pos=p, rank=r, score=1.0 / r) for r, p in enumerate(self.positions, start=1))
        return Pool(query=query, hits=hits, stages=("fixed",), history_id=history.id, timings={"total": 0.0})


def window_size(prompt) -> int:
    """Decisions a window prompt asks for: its non-empty messages (parsed from the rendered block)."""
    block = json.loads(prompt[-1]["content"].split("# History Window\n", 1)[1])
    return sum(len(v) for v in block.values())


def window_texts(prompt) -> list[str]:
    block = json.loads(prompt[-1]["content"].split("# History Window\n", 1)[1])
    return [m["content"] for part in ("previous_bridge", "core_messages", "next_bridge") for m in block[part]]


def keep_matching(words=("Biscuit",), bad_if=None):
    """A scripted MPM: KEEP messages containing any of `words` (content upper-cased), DROP the rest;
    an output that fails the gate for windows containing `bad_if`."""

    def mpm(prompt, sampling):
        texts = window_texts(prompt)
        if bad_if is not None and any(bad_if in t for t in texts):
            return "Sure! Here is the array: []"
        return json.dumps(
            [
                {"op": "KEEP", "compressed_content": t.upper(), "reason": "match"}
                if any(w in t for w in words)
                else {"op": "DROP", "compressed_content": "", "reason": ""}
                for t in texts
            ]
        )

    return mpm


class CountingFake(FakeBackend):
    """A FakeBackend that also counts generate() invocations (not just prompts)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.invocations: list[int] = []

    def generate(self, prompts, sampling=Sampling()):
        self.invocations.append(len(prompts))
        return super().generate(prompts, sampling)


def config(**kw) -> PipelineConfig:
    base = dict(
        retrieval=RetrievalConfig(dense_model=None),
        mpm=LLMConfig(backend="fake", model="mpm-fake"),
        answer=LLMConfig(backend="fake", model="answer-fake"),
    )
    base.update(kw)
    return PipelineConfig.from_dict(base)  # a method's settings as its section or flat, as a recipe writes them


# --- config ------------------------------------------------------------------------------------------


def test_config_from_dict_builds_sections_and_names_bad_fields():
    c = PipelineConfig.from_dict(
        {
            "method": "lazymem",
            "structured": True,
            "retrieval": {"n": 20, "dense_model": None},
            "window": {"w": 1, "L": 4, "s": 3},
            "mpm": {"backend": "fake", "model": "m"},
            "mpm_sampling": {"max_tokens": 100, "stop": ["\n\n"]},
            "judge": {"backend": "fake", "model": "j"},
        }
    )
    assert c.retrieval.n == 20 and c.window.L == 4 and c.mpm.model == "m" and c.judge.model == "j"
    assert c.mpm_sampling.max_tokens == 100 and c.mpm_sampling.stop == ("\n\n",)
    assert c.answer_sampling.max_tokens == 1024 and PipelineConfig().mpm_sampling.max_tokens == 3072
    with pytest.raises(ConfigError, match=r"pipeline: unknown field\(s\) \['answer_model'\]"):
        PipelineConfig.from_dict({"answer_model": "x"})
    with pytest.raises(ConfigError, match=r"pipeline.mpm: unknown field\(s\) \['temperature'\]"):
        PipelineConfig.from_dict({"mpm": {"temperature": 0}})
    with pytest.raises(ConfigError, match=r"pipeline.window: .*WindowConfig.s"):
        PipelineConfig.from_dict({"window": {"L": 4, "s": 5}})
    with pytest.raises(ConfigError, match=r"pipeline.retrieval: RetrievalConfig.n"):
        PipelineConfig.from_dict({"retrieval": {"n": 0}})
    with pytest.raises(ConfigError, match=r"PipelineConfig.method"):
        PipelineConfig.from_dict({"method": "memgpt"})
    with pytest.raises(ConfigError, match="json_schema must be unset"):
        PipelineConfig(mpm_sampling=Sampling(json_schema={"type": "array"}))
    with pytest.raises(ConfigError, match="PipelineConfig.bridges"):
        PipelineConfig(bridges="both")
    with pytest.raises(ConfigError, match="expected a mapping"):
        PipelineConfig.from_dict({"window": [2, 8, 7]})


def test_yaml_round_trip(tmp_path):
    import yaml

    c = config(method="rag", structured=True)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"pipeline": json.loads(json.dumps(c.to_dict()))}))
    assert PipelineConfig.from_yaml(str(path)) == c


def test_importing_creates_nothing_heavy():
    code = (
        "import sys, lazymem.pipeline.query, lazymem.eval.runner; "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'pandas', 'openai', 'nltk') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the lazymem path --------------------------------------------------------------------------------


def test_lazymem_end_to_end_one_generate_call_gate_merge_assemble():
    h = make_history()
    mpm = CountingFake(keep_matching(bad_if="Lyon"))
    answer = CountingFake(["<think>the memory says Biscuit</think>\nBiscuit, and he loves the beach."])
    retriever = FixedRetriever([10, 2, 12])
    p = LazyMemPipeline(
        config(window=WindowConfig(w=1, L=8, s=7)), clients={"mpm": mpm, "answer": answer}, retriever=retriever
    )
    r = p.answer(h, Q)
    assert r.ok and r.status == "ok" and r.error is None
    # windows: hits 2 -> [1, 3]; 10 and 12 (distance 2 = 2w) merge -> [9, 13]
    assert [w.window.positions for w in r.windows] == [(1, 2, 3), (9, 10, 11, 12, 13)]
    assert [w.window.gold for w in r.windows] == [(2,), (10,)]
    assert mpm.invocations == [2], "all windows in one generate call"
    assert [w.verdict.ok for w in r.windows] == [True, False]  # window 2 shows "Lyon is lovely."
    assert r.windows[1].verdict.reason == "extra_text" and r.windows[1].raw.startswith("Sure!")
    assert r.memory == (
        "[2023/05/10] user: I ADOPTED A CORGI NAMED BISCUIT LAST WEEK.\n"
        "[2023/05/10] assistant: CONGRATULATIONS ON BISCUIT!"
    )
    assert [(d.pos, d.op) for d in r.decisions] == [(1, "DROP"), (2, "KEEP"), (3, "KEEP")]
    s = r.stats
    assert (s.n_windows, s.n_valid, s.n_fmt, s.n_gold, s.n_gold_kept) == (2, 1, 1, 2, 1)
    assert s.failures == {"extra_text": 1} and s.gold_keep_recall == 0.5
    assert r.answer == "Biscuit, and he loves the beach."  # think trace stripped, and kept aside
    assert r.answer_think == "<think>the memory says Biscuit</think>" and r.windows[0].think is None
    assert r.answer_prompt == "answer_compressed"
    sent = answer.calls[0][0]
    assert sent[0]["role"] == "system" and "# Memory\n[2023/05/10] user: I ADOPTED" in sent[1]["content"]
    assert "Query Time: 2023/06/01" in sent[1]["content"]
    assert set(r.timings) == {"retrieval", "processing", "answer", "total"}
    assert r.timings["total"] == pytest.approx(sum(r.timings[k] for k in ("retrieval", "processing", "answer")))
    d = r.to_dict()
    verdict = d["windows"][1]["verdict"]
    assert verdict == {"ok": False, "reason": "extra_text", "detail": verdict["detail"]}
    assert d["construction"]["gate_fmt"] == 0.5 and d["pool"]["positions"] == [10, 2, 12]
    assert d["answer_output"]["model"] == "fake" and "text" not in d["answer_output"]
    json.dumps(d)  # JSON-ready


def test_blank_messages_are_not_decided_and_default_mpm_sampling_is_used():
    h = make_history()
    mpm = CountingFake(keep_matching())
    p = LazyMemPipeline(
        config(window=WindowConfig(w=1)),
        clients={"mpm": mpm, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([6]),
    )
    r = p.answer(h, Q)
    assert r.windows[0].window.positions == (5, 6, 7) and r.windows[0].decision_positions == (5, 7)
    assert window_size(mpm.calls[0][0]) == 2 and r.windows[0].verdict.ok
    assert mpm.calls[0][1] == PipelineConfig().mpm_sampling


def test_structured_decoding_sends_each_window_its_schema():
    h = make_history()
    mpm = CountingFake(keep_matching())
    p = LazyMemPipeline(
        config(structured=True, schema_max_content=64, schema_max_reason=8, window=WindowConfig(w=1, L=8, s=7)),
        clients={"mpm": mpm, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([2, 10, 12, 6]),
    )
    r = p.answer(h, Q)
    sizes = [len(w.decision_positions) for w in r.windows]
    assert sizes == [3, 2, 5]  # [1,3], [5,7] (6 blank), [9,13]
    assert sorted(mpm.invocations) == [1, 1, 1]  # one call per distinct decision count
    for prompt, sampling in mpm.calls:
        assert sampling.json_schema == decision_schema(window_size(prompt), 64, 8)
        assert sampling.max_tokens == PipelineConfig().mpm_sampling.max_tokens
    assert all(w.verdict.ok for w in r.windows)
    # same-size windows share one call
    mpm2 = CountingFake(keep_matching())
    LazyMemPipeline(
        config(structured=True, window=WindowConfig(w=1)),
        clients={"mpm": mpm2, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([2, 10]),
    ).answer(h, Q)
    assert mpm2.invocations == [2]


def test_a_failed_mpm_call_is_an_error_not_a_gate_failure_and_skips_the_answer():
    h = make_history()
    answer = CountingFake(["never"])
    mpm = FakeBackend(lambda prompt, s: ConnectionError("server gone") if "Lyon" in str(prompt) else "[]")
    p = LazyMemPipeline(
        config(window=WindowConfig(w=1)), clients={"mpm": mpm, "answer": answer}, retriever=FixedRetriever([2, 9])
    )
    r = p.answer(h, Q)
    assert r.status == "error" and r.error == "mpm: ConnectionError: server gone"
    assert r.stats is None and answer.invocations == [] and r.answer == "" and r.answer_output is None
    assert r.windows[1].verdict is None and r.windows[1].raw is None
    assert r.windows[1].to_dict()["output"]["error"] == "ConnectionError: server gone"
    assert "answer" not in r.timings


def test_a_failed_answer_call_is_an_error():
    h = make_history()
    p = LazyMemPipeline(
        config(method="rag"), clients={"answer": FakeBackend([TimeoutError("slow")])}, retriever=FixedRetriever([2])
    )
    r = p.answer(h, Q)
    assert r.status == "error" and r.error == "answer: TimeoutError: slow" and r.memory


@pytest.mark.parametrize(
    "method, expected_positions, retrieves",
    [
        ("rag", [2, 10, 12], True),
        ("oracle_turn", [2, 10], False),
        ("oracle_session", [0, 1, 2, 3, 8, 9, 10, 11], False),  # the whole sessions s0 and s2 that hold the gold
        ("full", [i for i, t in enumerate(TEXTS)], False),
    ],
)
def test_text_memory_baselines(method, expected_positions, retrieves):
    h = make_history()
    answer = CountingFake(["a"])
    retriever = FixedRetriever([12, 2, 10])
    p = LazyMemPipeline(config(method=method), clients={"answer": answer}, retriever=retriever)
    r = p.answer(h, Q)
    assert r.ok and r.answer_prompt == "answer_text" and r.windows == () and r.stats is None
    expected = "\n".join(f"[{h[i].timestamp}] {h[i].role}: {h[i].text}" for i in expected_positions)
    assert r.memory == expected
    assert retriever.calls == (1 if retrieves else 0) and (r.pool is not None) == retrieves
    assert f"# Memory\n{expected}\n\n# Answer" in answer.calls[0][0][1]["content"]
    assert "mpm" not in p._clients  # the MPM is never created for baselines


def test_extractive_needs_no_model_and_passes_the_gate():
    h = make_history()
    p = LazyMemPipeline(
        config(method="extractive", mpm=LLMConfig(backend="transformers", model="/nonexistent")),
        clients={"answer": FakeBackend(["Biscuit"])},
        retriever=FixedRetriever([2, 10]),
    )
    r = p.answer(h, Q)
    assert r.ok and all(w.verdict.ok and w.output is None for w in r.windows)
    assert "Biscuit" in r.memory and r.answer_prompt == "answer_compressed"
    assert r.stats.gold_keep_recall == 1.0


def test_bridges_overlap_shows_shared_messages_as_bridges():
    h = make_history()
    mpm = CountingFake(keep_matching())
    wc = WindowConfig(w=2, L=4, s=3)
    p = LazyMemPipeline(
        config(window=wc, bridges="overlap"),
        clients={"mpm": mpm, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([9]),
    )
    r = p.answer(h, Q)
    assert [w.window.positions for w in r.windows] == [(7, 8, 9, 10), (10, 11)]
    assert [(w.n_prev_bridge, w.n_next_bridge) for w in r.windows] == [(0, 1), (1, 0)]
    first = json.loads(mpm.calls[0][0][-1]["content"].split("# History Window\n", 1)[1])
    assert [m["content"] for m in first["next_bridge"]] == [TEXTS[10]]
    second = json.loads(mpm.calls[1][0][-1]["content"].split("# History Window\n", 1)[1])
    assert [m["content"] for m in second["previous_bridge"]] == [TEXTS[10]]
    assert [m["content"] for m in second["core_messages"]] == [TEXTS[11]]
    assert all(w.verdict.ok for w in r.windows)


def test_bridge_sizes_none_and_short_last_window():
    ws = build_windows(100, [10], WindowConfig(w=4, L=8, s=7))  # [6, 14] -> [6, 13], [13, 14]
    assert bridge_sizes(ws, WindowConfig(w=4, L=8, s=7), "none") == [(0, 0), (0, 0)]
    assert bridge_sizes(ws, WindowConfig(w=4, L=8, s=7), "overlap") == [(0, 1), (1, 0)]
    ws = build_windows(100, [10], WindowConfig(w=2, L=2, s=1))  # [8,12] -> 4 windows of 2
    sizes = bridge_sizes(ws, WindowConfig(w=2, L=2, s=1), "overlap")
    assert all(a + b <= 2 for a, b in sizes) and sizes[0] == (0, 1) and sizes[-1] == (1, 0)


def test_clients_are_created_lazily_once_and_roles_are_checked():
    p = LazyMemPipeline(config(judge=LLMConfig(backend="fake", model="j")))
    assert p._clients == {} and p._retriever is None
    a = p.client("answer")
    assert p.client("answer") is a and a.model_id == "answer-fake"
    assert p.client("judge").model_id == "j"
    same = LLMConfig(backend="fake", model="same")
    shared = LazyMemPipeline(config(mpm=same, answer=same))
    assert shared.client("mpm") is shared.client("answer")  # one model in memory for both roles
    with pytest.raises(ConfigError, match="no judge model"):
        LazyMemPipeline(config()).client("judge")
    with pytest.raises(ConfigError, match="unknown role"):
        LazyMemPipeline(config(), clients={"teacher": FakeBackend()})


def test_question_must_belong_to_the_history():
    p = LazyMemPipeline(config(method="full"), clients={"answer": FakeBackend(["x"])})
    with pytest.raises(ValueError, match="asked over history"):
        p.answer(History("other", make_history().messages), Q)


def test_concurrent_answers_equal_sequential_ones():
    h = make_history()
    p = LazyMemPipeline(
        config(),
        clients={"mpm": FakeBackend(keep_matching()), "answer": FakeBackend(lambda pr, s: "ok")},
        retriever=FixedRetriever([2, 10, 12]),
    )
    seq = p.answer(h, Q).to_dict()
    out = []
    threads = [threading.Thread(target=lambda: out.append(p.answer(h, Q).to_dict())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    def strip(d):
        d = dict(d, timings=None)
        return json.dumps(d, sort_keys=True)

    assert len(out) == 4 and all(strip(d) == strip(seq) for d in out)


def test_real_bm25_retrieval_runs_without_an_encoder():
    h = make_history()
    p = LazyMemPipeline(
        config(retrieval=RetrievalConfig(dense_model=None, n=3)),
        clients={"mpm": FakeBackend(keep_matching()), "answer": FakeBackend(lambda pr, s: "x")},
    )
    r = p.answer(h, dataclasses.replace(Q, text="Where does Biscuit go, the beach?"))
    assert r.ok and r.pool.stages == ("bm25", "rrf") and r.pool.positions[0] == 10
    assert "index" in r.timings and r.timings["retrieval"] >= 0  # first query built the BM25 index
    assert r.timings["total"] == pytest.approx(r.timings["retrieval"] + r.timings["processing"] + r.timings["answer"])
    assert "BISCUIT LOVES THE BEACH." in r.memory
    # no query word occurs in the history (BM25 needs exact tokens): an empty pool still answers
    r = p.answer(h, Q)
    assert r.ok and r.pool.positions == [] and r.windows == () and r.memory == "" and r.stats.n_windows == 0
    assert "index" not in r.timings  # the index was reused


def test_mpm_think_trace_is_stripped_before_the_gate_and_recorded():
    h = make_history()
    inner = keep_matching()
    mpm = FakeBackend(lambda p, s: "<think>which messages matter?</think>\n" + inner(p, s))
    r = LazyMemPipeline(
        config(window=WindowConfig(w=1)),
        clients={"mpm": mpm, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([2]),
    ).answer(h, Q)
    w = r.windows[0]
    assert w.verdict.ok and w.think == "<think>which messages matter?</think>" and w.raw.startswith("\n[")
    r = LazyMemPipeline(
        config(window=WindowConfig(w=1), strip_think=False),
        clients={"mpm": mpm, "answer": FakeBackend(["x"])},
        retriever=FixedRetriever([2]),
    ).answer(h, Q)
    assert r.windows[0].verdict.reason == "extra_text" and r.windows[0].think is None


class WordEncoder:
    """A bag-of-words 'encoder' over a tiny vocabulary (unit rows; no model load)."""

    VOCAB = ("biscuit", "beach", "porto", "lisbon", "lyon", "nurse", "corgi", "sister")

    def encode_docs(self, texts, progress=False):
        import numpy as np

        m = np.array([[t.lower().count(w) for w in self.VOCAB] + [0.01] for t in texts], dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    encode_queries = encode_docs


def test_nanomemory_ranks_sessions_by_best_turn_and_prunes_in_one_call():
    from lazymem.pipeline.baselines import session_turns

    h = make_history()
    q = Question(
        "q2", "single-session-user", "Does Biscuit like the beach?", "yes", "h", query_time="2023/06/01", evidence=(10,)
    )
    retriever = type("R", (), {"encoder": WordEncoder()})()
    mpm = CountingFake(["<think>short</think>Biscuit loves the beach."])
    answer = CountingFake(["yes"])
    p = LazyMemPipeline(
        config(method="nanomemory", nanomemory=NanoMemorySettings(top_k=2), retrieval=RetrievalConfig()),
        clients={"mpm": mpm, "answer": answer},
        retriever=retriever,
    )
    r = p.answer(h, q)
    assert r.ok and r.memory == "Biscuit loves the beach." and r.answer == "yes" and r.answer_prompt == "answer_text"
    assert [s["session_id"] for s in r.baseline["sessions"]] == ["s2", "s0"]  # both words, then one
    assert r.baseline["gold_shown"] == 1 and r.baseline["sessions"][0]["gold"] == [10]
    assert r.baseline["prune_think"] == "<think>short</think>"
    prompt = mpm.calls[0][0]
    assert len(mpm.invocations) == 1 and "Preserve original tokens, do not paraphrase." in prompt
    turns = [f"[{t[0].role}]: {t[0].text}\n[{t[1].role}]: {t[1].text}" for t in session_turns(h)[2][2]]
    assert f"### Session Date: 2023/05/12\nSession Content:\n{turns}\n" in prompt
    assert prompt.index("2023/05/12") < prompt.index("2023/05/10") and "2023/05/11" not in prompt
    assert prompt.rstrip().endswith("Question Date: 2023/06/01\nQuestion: Does Biscuit like the beach?\nAnswer:")
    assert "# Memory\nBiscuit loves the beach.\n\n# Answer" in answer.calls[0][0][1]["content"]
    assert set(r.timings) >= {"index", "retrieval", "processing", "answer", "total"}
    with pytest.raises(ConfigError, match="nanomemory ranks sessions by dense similarity"):
        config(method="nanomemory")
