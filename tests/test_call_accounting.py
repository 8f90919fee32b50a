"""Every call's tokens and seconds: engine counts as the engine gives them, by stage in records, a question's
bill in summary.json, and older records that still summarize without it."""

from __future__ import annotations

import json

import pytest

from lazymem.eval.records import CallMeta, RunRecord
from lazymem.eval.scoring import summarize
from lazymem.eval.usage import record_usage, summarize_usage
from lazymem.llm import Completion, LLMConfig, Sampling, make_client
from lazymem.llm.usage import call_usage, chatml, engine_pass, qwen3_count, with_qwen3
from lazymem.pipeline.results import _completion_meta

PREFIX = "You label chat messages for a memory. " * 20  # a long shared instruction, as a window prompt has


def _have_qwen3() -> bool:
    return qwen3_count(["x"]) is not None


needs_qwen3 = pytest.mark.skipif(
    not _have_qwen3(), reason="needs the Qwen3 tokenizer (scripts/fetch_qwen3_tokenizer.sh)"
)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """Its own LAZYMEM_CACHE (LLM and embedding caches), the real Qwen3 tokenizer kept."""
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))


# --- an OpenAI-compatible server ------------------------------------------------------------------


@needs_qwen3
def test_server_counts_are_the_servers_usage_with_its_cached_tokens():
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer

    family = ScriptedQwen3(reply=lambda messages: "Lisbon, since May.")
    with ScriptedServer(family) as url:
        client = make_client(
            LLMConfig(
                backend="openai",
                base_url=url,
                model="Qwen/Qwen3-8B",
                chat_template_kwargs={"enable_thinking": False},
                max_retries=0,
            )
        )
        prompts = [PREFIX + "Where does the user live?", PREFIX + "When did the user move?"]
        outs = [client.generate([p], Sampling(max_tokens=64))[0] for p in prompts]  # one after the other
    ids = [family.prompt_ids(body) for body in family.requests]
    shared = next(i for i, (a, b) in enumerate(zip(*ids)) if a != b)
    assert [c.prompt_tokens for c in outs] == [len(x) for x in ids]
    assert [c.completion_tokens for c in outs] == [family.count(c.text) for c in outs]
    assert [c.cached_prompt_tokens for c in outs] == [0, shared] and shared > 100
    meta = CallMeta.from_json(_completion_meta(outs[1]))
    assert (meta.prompt_tokens, meta.cached_prompt_tokens, meta.completion_tokens) == (
        len(ids[1]),
        shared,
        family.count(outs[1].text),
    )


@needs_qwen3
def test_a_thinking_budget_call_counts_both_requests_as_passes():
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer

    family = ScriptedQwen3(reply=lambda messages: ("The user said Lisbon.", "Lisbon"))
    with ScriptedServer(family) as url:
        client = make_client(
            LLMConfig(backend="openai", base_url=url, model="Qwen/Qwen3-8B", thinking_budget=32, max_retries=0)
        )
        c = with_qwen3(PREFIX, client.generate([PREFIX], Sampling(max_tokens=128))[0])
    assert c.ok and [p["name"] for p in c.passes] == ["think", "answer"]
    served = [family.prompt_tokens(body) for body in family.requests]
    assert [p["prompt_tokens"] for p in c.passes] == served
    assert c.passes[1]["cached_prompt_tokens"] >= served[0] - 1  # the answer request re-reads the prompt
    usage = record_usage(
        RunRecord.from_json({"question_id": "q", "method": "rag", "status": "ok", "answer_output": _completion_meta(c)})
    )
    assert usage["answer"]["prompt_tokens"] == sum(served)
    assert usage["answer"]["completion_tokens"] == c.completion_tokens
    assert usage["answer"]["qwen3_prompt_tokens"] > usage["answer"]["prompt_tokens"] / 2


# --- llama.cpp with the shipped GGUF ----------------------------------------------------------------


