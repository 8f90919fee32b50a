"""NanoMemory's pruning prompt fitted to the model's window (lazymem.pipeline.baselines.fit_sessions).

Hand cases with a word counter as the "tokenizer": whole sessions in rank order while they fit,
the top session cut to its best-matching turns, one over-long turn cut at its end, a budget the
template alone exceeds; then the pipeline's record (what was kept and cut) and the windows the
config derives from the mpm model.
"""

from __future__ import annotations

import numpy as np
import pytest

from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig, Sampling
from lazymem.pipeline import LazyMemPipeline, PipelineConfig, baselines
from lazymem.pipeline.baselines import NanoMemory, fit_sessions, prompt_budget
from lazymem.pipeline.methods.nanomemory import NanoMemorySettings
from lazymem.records import History, Message, Question
from lazymem.retrieve import RetrievalConfig


def words(text: str) -> int:
    return len(text.split())


def session(sid: str, turns: list[str], scores: list[float]) -> dict:
    return {"session_id": sid, "turn_texts": turns, "turn_scores": scores}


def build(shown) -> str:
    return "Q: where? " + " | ".join(" ".join(s["turn_texts"]) for s in shown)  # 2 words + the turns


SESSIONS = [
    session("a", ["a1 a1", "a2"], [0.9, 0.1]),  # 3 words
    session("b", ["b1 b1 b1"], [0.8]),  # 3 words (+1 for the separator)
    session("c", ["c1 c1 c1 c1"], [0.7]),
]  # 4 words (+1)


def test_everything_fits_nothing_is_cut():
    prompt, shown, fit = fit_sessions(build, SESSIONS, words, 100)
    assert shown == SESSIONS and prompt == build(SESSIONS)
    assert fit["sessions_kept"] == 3 and fit["sessions_dropped"] == [] and fit["tokens_cut"] == 0
    assert fit["prompt_tokens"] == fit["prompt_tokens_full"] == words(build(SESSIONS)) == 14


def test_lower_ranked_sessions_are_left_out_whole():
    prompt, shown, fit = fit_sessions(build, SESSIONS, words, 9)  # a + b = 9 words; + c = 14
    assert [s["session_id"] for s in shown] == ["a", "b"] and prompt == build(SESSIONS[:2])
    assert fit == {
        "budget": 9,
        "prompt_tokens_full": 14,
        "prompt_tokens": 9,
        "tokens_cut": 5,
        "sessions_ranked": 3,
        "sessions_kept": 2,
        "sessions_dropped": ["c"],
        "turns_cut": 0,
        "chars_cut": 0,
    }
    # rank order is kept: a smaller lower-ranked session never jumps a larger one that did not fit
    big_first = [session("x", ["x " * 20], [0.9]), session("y", ["y"], [0.5])]
    _, shown, fit = fit_sessions(build, big_first, words, 10)
    assert [s["session_id"] for s in shown] == ["x"] and fit["sessions_dropped"] == ["y"]


def test_a_top_session_too_long_alone_keeps_its_best_matching_turns_in_order():
    top = session("t", ["t1", "t2 t2 t2", "t3", "t4 t4"], [0.2, 0.1, 0.9, 0.5])
    prompt, shown, fit = fit_sessions(build, [top, SESSIONS[1]], words, 5)  # 2 + best turns t3, t4 = 5
    assert shown[0]["turn_texts"] == ["t3", "t4 t4"] and prompt == "Q: where? t3 t4 t4"
    assert fit["turns_cut"] == 2 and fit["sessions_kept"] == 1 and fit["sessions_dropped"] == ["b"]
    assert fit["prompt_tokens"] == 5 and fit["tokens_cut"] == words(build([top, SESSIONS[1]])) - 5


def test_a_single_turn_too_long_is_cut_at_its_end():
    long_turn = " ".join(f"w{i}" for i in range(50))
    prompt, shown, fit = fit_sessions(build, [session("t", [long_turn], [1.0])], words, 6)
    assert prompt.rstrip() == "Q: where? w0 w1 w2 w3" and fit["prompt_tokens"] == 6 and fit["turns_cut"] == 0
    assert fit["chars_cut"] == len(long_turn) - len(shown[0]["turn_texts"][0]) >= len(long_turn) - len("w0 w1 w2 w3 ")


def test_a_budget_the_template_alone_exceeds_is_a_config_error():
    with pytest.raises(ConfigError, match="without any session text is 2 tokens, over its budget of 1"):
        fit_sessions(build, SESSIONS, words, 1)


def test_the_window_comes_from_the_mpm_model_less_the_reply():
    assert prompt_budget(LLMConfig(backend="llamacpp"), 512, None) == (8192, 7680)  # llama.cpp's default n_ctx
    assert prompt_budget(LLMConfig(backend="llamacpp", extra_body={"n_ctx": 4096}), 512, None) == (4096, 3584)
    assert prompt_budget(LLMConfig(backend="llamacpp"), 512, 2048) == (2048, 1536)  # nanomemory_context wins
    assert prompt_budget(LLMConfig(backend="openai", model="m"), 512, None) == (None, None)  # a server: unknown
    with pytest.raises(ConfigError, match="leaves no room for a prompt"):
        prompt_budget(LLMConfig(backend="llamacpp"), 512, 512)
    with pytest.raises(ConfigError, match=r"pipeline.nanomemory: nanomemory.context=0: must be None"):
        PipelineConfig.from_dict({"method": "nanomemory", "nanomemory": {"context": 0}})
    with pytest.raises(ConfigError, match=r"pipeline.nanomemory: nanomemory.context=0"):  # the old spelling too
        PipelineConfig.from_dict({"method": "nanomemory", "nanomemory_context": 0})


