"""Independent decisions (``pipeline.trace_independent`` -> ``Sampling.trace_independent``): each trace line's op
decided with every earlier op DROP, on the real SmolLM2 + shipped LazyMem-135M adapter through llama.cpp and
transformers (the decision at each line is the teacher-forced drop-context one, biases added), and its wiring
through the configs and the pipeline (fake backend)."""

from __future__ import annotations

import math

import pytest
from test_grounded import _prompt

from lazymem.construct.gate import decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import window_texts
from lazymem.errors import ConfigError
from lazymem.llm import LLMConfig, Sampling, make_client
from lazymem.llm.trace import IndependentOps, set_ops, trace_ops
from lazymem.pipeline import PipelineConfig


def _drop_context_logits() -> list[float]:
    """logit P(KEEP) of each line of ``_prompt()``'s window, read (transformers, fp32) with every earlier op DROP."""
    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.probe import keep_probe

    model = load_policy("smollm2-offline", "lazymem-135m", trainable=False).eval()
    rec = keep_probe(
        [{"prompt": _prompt(), "gold_labels": [True, False, False]}],
        model,
        load_tokenizer("smollm2-offline"),
        context="drop",
    )
    return [math.log(p / (1 - p)) for p, _ in rec["scores"][0]]


def _check_backend(client, z: list[float]) -> None:
    prompt = _prompt()

    def ops(line_bias, independent=True):
        s = Sampling(
            max_tokens=300,
            json_schema=decision_schema(3, None, 8, think=True),
            grounded=window_texts(prompt),
            trace_keep_bias=line_bias,
            trace_independent=independent,
        )
        out = client.generate([prompt], s)[0]
        assert out.ok and out.finish_reason == "stop", out
        got = [d.op for d in parse_decisions(strip_think(out.text).strip(), [0, 1, 2]).decisions]
        assert got == trace_ops(out.text), out.text  # the array follows the decided trace, which the text shows
        return got

    # each line's decision is its drop-context logit plus its bias: a bias 2 logits past the tie on either side
    # decides it (the 2 covers llama.cpp's Q8_0 against transformers' fp32); line 0 KEEP does not move lines 1, 2
    want = ["KEEP", "KEEP", "DROP"]
    assert ops((-z[0] + 2.0, -z[1] + 2.0, -z[2] - 2.0)) == want
    assert ops((-z[0] - 2.0, -z[1] + 2.0, -z[2] + 2.0)) == ["DROP", "KEEP", "KEEP"]
    assert ops((30.0, 30.0, 30.0)) == ["KEEP"] * 3  # several KEEPs in one window
    assert ops((-30.0, -30.0, -30.0)) == ["DROP"] * 3


@pytest.fixture(scope="module")
def drop_logits():
    return _drop_context_logits()


@pytest.mark.slow
def test_llama_cpp_decides_each_line_with_the_earlier_ops_drop(drop_logits):
    pytest.importorskip("llama_cpp")
    _check_backend(
        make_client(
            LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=2, batch_size=1)
        ),
        drop_logits,
    )


@pytest.mark.slow
def test_transformers_decides_each_line_with_the_earlier_ops_drop(drop_logits):
    _check_backend(
        make_client(LLMConfig(backend="transformers", model="smollm2-offline", adapter="lazymem-135m", num_threads=1)),
        drop_logits,
    )


def test_independent_ops_records_each_line_once_and_set_ops_writes_them():
    d = IndependentOps()
    assert d.decide(0, 1.0, 1.0) and d.ops == {0: "KEEP"}  # a tie keeps (as greedy KEEP-vs-DROP with bias >= 0)
    assert not d.decide(0, -5.0, 5.0) and d.ops == {0: "KEEP"}  # later calls at the same line change nothing
    text = '<think>\n1. user: "a ..." -> DROP\n2. user: "b" ->  DROP.\n3. x\n</think>\n[{"op": "DROP"}]'
    out = set_ops(text, {0: "KEEP", 1: "KEEP", 2: "KEEP", 7: "KEEP"})
    assert trace_ops(out) == ["KEEP", "KEEP", None]  # a line that names no op stays as written
    assert out.endswith('</think>\n[{"op": "DROP"}]') and "->  KEEP." in out  # the array and spacing untouched
    assert set_ops("no trace", {0: "KEEP"}) == "no trace"