@pytest.mark.slow
def test_llamacpp_counts_are_the_model_tokenizers_and_its_prefix_reuse():
    pytest.importorskip("llama_cpp")
    from lazymem.construct.gate import decision_schema

    client = make_client(
        LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=2, batch_size=1)
    )
    prompt = [{"role": "user", "content": PREFIX + "Label: 1. user: I moved to Lisbon."}]
    first, again = (client.generate([prompt], Sampling(max_tokens=12))[0] for _ in range(2))
    _, tok = client.load()
    n_prompt = len(tok(client.render(prompt), add_special_tokens=False)["input_ids"])
    assert first.ok and first.prompt_tokens == n_prompt
    assert first.completion_tokens == len(tok(first.text, add_special_tokens=False)["input_ids"])
    assert again.cached_prompt_tokens == n_prompt - 1  # all held but the token evaluated again for its logits
    # a trace-following decoding: the trace pass, then the array pass that re-reads the prompt and the trace
    user = (
        "Query: Where does the user live?\nMessages:\n1. user: I moved to Lisbon.\n2. assistant: Nice!\n"
        "3. user: The cat sleeps.\nLabel each message KEEP or DROP as a JSON array."
    )
    two = client.generate(
        [[{"role": "user", "content": user}]], Sampling(max_tokens=400, json_schema=decision_schema(3, think=True))
    )[0]
    assert two.ok and [p["name"] for p in two.passes] == ["trace", "array"], two
    n_user = len(tok(client.render([{"role": "user", "content": user}]), add_special_tokens=False)["input_ids"])
    trace = two.passes[1]["reread"]
    assert two.prompt_tokens == two.passes[0]["prompt_tokens"] == n_user
    assert two.passes[1]["prompt_tokens"] == n_user + len(tok(trace, add_special_tokens=False)["input_ids"])
    assert two.passes[1]["cached_prompt_tokens"] >= n_user  # the prompt's KV cache, reused
    assert two.completion_tokens == sum(p["completion_tokens"] for p in two.passes)
    meta = call_usage(two)
    assert "reread" not in meta["passes"][1] and meta["cached_prompt_tokens"] == sum(
        p["cached_prompt_tokens"] for p in two.passes
    )


# --- records and summary -----------------------------------------------------------------------------


def test_passes_sum_and_unknown_counts_stay_unknown():
    calls = [
        Completion(
            "a", 50, 5, 0.5, passes=(engine_pass("trace", 50, 0, 3, 0.25), engine_pass("array", 53, 50, 2, 0.25))
        ),
        Completion("b", 40, 4, 0.5),  # an engine that does not say what it cached
    ]
    rec = RunRecord.from_json(
        {"question_id": "q", "method": "lazymem", "status": "ok", "windows": [], "answer_output": None}
    )
    usage = record_usage(rec)
    assert usage["mpm"] == {
        "calls": 0,
        "prompt_tokens": 0,
        "cached_prompt_tokens": 0,
        "completion_tokens": 0,
        "seconds": 0,
        "qwen3_prompt_tokens": 0,
        "qwen3_completion_tokens": 0,
    }
    from lazymem.eval.usage import stage_usage

    stage = stage_usage([CallMeta.from_json(_completion_meta(c)) for c in calls])
    assert stage["prompt_tokens"] == 50 + 53 + 40 and stage["completion_tokens"] == 5 + 4
    assert "cached_prompt_tokens" not in stage and "qwen3_prompt_tokens" not in stage  # not measured, never 0


def test_a_completion_without_usage_is_stored_and_read_back_as_before():
    c = Completion("x", 3, 1, 0.1)
    assert set(c.to_dict()) == {
        "text",
        "prompt_tokens",
        "completion_tokens",
        "latency_s",
        "cached",
        "error",
        "model",
        "finish_reason",
    }
    p = Completion("x", 3, 1, 0.1, cached_prompt_tokens=2, passes=(engine_pass("trace", 3, 2, 1, 0.1),))
    assert Completion.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@needs_qwen3
def test_qwen3_counts_read_the_chat_format_once_per_pass():
    from lazymem.llm import count_tokens

    c = Completion(
        "<think>t</think>[]",
        9,
        4,
        0.1,
        passes=(engine_pass("trace", 9, 0, 2, 0.1), engine_pass("array", 11, 9, 2, 0.1, reread="<think>t</think>")),
    )
    q = with_qwen3("Hi", c)
    head = chatml("Hi")
    assert q.qwen3_prompt_tokens == 2 * count_tokens(head) + count_tokens("<think>t</think>")
    assert q.qwen3_completion_tokens == count_tokens(c.text)
    assert count_tokens(head) == 9  # <|im_start|> user \n Hi <|im_end|> \n <|im_start|> assistant \n


