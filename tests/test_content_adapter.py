"""``extra_body.content_adapter`` (llama.cpp and transformers): the array pass of a trace-following decoding, each
KEEP's content, written by a second adapter on the same base while the decisions stay the first adapter's. Real
SmolLM2 with the shipped adapters through both engines; the refusals need no model."""

from __future__ import annotations

import dataclasses

import pytest
from test_grounded import _prompt

from lazymem.construct.gate import decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import is_span, window_texts
from lazymem.errors import ConfigError
from lazymem.llm import LLMConfig, Sampling, make_client


def _sampling(bias=(30.0, 30.0, 30.0)) -> Sampling:
    prompt = _prompt()
    return Sampling(
        max_tokens=400,
        json_schema=decision_schema(3, None, 8, think=True),
        grounded=window_texts(prompt),
        trace_keep_bias=bias,
        trace_independent=True,
    )


def _client(content_adapter: str | None):
    extra = {"content_adapter": content_adapter} if content_adapter else None
    return make_client(
        LLMConfig(
            backend="llamacpp",
            model="smollm2-offline",
            adapter="lazymem-135m",
            num_threads=2,
            batch_size=1,
            extra_body=extra,
        )
    )


def _counted(client) -> dict:
    """Count the completions each pool's instances write (decision instances, content instances)."""
    client.load()
    calls = {"decide": 0, "content": 0}
    for pool, name in ((client._free, "decide"), (client._content, "content")):
        for llm in list(pool.queue):

            def wrapped(*a, _f=llm.create_completion, _n=name, **k):
                calls[_n] += 1
                return _f(*a, **k)

            llm.create_completion = wrapped
    return calls


@pytest.mark.slow
def test_the_content_adapter_writes_the_array_and_the_first_adapter_decides():
    pytest.importorskip("llama_cpp")
    prompt, s = _prompt(), _sampling()
    alone = _client(None).generate([prompt], s)[0]
    assert alone.ok and alone.finish_reason == "stop", alone

    # the same adapter writing the array: the same text as one adapter alone, written by the content instances
    same = _client("lazymem-135m")
    calls = _counted(same)
    out = same.generate([prompt], s)[0]
    assert out.text == alone.text
    assert calls == {"decide": 1, "content": 1}  # the trace pass, then the array pass on the content instance

    # another adapter (v1) writing the contents: v2's decisions exactly, every KEEP a span of its own message
    v1 = _client("lazymem-135m-v1")
    assert v1.identity != same.identity  # the cache tells them apart
    out = v1.generate([prompt], s)[0]
    assert out.ok and out.finish_reason == "stop", out
    texts = window_texts(prompt)
    got = parse_decisions(strip_think(out.text).strip(), [0, 1, 2]).decisions
    want = parse_decisions(strip_think(alone.text).strip(), [0, 1, 2]).decisions
    assert [d.op for d in got] == [d.op for d in want] == ["KEEP"] * 3
    assert strip_think(out.text) != out.text and out.text.split("</think>")[0] == alone.text.split("</think>")[0]
    assert all(is_span(d.content, t) for d, t in zip(got, texts))


@pytest.mark.slow
def test_transformers_content_adapter_rewrites_the_trace_as_decided_then_writes_the_array():
    """transformers decodes in one pass, so the content model re-reads the prompt, is forced through the deciding
    model's trace (as decided), then writes the array: with the same adapter the text is one adapter's alone."""
    prompt = _prompt()
    s = Sampling(
        max_tokens=400,
        json_schema=decision_schema(3, None, 8, think=True),
        grounded=window_texts(prompt),
        trace_keep_bias=(30.0, 30.0, 30.0),
    )

    def client(content):
        extra = {"content_adapter": content} if content else None
        return make_client(
            LLMConfig(
                backend="transformers",
                model="smollm2-offline",
                adapter="lazymem-135m",
                num_threads=2,
                batch_size=2,
                extra_body=extra,
            )
        )

    alone = client(None).generate([prompt, prompt], s)
    same = client("lazymem-135m")
    out = same.generate([prompt, prompt], s)
    assert [c.text for c in out] == [c.text for c in alone] and all(c.finish_reason == "stop" for c in out)
    assert same._content_model is not None and same._content_model is not same._model

    v1 = client("lazymem-135m-v1")
    assert v1.identity != same.identity  # the cache tells them apart
    si = dataclasses.replace(s, trace_independent=True)  # the decisions recorded, the trace written DROP
    want = client(None).generate([prompt], si)[0]
    got = v1.generate([prompt], si)[0]
    assert got.ok and got.finish_reason == "stop", got
    texts = window_texts(prompt)
    decided = parse_decisions(strip_think(got.text).strip(), [0, 1, 2]).decisions
    assert (
        [d.op for d in decided]
        == [d.op for d in parse_decisions(strip_think(want.text).strip(), [0, 1, 2]).decisions]
        == ["KEEP"] * 3
    )
    assert got.text.split("</think>")[0] == want.text.split("</think>")[0]  # the trace as decided, KEEP
    assert "-> KEEP" in got.text.split("</think>")[0]
    assert all(is_span(d.content, t) for d, t in zip(decided, texts))


def test_a_content_adapter_is_refused_off_the_in_process_engines_and_without_a_trace_the_array_follows():
    with pytest.raises(ConfigError, match="content_adapter is an option of the in-process engines"):
        LLMConfig(backend="vllm", extra_body={"content_adapter": "lazymem-135m-v1"})
    with pytest.raises(ConfigError, match="content_adapter"):
        LLMConfig(backend="transformers", extra_body={"content_adapter": ""})
    hf = make_client(LLMConfig(backend="transformers", extra_body={"content_adapter": "lazymem-135m-v1"}))
    with pytest.raises(ConfigError, match="array pass of a decoding whose array follows"):
        hf.generate(["x"], Sampling(max_tokens=4, json_schema=decision_schema(2)))  # refuses before it loads
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigError, match="content_adapter"):
        make_client(LLMConfig(backend="llamacpp", extra_body={"content_adapter": ""}))
    client = _client("lazymem-135m-v1")  # refuses before it loads a model
    with pytest.raises(ConfigError, match="array pass of a decoding whose array follows"):
        client.generate(["x"], Sampling(max_tokens=4, json_schema=decision_schema(2)))
