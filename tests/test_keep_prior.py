"""The lexical KEEP prior (``pipeline.keep_prior`` -> ``Sampling.trace_keep_bias``): a per-line bias on the
trace's " KEEP" while that line is written, on the real SmolLM2 + shipped LazyMem-135M adapter through
llama.cpp and transformers, and its wiring through the pipeline (fake backend)."""

from __future__ import annotations

import json

import pytest
from test_grounded import TEXTS, _messages, _prompt, _Retriever

from lazymem.construct import lexical_scores
from lazymem.construct.gate import decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import window_texts
from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig, Sampling, make_client
from lazymem.llm.trace import trace_op_line, trace_ops
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.records import History, Question
from lazymem.retrieve import RetrievalConfig, WindowConfig


def _ops(client, line_bias, logit_bias=None):
    prompt = _prompt()
    s = Sampling(
        max_tokens=300,
        json_schema=decision_schema(3, None, 8, think=True),
        grounded=window_texts(prompt),
        logit_bias=logit_bias,
        trace_keep_bias=line_bias,
    )
    out = client.generate([prompt], s)[0]
    assert out.ok and out.finish_reason == "stop", out
    ops = [d.op for d in parse_decisions(strip_think(out.text).strip(), [0, 1, 2]).decisions]
    assert ops == trace_ops(out.text), out.text  # the array follows the biased trace
    return ops


def _check_backend(client):
    # each line's own bias decides it, in both directions: the prior is per line, not one global bias
    assert _ops(client, (30.0, -30.0, 30.0)) == ["KEEP", "DROP", "KEEP"]
    # beside a logit_bias, which still acts (llama-cpp-python drops a logit_bias passed with a logits processor
    # unless the processor carries it): " DROP" pushed everywhere (line 1, the dog's name, is KEEP without it),
    # line 2's prior pushes back
    assert _ops(client, None)[0] == "KEEP"
    assert _ops(client, (0.0, 40.0, 0.0), {" DROP": 8.0}) == ["DROP", "KEEP", "DROP"]


@pytest.mark.slow
def test_llama_cpp_trace_keep_bias_decides_each_line_on_the_shipped_adapter():
    pytest.importorskip("llama_cpp")
    _check_backend(
        make_client(
            LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=2, batch_size=1)
        )
    )


@pytest.mark.slow
def test_transformers_trace_keep_bias_decides_each_line_on_the_shipped_adapter():
    _check_backend(
        make_client(LLMConfig(backend="transformers", model="smollm2-offline", adapter="lazymem-135m", num_threads=1))
    )


def test_trace_op_line_is_the_line_whose_op_comes_next():
    text = '<think>\n1. user: "hi" -> KEEP\n2. assistant: "b" -> DROP\n</think>\n[{"op": "KEEP", "x": "->'
    due = {i: trace_op_line(text[:i]) for i in range(len(text) + 1)}
    first, second = text.index('" ->') + 4, text.index('"b" ->') + 6
    assert {i: d for i, d in due.items() if d is not None} == {first: 0, first + 1: 0, second: 1, second + 1: 1}
    # a quote that holds "->" (rare) reads as its line's op position too: the bias then acts there as well
    assert trace_op_line('<think>\n1. user: "a ->') == 0


def test_sampling_refuses_a_bad_trace_keep_bias():
    assert Sampling(trace_keep_bias=[1, 0.5]).trace_keep_bias == (1, 0.5)
    assert "trace_keep_bias" not in Sampling().as_dict()  # cache keys from before the field stay valid
    for bad in (["x"], [float("nan")], [True]):
        with pytest.raises(ConfigError, match="trace_keep_bias"):
            Sampling(trace_keep_bias=bad)


def pipeline_samplings(query: str, **settings) -> tuple[PipelineConfig, list[Sampling]]:
    """The config and the MPM Sampling of each window when the pipeline answers ``query`` over ``TEXTS`` (one
    message a window; a fake MPM that drops everything), count-constrained with a trace plus ``settings``."""
    h = History("h", tuple(_messages()))
    q = Question("q", "single-session-user", query, "Biscuit", "h", "2023/06/01", evidence=(0,))
    drop_all = json.dumps([{"op": "DROP", "compressed_content": "", "reason": ""}])
    mpm = FakeBackend(lambda prompt, sampling: drop_all)
    c = PipelineConfig(
        retrieval=RetrievalConfig(dense_model=None),
        mpm=LLMConfig(backend="fake"),
        answer=LLMConfig(backend="fake"),
        window=WindowConfig(w=0, L=1, s=1),
        lazymem=dict(structured=True, structured_trace=True, **settings),
    )
    LazyMemPipeline(c, clients={"mpm": mpm, "answer": FakeBackend(["x"])}, retriever=_Retriever()).answer(h, q)
    return c, [s for _, s in mpm.calls]


