"""``extra_body.content_adapter`` (llama.cpp): the array pass of a trace-following decoding, each KEEP's content,
written by a second adapter on the same base while the decisions stay the first adapter's. Real SmolLM2 with the
shipped adapters through llama.cpp; the refusals need no model."""
from __future__ import annotations

import pytest
from test_grounded import _prompt

from lazymem.construct.gate import decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import is_span, window_texts
from lazymem.errors import ConfigError
from lazymem.llm import LLMConfig, Sampling, make_client


def _sampling(bias=(30.0, 30.0, 30.0)) -> Sampling:
    prompt = _prompt()
    return Sampling(max_tokens=400, json_schema=decision_schema(3, None, 8, think=True),
                    grounded=window_texts(prompt), trace_keep_bias=bias, trace_independent=True)


def _client(content_adapter: str | None):
    extra = {"content_adapter": content_adapter} if content_adapter else None
    return make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m",
                                 num_threads=2, batch_size=1, extra_body=extra))


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


def test_a_content_adapter_is_refused_off_llama_cpp_and_without_a_trace_the_array_follows():
    with pytest.raises(ConfigError, match="content_adapter is a 'llamacpp' option"):
        LLMConfig(backend="transformers", extra_body={"content_adapter": "lazymem-135m-v1"})
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigError, match="content_adapter"):
        make_client(LLMConfig(backend="llamacpp", extra_body={"content_adapter": ""}))
    client = _client("lazymem-135m-v1")  # refuses before it loads a model
    with pytest.raises(ConfigError, match="array pass of a decoding whose array follows"):
        client.generate(["x"], Sampling(max_tokens=4, json_schema=decision_schema(2)))