def test_configs_refuse_independent_decisions_without_a_followed_trace():
    with pytest.raises(ConfigError, match="trace_independent"):
        Sampling(trace_independent="yes")
    with pytest.raises(ConfigError, match="structured_trace"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), lazymem={"trace_independent": True, "structured": True})
    with pytest.raises(ConfigError, match="set pipeline.lazymem.trace_independent"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), mpm_sampling=Sampling(trace_independent=True))
    from lazymem.train.heldout import WindowEvalConfig

    with pytest.raises(ConfigError, match="trace_independent"):
        WindowEvalConfig(data="x.jsonl", trace_independent=True)
    with pytest.raises(ConfigError, match="trace_independent must be unset there"):  # one way to ask, as above
        WindowEvalConfig(
            data="x.jsonl", structured=True, structured_trace=True, sampling=Sampling(trace_independent=True)
        )
    # unset, older fingerprints and cache keys stay as they were
    assert (
        "trace_independent" not in Sampling().as_dict()
        and Sampling(trace_independent=True).as_dict()["trace_independent"]
    )
    assert "trace_independent" not in PipelineConfig().legacy_dict()


def test_a_backend_refuses_independent_decisions_without_a_trace_the_array_follows():
    import importlib.util

    for backend in ("transformers", "llamacpp")[: 2 if importlib.util.find_spec("llama_cpp") else 1]:
        # each refuses before it loads a model
        client = make_client(LLMConfig(backend=backend, model="smollm2-offline", num_threads=1, batch_size=1))
        with pytest.raises(ConfigError, match="trace_independent"):
            client.generate(["x"], Sampling(max_tokens=4, trace_independent=True, json_schema=decision_schema(2)))


def test_the_pipeline_sends_independent_decisions_with_each_window():
    from test_keep_prior import pipeline_samplings

    c, samplings = pipeline_samplings("Which corgi did I adopt?", keep_prior=4.0, trace_independent=True)
    assert len(samplings) == 2 and all(s.trace_independent and s.trace_keep_bias for s in samplings)
    assert c.to_dict()["lazymem"]["trace_independent"] is True
    _, plain = pipeline_samplings("Which corgi did I adopt?")
    assert not any(s.trace_independent for s in plain)


def test_the_probe_reads_each_line_after_drops_in_drop_context():
    """keep_probe(context="drop") teacher-forces DROP on every earlier line, whatever the gold ops: a row whose
    gold is all KEEP scores as one whose gold is all DROP (the real tiny model, one window)."""
    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.probe import KeepBiasConfig, keep_probe

    model = load_policy("smollm2-offline", "lazymem-135m", trainable=False).eval()
    tok = load_tokenizer("smollm2-offline")
    rows = [{"prompt": _prompt(), "gold_labels": g} for g in ([True] * 3, [False] * 3)]
    drop = keep_probe(rows, model, tok, context="drop")["scores"]
    gold = keep_probe(rows, model, tok)["scores"]
    assert [p for p, _ in drop[0]] == [p for p, _ in drop[1]] == [p for p, _ in gold[1]]
    assert [p for p, _ in gold[0]][1:] != [p for p, _ in gold[1]][1:]  # gold context: the earlier KEEPs count
    with pytest.raises(ConfigError, match="context"):
        keep_probe(rows, model, tok, context="keep")
    with pytest.raises(ConfigError, match="context"):
        KeepBiasConfig(pairs="x.jsonl", context="sequential")