def test_the_pipeline_sends_each_window_its_messages_lexical_priors():
    query = "Which corgi did I adopt?"
    c, samplings = pipeline_samplings(query, keep_prior=4.0)
    want = [tuple(round(4.0 * x, 6) for x in lexical_scores(query, texts)) for texts in ([TEXTS[0]], [TEXTS[2]])]
    assert [s.trace_keep_bias for s in samplings] == want and want[0][0] > 0 == want[1][0]
    assert c.to_dict()["lazymem"]["keep_prior"] == 4.0 and "keep_prior" not in PipelineConfig().legacy_dict()


def test_the_dense_prior_adds_the_real_minilm_cosine_to_each_window_message():
    """pipeline.keep_prior_dense: each window's priors are keep_prior x word overlap + keep_prior_dense x the
    query-message cosine under the real all-MiniLM-L6-v2 (the encoder the shipped weight was chosen with)."""
    from lazymem.construct.prior import KeepPrior, dense_scores

    q = "Which corgi did I adopt?"
    cos = dense_scores(q, TEXTS)
    assert len(cos) == len(TEXTS) and all(-1.0 <= v <= 1.0 for v in cos)
    assert cos[0] == max(cos), cos  # the corgi message is the nearest of the three
    assert dense_scores(q, []) == []
    both = KeepPrior(lexical=4.0, dense=10.0)(q, TEXTS)
    assert both == tuple(round(4.0 * x + 10.0 * v, 6) for x, v in zip(lexical_scores(q, TEXTS), cos))
    c, samplings = pipeline_samplings(q, keep_prior_dense=10.0)
    assert [s.trace_keep_bias for s in samplings] == [KeepPrior(dense=10.0)(q, [t]) for t in (TEXTS[0], TEXTS[2])]
    d = c.to_dict()
    assert (d["lazymem"]["keep_prior_dense"], d["lazymem"]["keep_prior_model"]) == (10.0, "minilm-offline")
    assert "keep_prior_dense" not in PipelineConfig().legacy_dict()  # older run fingerprints stay valid
    with pytest.raises(ConfigError, match="keep_prior_dense"):
        PipelineConfig(
            mpm=LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:8000/v1"),
            lazymem={"keep_prior_dense": 1.0},
        )
    with pytest.raises(ConfigError, match="keep_prior_dense"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), lazymem={"keep_prior_dense": float("inf")})
    with pytest.raises(ConfigError, match="dense"):
        KeepPrior(dense=-1.0)


def test_backends_without_token_control_refuse_the_keep_prior_plainly():
    server = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ConfigError, match="keep_prior"):
        PipelineConfig(mpm=server, lazymem={"keep_prior": 2.0})
    with pytest.raises(ConfigError, match="keep_prior"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), lazymem={"keep_prior": -1.0})
    with pytest.raises(ConfigError, match="trace_keep_bias must be unset"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), mpm_sampling=Sampling(trace_keep_bias=[1.0]))
    with pytest.raises(ConfigError, match="trace_keep_bias"):
        make_client(server).generate(["x"], Sampling(trace_keep_bias=[1.0]))