def test_the_setting_counts_in_nanomemory_runs_only():
    from lazymem.eval import EvalConfig, config_fingerprint

    def fp(method: str, **nano) -> str:
        return config_fingerprint(
            EvalConfig.from_dict(
                {"dataset": "synthetic:messages=50,seed=0", "pipeline": {"method": method, "nanomemory": nano}}
            )
        )

    assert fp("rag") == fp("rag", context=4096, top_k=3)  # other methods' fingerprints stay as they were
    assert fp("nanomemory") != fp("nanomemory", context=4096)
    assert PipelineConfig(method="nanomemory").legacy_dict()["nanomemory_context"] is None
    assert PipelineConfig.from_dict({"method": "nanomemory", "nanomemory_context": 4096}).nanomemory.context == 4096
    assert (
        PipelineConfig.from_dict({"method": "nanomemory", "nanomemory": {"context": 4096}}).nanomemory.context == 4096
    )


# --- the pipeline: three sessions, a window that holds two ------------------------------------------


class WordEncoder:
    """A bag-of-words 'encoder' over a tiny vocabulary (unit rows; no model load)."""

    VOCAB = ("biscuit", "beach", "porto", "lisbon")

    def encode_docs(self, texts, progress=False):
        m = np.array([[t.lower().count(w) for w in self.VOCAB] + [0.01] for t in texts], dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    encode_queries = encode_docs


def history() -> History:
    texts = [
        "Biscuit loves the beach.",
        "Dogs often do.",  # s0: both query words
        "I work in Porto.",
        "Nice.",
        "Biscuit is a corgi.",
        "Cute.",  # s1: one
        "I moved to Lisbon.",
        "Great city.",
    ]  # s2: none
    sid = ["s0", "s0", "s1", "s1", "s1", "s1", "s2", "s2"]
    return History(
        "h",
        tuple(
            Message(i, f"m{i}", sid[i], i, "user" if i % 2 == 0 else "assistant", t, f"2023/05/1{sid[i][1]}")
            for i, t in enumerate(texts)
        ),
    )


def test_the_pipeline_prompt_fits_and_the_record_says_what_was_cut(monkeypatch):
    monkeypatch.setattr(baselines, "prompt_counter", lambda mpm: words)  # no tokenizer load in a unit test
    q = Question(
        "q", "single-hop", "Does Biscuit like the beach?", "yes", "h", query_time="2023/06/01", evidence=(0, 6)
    )
    full = NanoMemory(type("R", (), {"encoder": WordEncoder()})(), 3)
    n_full = words(full.prompt(q, full.rank_sessions(history(), q.text)))
    one_less = words(full.prompt(q, full.rank_sessions(history(), q.text)[:2]))
    mpm = FakeBackend(["Biscuit loves the beach."])
    c = PipelineConfig(
        method="nanomemory",
        nanomemory=NanoMemorySettings(top_k=3, context=one_less + 32),
        retrieval=RetrievalConfig(),
        mpm=LLMConfig(backend="fake", model="mpm-fake"),
        answer=LLMConfig(backend="fake", model="answer-fake"),
        mpm_sampling=Sampling(temperature=0.0, max_tokens=32),
    )
    p = LazyMemPipeline(
        c, clients={"mpm": mpm, "answer": FakeBackend(["yes"])}, retriever=type("R", (), {"encoder": WordEncoder()})()
    )
    r = p.answer(history(), q)
    assert r.ok and r.memory == "Biscuit loves the beach."
    fit = r.baseline["fit"]
    assert fit["window"] == one_less + 32 and fit["budget"] == one_less
    assert fit["sessions_kept"] == 2 and fit["sessions_dropped"] == ["s2"] and fit["prompt_tokens"] == one_less
    assert fit["prompt_tokens_full"] == n_full and fit["tokens_cut"] == n_full - one_less > 0
    assert [s["session_id"] for s in r.baseline["sessions"]] == ["s0", "s1"]  # the shown sessions
    assert r.baseline["gold_shown"] == 1 and r.baseline["n_gold"] == 2  # gold 6 (in s2) was left out
    assert "I moved to Lisbon." not in mpm.calls[0][0] and words(mpm.calls[0][0]) <= fit["budget"]


def test_without_a_known_window_the_prompt_is_sent_whole():
    q = Question("q", "single-hop", "Does Biscuit like the beach?", "yes", "h", evidence=(0,))
    c = PipelineConfig(
        method="nanomemory",
        nanomemory=NanoMemorySettings(top_k=3),
        retrieval=RetrievalConfig(),
        mpm=LLMConfig(backend="fake", model="mpm-fake"),
        answer=LLMConfig(backend="fake", model="a"),
    )
    mpm = FakeBackend(["x"])
    r = LazyMemPipeline(
        c, clients={"mpm": mpm, "answer": FakeBackend(["yes"])}, retriever=type("R", (), {"encoder": WordEncoder()})()
    ).answer(history(), q)
    assert r.ok and r.baseline["fit"] is None and len(r.baseline["sessions"]) == 3
    assert "I moved to Lisbon." in mpm.calls[0][0]