def test_mem0_ingestion_is_amortized_over_the_questions_that_used_the_store():
    def rec(qid, store, calls):
        ingestion = {
            "n_chunks": 2,
            "usage": {
                "calls": calls,
                "prompt_tokens": 900 * calls,
                "completion_tokens": 60 * calls,
                "seconds": 2.0 * calls,
                "chunks": calls,
            },
        }
        r = RunRecord.from_json(
            {
                "question_id": qid,
                "method": "mem0",
                "status": "ok",
                "question": {"type": "t"},
                "windows": [],
                "answer_output": {
                    "model": "m",
                    "prompt_tokens": 100,
                    "completion_tokens": 5,
                    "latency_s": 0.1,
                    "cached": False,
                    "finish_reason": "stop",
                },
                "baseline": {"method": "mem0", "store": store, "ingestion": ingestion},
            }
        )
        return r.with_(usage=record_usage(r))

    recs = [rec("q1", "h1", 2), rec("q2", "h1", 2), rec("q3", "h2", 2), rec("q4", "h2", 2)]
    u = summarize_usage(recs)
    assert u["per_question"]["ingestion"]["stores"] == 2 and u["per_question"]["ingestion"]["questions"] == 4
    assert u["per_question"]["ingestion"]["prompt_tokens"] == 2 * 1800 / 4
    assert u["all_call_tokens"] == 105 + (1800 + 120) * 2 / 4
    partial = [rec("q1", "h1", 1)]  # a store measured for 1 of its 2 chunks: no whole bill
    assert "ingestion" not in summarize_usage(partial)["per_question"]
    assert "all_call_tokens" not in summarize_usage(partial)


def test_an_old_record_without_usage_summarizes_with_the_fields_absent():
    old = {
        "question_id": "q1",
        "method": "lazymem",
        "status": "ok",
        "question": {"type": "single-hop"},
        "windows": [
            {
                "positions": [1],
                "hits": None,
                "gold": None,
                "merged_id": 0,
                "sub_id": 0,
                "n_prev_bridge": 0,
                "n_next_bridge": 0,
                "decision_positions": [1],
                "raw": "[]",
                "think": None,
                "output": {
                    "model": "m",
                    "prompt_tokens": 400,
                    "completion_tokens": 30,
                    "latency_s": 1.0,
                    "cached": False,
                    "finish_reason": "stop",
                    "error": None,
                },
                "verdict": None,
                "decisions": [],
            }
        ],
        "timings": {"processing": 1.0, "total": 1.5},
    }
    r = RunRecord.from_json(old)
    assert r.usage is None and r.to_json() == old
    s = summarize([old])
    assert "usage" not in s
    from lazymem.eval.table import table_row

    row = table_row(s)
    assert all(row.get(k) is None for k in ("mpm_tokens_in", "mpm_tokens_out", "all_call_tokens"))