def _probe_record(tmp_path, texts, model, evidence=(0,), question="Where in Lisbon do I live?"):
    """A hand-made ``lazymem train keep-bias`` record: one history of ``texts``, one question whose gold is
    ``evidence``, its retrieval window around message 1, and ``model``'s P(KEEP) by position."""
    from lazymem.construct import window_prompts
    from lazymem.records import Message
    from lazymem.retrieve import build_windows

    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    q = Question("q", "single-session-user", question, "Lisbon", "h", "2023/06/01", evidence=tuple(evidence))
    prompts = window_prompts(h, q, build_windows(h, [1], gold=q.evidence))
    rows = [
        {
            "prompt": list(p.messages),
            "decision_positions": list(p.decision_positions),
            "gold_labels": list(p.gold_labels),
            "window_shape": [1, 4, 3],
        }
        for p in prompts
    ]
    pairs = tmp_path / f"pairs{len(list(tmp_path.glob('pairs*')))}.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    record = {
        "settings": {"pairs": str(pairs), "limit": 2, "seed": 0, "output": "hand"},
        "scores": [[[model[p], g] for p, g in zip(r["decision_positions"], r["gold_labels"])] for r in rows],
    }
    path = pairs.with_name(pairs.stem.replace("pairs", "record") + ".json")
    path.write_text(json.dumps(record), encoding="utf-8")
    return pairs, path, q


def test_keep_prior_choice_rereads_a_probe_record_with_the_word_overlap(tmp_path):
    """A probe record whose model ranks the gold line (sharing the query's words) under a non-gold one: no bias
    alone keeps the gold without the distractor, a prior on word overlap does, and the choice finds it."""
    from lazymem.train.prior import choose_keep_prior, grid_row, scored_windows

    texts = ["I moved to Lisbon last spring.", "My cats love the balcony.", "Traffic is awful today."]
    pairs, path, q = _probe_record(tmp_path, texts, {0: 0.2, 1: 0.3, 2: 0.05})  # the gold Lisbon line under the cats
    record = json.loads(path.read_text(encoding="utf-8"))
    windows = scored_windows(record)
    assert [(round(x, 2), c, g) for w in windows for _, x, c, g in w] == [
        (0.5, 0.0, True),
        (0.0, 0.0, False),
        (0.0, 0.0, False),
    ]
    # the window evaluation decodes each window with its own priors (one call per window)
    from lazymem.train.heldout import WindowEvalConfig, evaluate_windows

    fake = FakeBackend(lambda prompt, sampling: "[]")
    evaluate_windows(
        WindowEvalConfig(data=str(pairs), mpm=LLMConfig(backend="fake"), keep_prior=3.0),
        None,
        client=fake,
        progress=False,
    )
    assert [s.trace_keep_bias for _, s in fake.calls] == [(1.5, 0.0, 0.0)]
    from lazymem.construct.prior import KeepPrior

    fake = FakeBackend(lambda prompt, sampling: "[]")
    evaluate_windows(
        WindowEvalConfig(data=str(pairs), mpm=LLMConfig(backend="fake"), keep_prior=3.0, keep_prior_dense=5.0),
        None,
        client=fake,
        progress=False,
    )
    assert [s.trace_keep_bias for _, s in fake.calls] == [KeepPrior(3.0, 5.0)(q.text, texts)]
    with pytest.raises(ConfigError, match="keep_prior_dense"):
        WindowEvalConfig(data=str(pairs), mpm=LLMConfig(backend="fake"), keep_prior_dense=-2.0)
    with pytest.raises(ConfigError, match="keep_prior"):
        WindowEvalConfig(
            data=str(pairs), mpm=LLMConfig(backend="openai", model="m", base_url="http://x/v1"), keep_prior=1.0
        )
    rec = choose_keep_prior([str(path)], [str(path)], dense_priors=(0.0,))
    c = rec["chosen"]
    assert c["keep_prior"] > 0 and (c["gold_recall"], c["nongold_keep_rate"]) == (1.0, 0.0)
    assert c["keep_prior_dense"] == 0.0 and rec["settings"]["dense_model"] is None  # no encoder loaded
    assert rec["no_prior"]["mean_r_act"] < c["mean_r_act"]
    reported = {k: v for k, v in rec["reported"][str(path)]["chosen"].items() if k != "tokens_per_window"}
    assert reported == grid_row(windows, c["keep_prior"], c["keep_bias"])
    # with a dense grid, the cosine under the real MiniLM enters each line: the best without it is the choice
    # above, and the chosen triple is re-read from the same lines
    dense = choose_keep_prior([str(path)], [str(path)], dense_priors=(0.0, 4.0))
    assert dense["settings"]["dense_model"] == "minilm-offline" and dense["no_dense"] == rec["no_dense"]
    assert dense["chosen"]["mean_r_act"] >= c["mean_r_act"]
    lines = scored_windows(record, dense_model="minilm-offline")
    assert [c for w in lines for _, _, c, _ in w] != [0.0] * 3
    d = dense["chosen"]
    reported = {k: v for k, v in dense["reported"][str(path)]["chosen"].items() if k != "tokens_per_window"}
    assert reported == grid_row(lines, d["keep_prior"], d["keep_bias"], d["keep_prior_dense"])
    with pytest.raises(ConfigError, match="development record"):
        choose_keep_prior([])


