"""The llama.cpp engine (lazymem.llm.llamacpp) on the real SmolLM2 GGUF and the shipped LazyMem-135M
adapter: the merged GGUF acts like PEFT's model, free and grammar-constrained decoding, logit bias.
Skipped where the optional llama-cpp-python is not installed (`pip install 'lazymem[llamacpp]'`)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from lazymem.construct.gate import decision_schema, parse_decisions, strip_think  # noqa: E402
from lazymem.errors import ConfigError  # noqa: E402
from lazymem.llm import LLMConfig, Sampling, make_client  # noqa: E402

pytestmark = pytest.mark.slow

PROMPT = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Name the capital of Portugal."},
]


def _llama_logits(path, ids):
    import llama_cpp

    from lazymem.llm.llamacpp import new_llama

    llm = new_llama(llama_cpp, model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False)
    llm.eval(ids)
    return np.array(llm.scores[len(ids) - 1], dtype=np.float64)


def _hf_logits(adapter, ids):
    import torch

    from lazymem.train.modeling import load_policy

    model = load_policy("smollm2-offline", adapter, trainable=False).eval()
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].double().numpy()


def test_the_merged_gguf_acts_like_the_peft_adapter(tmp_path):
    """Next-token logits of llama.cpp on the built GGUF (LoRA merged, Q8_0) against transformers with
    PEFT's adapter: the same top token, correlated logits, and the adapter's EFFECT reproduced."""
    from transformers import AutoTokenizer

    from lazymem.llm.gguf_build import gguf_for
    from lazymem.llm.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-offline"))
    ids = tok.apply_chat_template(PROMPT, tokenize=True, add_generation_prompt=True, return_dict=False)
    merged = gguf_for("smollm2-offline", "lazymem-135m", root=tmp_path)
    plain = gguf_for("smollm2-offline", None, root=tmp_path)
    assert merged != plain and merged.stat().st_size > 100e6
    assert gguf_for("smollm2-offline", "lazymem-135m", root=tmp_path) == merged  # built once
    cpp, hf = _llama_logits(merged, ids), _hf_logits("lazymem-135m", ids)
    cpp0, hf0 = _llama_logits(plain, ids), _hf_logits(None, ids)
    assert int(np.argmax(cpp)) == int(np.argmax(hf))
    assert np.corrcoef(cpp, hf)[0, 1] > 0.99
    assert np.corrcoef(cpp - cpp0, hf - hf0)[0, 1] > 0.9  # the LoRA's own contribution, not just the base


@pytest.fixture(scope="module")
def client():
    return make_client(
        LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=2, batch_size=1)
    )


def test_greedy_generation_reads_the_same_prompt_tokens_as_transformers(client):
    tf = make_client(LLMConfig(backend="transformers", model="smollm2-offline", adapter="lazymem-135m"))
    s = Sampling(max_tokens=24)
    a, b = client.generate([PROMPT], s)[0], tf.generate([PROMPT], s)[0]
    assert a.ok and b.ok and a.prompt_tokens == b.prompt_tokens
    assert a.text.split()[:3] == b.text.split()[:3] and a.completion_tokens <= 24


def test_grammar_gives_a_valid_decision_array_after_its_trace(client):
    schema = {k: v for k, v in decision_schema(3, think=True).items() if k != "x-lazymem-array-follows-trace"}
    user = (
        "Query: Where does the user live?\nMessages:\n1. user: I moved to Lisbon.\n2. assistant: Nice!\n"
        "3. user: The cat sleeps.\nLabel each message KEEP or DROP as a JSON array."
    )
    out = client.generate([[{"role": "user", "content": user}]], Sampling(max_tokens=400, json_schema=schema))[0]
    assert out.ok and out.text.startswith("<think>\n1. ") and out.finish_reason == "stop", out
    assert parse_decisions(strip_think(out.text), [0, 1, 2]).fmt_ok


def test_the_array_follows_its_trace_in_a_second_pass(client):
    """decision_schema(n, think=True) on llama.cpp: the trace under its grammar, then the array under a
    grammar whose item i is the op trace line i ends with. The shipped adapter on a real window, grounded;
    a bias on the trace's " DROP" (first token " D") makes every trace line DROP, and one on the array's
    "KEEP" (first token "KE", no space) pushes the array the other way: with the annotation removed (one
    pass, one grammar) the array contradicts its trace, with it the array follows."""
    from test_grounded import TEXTS, _check_grounded, _prompt

    from lazymem.construct.grounded import window_texts
    from lazymem.llm.trace import trace_ops
    from lazymem.prompts import ARRAY_FOLLOWS_TRACE

    prompt = _prompt()
    schema = decision_schema(3, None, 8, think=True)
    s = Sampling(
        max_tokens=300, json_schema=schema, grounded=window_texts(prompt), logit_bias={" DROP": 8.0, "KEEP": 8.0}
    )
    out = client.generate([prompt], s)[0]
    assert out.ok and out.finish_reason == "stop", out
    assert trace_ops(out.text) == ["DROP"] * 3, out.text
    assert [d.op for d in parse_decisions(strip_think(out.text).strip(), [0, 1, 2]).decisions] == ["DROP"] * 3
    one_pass = {k: v for k, v in schema.items() if k != ARRAY_FOLLOWS_TRACE}
    free = client.generate([prompt], Sampling(**{**s.as_dict(), "json_schema": one_pass}))[0]
    assert trace_ops(free.text) == ["DROP"] * 3, free.text
    assert "KEEP" in [d.op for d in parse_decisions(strip_think(free.text).strip(), [0, 1, 2]).decisions], free.text
    # without the bias tricks: the adapter's own trace, the array after it, each KEEP a span of its message
    plain = client.generate(
        [prompt], Sampling(max_tokens=300, json_schema=schema, grounded=window_texts(prompt), logit_bias={" KEEP": 6.0})
    )[0]
    assert plain.ok and plain.finish_reason == "stop", plain
    ops = [d.op for d in parse_decisions(strip_think(plain.text).strip(), [0, 1, 2]).decisions]
    assert ops == trace_ops(plain.text) and "KEEP" in ops, plain.text
    _check_grounded(plain.text, TEXTS)


def test_a_trace_that_takes_every_token_ends_as_length_without_an_array(client):
    from test_grounded import _prompt

    from lazymem.construct.grounded import window_texts

    prompt = _prompt()
    out = client.generate(
        [prompt],
        Sampling(max_tokens=12, json_schema=decision_schema(3, None, 8, think=True), grounded=window_texts(prompt)),
    )[0]
    assert out.finish_reason == "length" and out.completion_tokens <= 12 and "[" not in out.text, out


def test_logit_bias_by_token_text(client):
    out = client.generate([PROMPT], Sampling(max_tokens=2, logit_bias={" KEEP": 100.0}))[0]
    assert out.text.startswith(" KE")  # the text's FIRST token (SmolLM2 writes " KEEP" as " KE" + "EP")
    assert not client.generate([PROMPT], Sampling(max_tokens=2))[0].text.startswith(" KE")


def test_instances_side_by_side_give_the_sequential_outputs(client):
    par = make_client(
        LLMConfig(backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=2, batch_size=4)
    )
    assert (par.n_instances, par.threads_per_instance) == (2, 1) and client.n_instances == 1
    prompts = [[{"role": "user", "content": f"Count to {i}."}] for i in (2, 3, 4)]
    s = Sampling(max_tokens=12)
    assert [c.text for c in par.generate(prompts, s)] == [c.text for c in client.generate(prompts, s)]
    with pytest.raises(ConfigError, match="extra_body"):
        make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", extra_body={"top_k": 5}))


def _fake_llama_cpp(system_info: bytes, fail: bool = False):
    """A stand-in for the llama_cpp package: its Llama records the model params it would load with."""
    from types import SimpleNamespace

    seen = []

    def default_params():
        return SimpleNamespace(use_extra_bufts=True)

    module = SimpleNamespace(llama_model_default_params=default_params)

    def llama(**kwargs):
        seen.append(module.llama_model_default_params().use_extra_bufts)
        if fail:
            raise ValueError("Failed to load model from file")
        return SimpleNamespace(**kwargs)

    return SimpleNamespace(llama_cpp=module, Llama=llama, llama_print_system_info=lambda: system_info), seen


def test_an_amx_build_loads_without_repacking_and_the_default_params_come_back():
    """ggml's AMX kernels segfault on the first decode (llama.cpp#20824): an AMX build loads
    without extra buffer types; any other build loads as llama.cpp defaults; the swap never leaks."""
    from lazymem.llm.llamacpp import new_llama

    amx, seen = _fake_llama_cpp(b"CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |")
    default = amx.llama_cpp.llama_model_default_params
    assert new_llama(amx, model_path="m.gguf").model_path == "m.gguf" and seen == [False]
    assert amx.llama_cpp.llama_model_default_params is default
    plain, seen = _fake_llama_cpp(b"CPU : AVX2 = 1 | AVX512 = 1 | REPACK = 1 |")
    new_llama(plain, model_path="m.gguf")
    assert seen == [True]
    broken, seen = _fake_llama_cpp(b"AMX_INT8 = 1", fail=True)
    default = broken.llama_cpp.llama_model_default_params
    with pytest.raises(ValueError):
        new_llama(broken, model_path="m.gguf")
    assert seen == [False] and broken.llama_cpp.llama_model_default_params is default