def test_a_fake_eval_records_usage_by_stage_and_summarizes_it(tmp_path, private_cache):
    import yaml
    from fakerun import FAKE, SYNTH

    from lazymem.cli import main as cli_main

    pipeline = {
        "method": "lazymem",
        "retrieval": {"dense_model": None, "n": 3},
        "window": {"w": 1},
        "mpm": FAKE,
        "answer": FAKE,
    }
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 3, "judge": "none", "pipeline": pipeline}))
    assert cli_main(["eval", str(base), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    recs = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for r in recs:
        answer, windows = r["answer_output"], [w["output"] for w in r["windows"]]
        assert r["usage"]["mpm"]["calls"] == len(windows) > 0
        assert r["usage"]["mpm"]["prompt_tokens"] == sum(w["prompt_tokens"] for w in windows)
        assert r["usage"]["mpm"]["completion_tokens"] == sum(w["completion_tokens"] for w in windows)
        assert r["usage"]["answer"]["prompt_tokens"] == answer["prompt_tokens"]
        assert r["usage"]["answer"]["completion_tokens"] == answer["completion_tokens"]
        if _have_qwen3():
            assert r["usage"]["answer"]["qwen3_prompt_tokens"] == answer["qwen3_prompt_tokens"] > 0
    u = summary["usage"]
    mpm_in = sum(r["usage"]["mpm"]["prompt_tokens"] for r in recs) / 3
    assert u["n"] == 3 and u["mpm_tokens_in"] == pytest.approx(mpm_in) and u["mpm_tokens_out"] > 0
    mean = sum(s["prompt_tokens"] + s["completion_tokens"] for r in recs for s in r["usage"].values()) / 3
    assert u["all_call_tokens"] == pytest.approx(mean)
    assert set(u["seconds_by_stage"]) >= {"retrieval", "processing", "answer", "total"}
    if _have_qwen3():
        assert u["all_call_tokens_qwen3"] > 0
    from lazymem.eval.table import table_row

    row = table_row(summary)
    assert row["all_call_tokens"] == pytest.approx(mean) and row["mpm_tokens_in"] == pytest.approx(mpm_in)
    assert cli_main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep"), "--no-png"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    bill = md.split("## The bill (a question, means; the judge not included)")[1].split("\n## ")[0]
    assert f"| run | {mpm_in:.1f} | {u['mpm_tokens_out']:.1f} | {mean:.1f} |" in bill


def test_the_pareto_figure_can_put_all_call_tokens_on_its_x_axis():
    from lazymem.errors import ConfigError
    from lazymem.viz.pareto import pareto_figure

    rows = [
        {
            "system": "a",
            "score": 0.5,
            "memory_tokens": 100,
            "all_call_tokens": 5000,
            "latency_s": {"total": {"mean": 1}},
        },
        {
            "system": "b",
            "score": 0.7,
            "memory_tokens": 900,
            "all_call_tokens": 2000,
            "latency_s": {"total": {"mean": 2}},
        },
    ]
    default, calls = pareto_figure(rows), pareto_figure(rows, tokens="all_call_tokens")
    assert sorted(default.data[0].x) == [100, 900] and sorted(calls.data[0].x) == [2000, 5000]
    assert calls.layout.xaxis.title.text.startswith("all-call tokens")
    assert default.layout.xaxis.title.text.startswith("answer-context memory tokens")
    with pytest.raises(ConfigError, match="tokens"):
        pareto_figure(rows, tokens="answer_tokens")


def test_the_report_draws_what_each_memory_holds_against_its_all_call_tokens_and_seconds(tmp_path, private_cache):
    """Two real (fake-model) runs through the real report: the memory-cost figure puts each row's evidence
    recall and answer recall in memory at its all-call tokens and processing seconds, and is written beside
    the Pareto figure; a row without all-call tokens (a run made before them) is left out of those panels only."""
    import yaml
    from fakerun import FAKE, SYNTH

    from lazymem.eval import evaluate
    from lazymem.eval.config import EvalConfig
    from lazymem.notebooks.compare import report_cost_figure, report_with_figures
    from lazymem.viz.cost import memory_cost_figure

    runs = []
    for method in ("lazymem", "extractive"):
        pipeline = {"method": method, "retrieval": {"dense_model": None, "n": 3}, "window": {"w": 1}}
        pipeline |= {"mpm": FAKE, "answer": FAKE}
        cfg = EvalConfig.from_dict(yaml.safe_load(yaml.safe_dump({"dataset": SYNTH, "limit": 3, "pipeline": pipeline})))
        evaluate(cfg, tmp_path / method, progress=False)
        runs.append(tmp_path / method)
    rep, _ = report_with_figures(runs, out=tmp_path / "report", png=False, n_resamples=200)
    assert (tmp_path / "report" / "cost.html").is_file()
    fig = report_cost_figure(rep)
    rows = {r["system"]: r for r in rep["rows"]}
    assert all(r["all_call_tokens"] and r["evidence_recall"] is not None for r in rows.values())
    points = [t for t in fig.data if t.mode == "markers+text"]  # the 4 panels, in order: (ev, tokens), (ev, s), ...
    assert len(points) == 4
    for trace, (measure, cost) in zip(
        points,
        [(m, c) for m in ("evidence_recall", "answer_recall_in_memory") for c in ("all_call_tokens", "processing_s")],
    ):
        for name, x, y in zip(trace.text, trace.x, trace.y):
            want = rows[name]["latency_s"]["processing"]["mean"] if cost == "processing_s" else rows[name][cost]
            assert (x, y) == (pytest.approx(want), pytest.approx(rows[name][measure]))
    old = [dict(rows["lazymem"], all_call_tokens=None), rows["extractive"]]
    partial = memory_cost_figure(old)
    token_panel = [t for t in partial.data if t.mode == "markers+text"][0]
    assert list(token_panel.text) == ["extractive"] and "not in every panel" in partial.layout.title.text
    assert report_cost_figure({"rows": [{"system": "x", "evidence_recall": None}]}) is None