def test_keep_prior_counts_each_triples_tokens_against_the_real_extractive_and_a_budget_binds(tmp_path, monkeypatch):
    """Each grid row's tokens a window are the Qwen3 tokens of what it keeps; the extractive reference is the
    real ExtractiveProcessor's decisions on the same windows; ``budget="extractive"`` keeps the choice within
    extractive's tokens, here by keeping nothing, because the gold shares no word with the question."""
    from lazymem.construct.extractive import ExtractiveProcessor
    from lazymem.llm import DIR_ENV, count_tokens, qwen3_tokenizer_dir
    from lazymem.records import Message
    from lazymem.train.prior import choose_keep_prior, extractive_row, scored_windows, window_tokens
    from lazymem.train.probe import probed_rows, window_messages

    if not (qwen3_tokenizer_dir() / "tokenizer.json").is_file():
        pytest.skip("the Qwen3 tokenizer is not fetched (bash scripts/fetch_qwen3_tokenizer.sh)")
    texts = ["We bought the flat by the river in March.", "Lisbon traffic is awful today.", "My cats sleep a lot."]
    _, path, q = _probe_record(tmp_path, texts, {0: 0.9, 1: 0.02, 2: 0.01})  # the model knows the gold; overlap not
    record = json.loads(path.read_text(encoding="utf-8"))
    rows = probed_rows(record["settings"])
    tokens = window_tokens(record, rows)
    assert tokens == [[count_tokens(m["content"]) for m in window_messages(r["prompt"])] for r in rows]
    windows = scored_windows(record, rows)
    ext = extractive_row(windows, tokens)
    real = ExtractiveProcessor()  # its own decisions on the same window messages, verbatim
    kept = 0
    for r in rows:
        ms = [
            Message(i, f"s#{i}", "s", i, "user", m["content"], "d") for i, m in enumerate(window_messages(r["prompt"]))
        ]
        kept += sum(
            count_tokens(d["compressed_content"])
            for d in json.loads(real.process(q.text, "d", ms))
            if d["op"] == "KEEP"
        )
    assert ext["tokens_per_window"] == kept / len(rows) and kept == count_tokens(texts[1])  # "Lisbon" only
    free = choose_keep_prior([str(path)], dense_priors=(0.0,))
    assert free["chosen"]["gold_recall"] == 1.0 and free["chosen"]["tokens_per_window"] > ext["tokens_per_window"]
    assert free["extractive"] == ext and free["settings"]["budget"] is None
    assert free["by_shape"][str(path)]["1x4x3"]["extractive"] == ext
    for budget in ("extractive", "extractive-per-shape"):
        held = choose_keep_prior([str(path)], dense_priors=(0.0,), budget=budget)
        c = held["chosen"]
        assert c["tokens_per_window"] <= ext["tokens_per_window"] and c["gold_recall"] == 0.0, budget
        assert "extractive" in c["by"] and held["settings"]["budget"] == budget
    with pytest.raises(ConfigError, match="budget"):
        choose_keep_prior([str(path)], dense_priors=(0.0,), budget="rag")
    # without the tokenizer: no tokens recorded (never 0), and a budget refuses, naming the fetch command
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "no-tokenizer"))
    assert "tokens_per_window" not in choose_keep_prior([str(path)], dense_priors=(0.0,))["chosen"]
    with pytest.raises(ConfigError, match="fetch_qwen3_tokenizer"):
        choose_keep_prior([str(path)], dense_priors=(0.0,), budget="extractive")


def test_mpm_decoding_card_reads_the_shipped_adapters_decoding_and_refuses_a_clash():
    """pipeline.mpm_decoding: card = the decoding the adapter's model card ships with (v2: count-constrained with
    its trace, grounded, the lexical prior and its bias; v1: free generation and its bias), resolved at load time
    so a run's fingerprint is that of the same decoding written out; a config that says otherwise is refused."""
    from lazymem.pipeline.config import shipped_decoding, shipped_writer

    mpm = {"backend": "llamacpp", "model": "smollm2-offline", "adapter": "lazymem-135m"}
    fields, bias = shipped_decoding("lazymem-135m")
    writer = shipped_writer("lazymem-135m")  # v2's content adapter writes each KEEP's content
    assert writer == "lazymem-135m-v2-writer" and shipped_writer("lazymem-135m-v1") is None
    card = PipelineConfig.from_dict({"mpm": mpm, "mpm_decoding": "card", "mpm_sampling": {"max_tokens": 1536}})
    written = PipelineConfig.from_dict(
        {
            "mpm": {**mpm, "extra_body": {"content_adapter": writer, "decode": "batched"}},
            **fields,
            "mpm_sampling": {"max_tokens": 1536, "logit_bias": {" KEEP": bias}},
        }
    )
    assert card == written and card.to_dict() == written.to_dict() and "mpm_decoding" not in card.to_dict()
    # on llama.cpp the windows of a question decode in one batch (the same decisions: tests/test_llamacpp_batch.py)
    assert card.mpm.extra_body == {"content_adapter": writer, "decode": "batched"}
    one = {**mpm, "extra_body": {"decode": "sequential"}}
    assert PipelineConfig.from_dict({"mpm": one, "mpm_decoding": "card"}).mpm.extra_body["decode"] == "sequential"
    hf = PipelineConfig.from_dict(
        {"mpm": {**mpm, "backend": "transformers", "extra_body": {"content_adapter": writer}}, "mpm_decoding": "card"}
    )  # saying the card's writer again is no clash
    assert hf.mpm.extra_body == {"content_adapter": writer}
    own = PipelineConfig.from_dict(
        {
            "mpm": {**mpm, "extra_body": {"content_adapter": None}},
            "mpm_decoding": "card",
            "mpm_sampling": {"max_tokens": 1536},
        }
    )  # null: its decisions, its own contents
    batched = {**mpm, "extra_body": {"decode": "batched"}}
    assert (
        own.mpm.extra_body == {"decode": "batched"}
        and own.to_dict()
        == PipelineConfig.from_dict(
            {"mpm": batched, **fields, "mpm_sampling": {"max_tokens": 1536, "logit_bias": {" KEEP": bias}}}
        ).to_dict()
    )
    with pytest.raises(ConfigError, match="content_adapter: 'lazymem-135m-v1'"):
        PipelineConfig.from_dict(
            {"mpm": {**mpm, "extra_body": {"content_adapter": "lazymem-135m-v1"}}, "mpm_decoding": "card"}
        )
    with pytest.raises(ConfigError, match="backend 'openai' cannot"):
        PipelineConfig.from_dict({"mpm": {**mpm, "backend": "openai"}, "mpm_decoding": "card"})
    s = card.lazymem
    assert (s.structured, s.structured_trace, s.grounded) == (True, True, True) and s.keep_prior > 0
    v1 = PipelineConfig.from_dict({"mpm": {**mpm, "adapter": "lazymem-135m-v1"}, "mpm_decoding": "card"})
    assert not v1.lazymem.structured and not v1.lazymem.keep_prior and v1.mpm_sampling.logit_bias == {" KEEP": 1.734601}
    with pytest.raises(ConfigError, match="keep_prior: 2.0"):
        PipelineConfig.from_dict({"mpm": mpm, "mpm_decoding": "card", "keep_prior": 2.0})
    with pytest.raises(ConfigError, match="logit_bias"):
        PipelineConfig.from_dict({"mpm": mpm, "mpm_decoding": "card", "mpm_sampling": {"logit_bias": {" KEEP": 9}}})
    with pytest.raises(ConfigError, match="only a shipped"):
        PipelineConfig.from_dict({"mpm": {**mpm, "adapter": "runs/x/final"}, "mpm_decoding": "card"})
    with pytest.raises(ConfigError, match="pipeline.mpm.adapter"):
        PipelineConfig.from_dict({"mpm": {**mpm, "adapter": None}, "mpm_decoding": "card"})
    with pytest.raises(ConfigError, match="'card'"):
        PipelineConfig.from_dict({"mpm": mpm, "mpm_decoding": "shipped"})
