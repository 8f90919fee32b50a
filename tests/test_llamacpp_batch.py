"""Batched greedy decoding on llama.cpp (``extra_body.decode: batched``, lazymem.llm.llamacpp_batch): a question's
windows in one multi-sequence batch, the shared prompt prefix evaluated once, the grammar checked on the chosen
token first, and no writer call where the grammar leaves nothing to write. The real SmolLM2 GGUF with the shipped
adapters against the one-prompt-at-a-time engine; the rest needs no model."""

from __future__ import annotations

import dataclasses
import json

import pytest
from test_grounded import TEXTS, _prompt

from lazymem.construct.gate import decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import window_texts
from lazymem.errors import ConfigError
from lazymem.llm import LLMConfig, Sampling, make_client
from lazymem.llm.base import generate_each
from lazymem.llm.llamacpp_batch import forced_array

OTHER = ["I moved to Lisbon in May.", "Nice! How is the weather?", "The cat sleeps all day."]


def _windows() -> tuple[list, list[Sampling]]:
    """Three windows decoded as the default decodes (trace, independent decisions, per-message KEEP prior,
    grounded, reasons of 0 characters): one pushed to KEEP everything, one to DROP everything, one left to
    the model."""
    prompts, samplings = [], []
    for texts, query, bias in (
        (TEXTS, "What is the name of my dog?", (30.0, 30.0, 30.0)),
        (TEXTS, "What is the name of my dog?", (-30.0, -30.0, -30.0)),
        (OTHER, "Where does the user live?", (5.0, 0.0, 0.0)),
    ):
        prompt = _prompt(texts, query)
        prompts.append(prompt)
        samplings.append(
            Sampling(
                max_tokens=400,
                json_schema=decision_schema(3, None, 0, think=True),
                grounded=window_texts(prompt),
                trace_keep_bias=bias,
                trace_independent=True,
                logit_bias={" KEEP": 1.25},
            )
        )
    return prompts, samplings


def _client(decode: str, **extra):
    return make_client(
        LLMConfig(
            backend="llamacpp",
            model="smollm2-offline",
            adapter="lazymem-135m",
            num_threads=2,
            batch_size=1,
            extra_body={"content_adapter": "lazymem-135m-v1", "decode": decode, **extra},
        )
    )


@pytest.mark.slow
def test_batched_decoding_gives_the_one_at_a_time_decisions_and_memory_and_counts_its_tokens():
    pytest.importorskip("llama_cpp")
    prompts, samplings = _windows()
    one, batched = _client("sequential"), _client("batched")
    assert one.identity != batched.identity  # the cache tells the engines apart
    want = generate_each(one, prompts, samplings)
    got = generate_each(batched, prompts, samplings)
    for w, g, prompt in zip(want, got, prompts):
        assert w.ok and g.ok and g.finish_reason == w.finish_reason == "stop", (w, g)
        a = parse_decisions(strip_think(w.text).strip(), [0, 1, 2])
        b = parse_decisions(strip_think(g.text).strip(), [0, 1, 2])
        assert a.ok and b.ok
        assert [(d.op, d.content) for d in b.decisions] == [(d.op, d.content) for d in a.decisions], (w.text, g.text)
        assert g.text.split("</think>")[0] == w.text.split("</think>")[0]  # the same trace, token for token
        # its own counts: the prompt as the tokenizer reads it, the prefix it shared with the window before
        rendered = batched.render(prompt)
        assert g.prompt_tokens == len(batched._tok(rendered, add_special_tokens=False)["input_ids"])
    assert [d.op for d in parse_decisions(strip_think(got[0].text).strip(), [0, 1, 2]).decisions] == ["KEEP"] * 3
    assert got[0].cached_prompt_tokens == 0 and 0 < got[1].cached_prompt_tokens < got[1].prompt_tokens
    assert got[0].passes is not None and got[0].passes[1]["name"] == "content"
    # every op DROP, reasons of 0 characters: the grammar leaves only whitespace, the writer is not called
    assert got[1].passes is None and got[1].completion_tokens < want[1].completion_tokens
    assert got[1].text.endswith(forced_array(samplings[1], ["DROP"] * 3))


@pytest.mark.slow
def test_batched_decoding_of_one_sampling_for_many_prompts_matches_one_at_a_time():
    pytest.importorskip("llama_cpp")
    prompts = [[{"role": "user", "content": f"Count to {i}."}] for i in (2, 3, 4)]
    s = Sampling(max_tokens=12)
    plain = {"decode": "batched"}
    batched = make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", num_threads=2, extra_body=plain))
    one = make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", num_threads=2, batch_size=1))
    assert [c.text for c in batched.generate(prompts, s)] == [c.text for c in one.generate(prompts, s)]


@pytest.mark.slow
def test_a_window_longer_than_the_default_stream_is_batched_on_longer_streams(monkeypatch):
    pytest.importorskip("llama_cpp")
    from lazymem.llm import llamacpp_batch

    prompts, samplings = _windows()
    want = generate_each(_client("sequential"), prompts, samplings)
    small = _client("batched")
    _, tok = small.load()
    n = len(tok(small.render(prompts[0]), add_special_tokens=False)["input_ids"])
    need = n + 400 + llamacpp_batch.SLACK  # the dog windows' prompt, max_tokens and slack
    monkeypatch.setattr(llamacpp_batch, "STREAM_CELLS", need // 256 * 256)  # short of it (llama.cpp pads to 256)
    monkeypatch.setattr(llamacpp_batch, "STREAM_STEP", 256)
    assert small.batch_context().stream < need

    def one_at_a_time(*_):
        raise AssertionError("a prompt that fits the instance went to the one-at-a-time engine")

    monkeypatch.setattr(small, "_safe", one_at_a_time)
    got = generate_each(small, prompts, samplings)
    for w, g in zip(want, got):  # the one-at-a-time engine's trace and decisions (the all-DROP array is not written)
        assert g.text.split("</think>")[0] == w.text.split("</think>")[0]
        a, b = (parse_decisions(strip_think(c.text).strip(), [0, 1, 2]) for c in (w, g))
        assert a.ok and b.ok and [(d.op, d.content) for d in b.decisions] == [(d.op, d.content) for d in a.decisions]
    ctx = small._batch[False]
    assert need <= ctx.stream < need + 256
    # fewer sequences side by side on the longer streams: the context's cells stay the default's
    assert ctx.max_seqs == llamacpp_batch.sequences(ctx.stream) < llamacpp_batch.MAX_SEQS
    assert (ctx.max_seqs + 1) * ctx.stream <= (llamacpp_batch.MAX_SEQS + 1) * llamacpp_batch.STREAM_CELLS
    assert got[0].passes is not None and got[0].passes[1]["name"] == "content"  # its writer ran in the batch


@pytest.mark.slow
def test_a_prompt_as_long_as_the_instance_context_is_left_to_the_one_at_a_time_engine():
    pytest.importorskip("llama_cpp")
    prompts, samplings = _windows()
    short = _client("batched")
    _, tok = short.load()
    n = [len(tok(short.render(p), add_special_tokens=False)["input_ids"]) for p in prompts]
    assert n[2] < n[0] == n[1]  # the dog windows are the longer
    n_ctx = n[0] - 1  # the dog windows do not fit an instance; the other one fits, its reply cut to what is left
    want = generate_each(_client("sequential", n_ctx=n_ctx), prompts[:2], samplings[:2])
    got = generate_each(_client("batched", n_ctx=n_ctx), prompts, samplings)
    assert [g.error for g in got[:2]] == [w.error for w in want]  # the one-at-a-time engine's own error
    assert "does not fit the instance's context of" in got[0].error and "extra_body.n_ctx" in got[0].error
    # the other window is decoded in the batch until the instance's context is full: what the one-at-a-time
    # engine writes with that many tokens on a context that holds them
    cut = dataclasses.replace(samplings[2], max_tokens=n_ctx - n[2])
    ref = generate_each(_client("sequential"), prompts[2:], [cut])[0]
    assert got[2].ok and got[2].finish_reason == ref.finish_reason == "length"
    assert got[2].completion_tokens == ref.completion_tokens == n_ctx - n[2] and got[2].text == ref.text


def test_a_writer_pass_is_skipped_only_where_the_grammar_leaves_nothing_to_write():
    prompt = _prompt()
    s = Sampling(json_schema=decision_schema(3, None, 0, think=True), grounded=window_texts(prompt))
    text = forced_array(s, ["DROP"] * 3)
    v = parse_decisions(text, [0, 1, 2])
    assert v.ok and [(d.op, d.content) for d in v.decisions] == [("DROP", "")] * 3
    assert json.loads(text) == [{"op": "DROP", "compressed_content": "", "reason": ""}] * 3
    assert forced_array(s, ["DROP", "KEEP", "DROP"]) is None  # a KEEP: the writer writes its content
    assert forced_array(s, ["DROP", None, "DROP"]) is None  # a line that names no op: the model chooses
    with_reasons = Sampling(json_schema=decision_schema(3, None, 8, think=True), grounded=window_texts(prompt))
    assert forced_array(with_reasons, ["DROP"] * 3) is None  # reasons to write
    assert forced_array(Sampling(json_schema=decision_schema(3, None, 0, think=True)), ["DROP"] * 3) is None


def test_an_unknown_decode_is_refused():
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigError, match="extra_body.decode"):
        make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", extra_body={"decode": "fast"}))


def test_generate_each_through_the_cache_calls_the_inner_client_for_misses_only(tmp_path):
    from lazymem.llm.cache import CachedClient
    from lazymem.llm.fake import FakeBackend

    inner = FakeBackend(lambda prompt, sampling: f"{prompt[-1]['content']}@{sampling.max_tokens}")
    client = CachedClient(inner, tmp_path)
    prompts = [[{"role": "user", "content": c}] for c in ("a", "b")]
    samplings = [Sampling(max_tokens=3), Sampling(max_tokens=5)]
    first = generate_each(client, prompts, samplings)
    assert [c.text for c in first] == ["a@3", "b@5"] and not any(c.cached for c in first)
    again = generate_each(client, prompts, samplings)
    assert [c.text for c in again] == ["a@3", "b@5"] and all(c.cached for c in again)
    assert len(inner.calls) == 2  # one generate a prompt (the fake has no generate_each), none on the hits
    with pytest.raises(ValueError):
        client.generate_each(prompts, samplings[:1])


@pytest.mark.slow
def test_a_step_of_several_sequences_gives_one_token_at_a_time_logits_bit_for_bit(tmp_path):
    """What the batched engine's identical decisions rest on (scripts/check_batch_exactness.py, the real GGUF and a
    real window prompt): one token of each of several sequences a step gives the logits of one token at a time, bit
    for bit. Several tokens of one sequence a step (a verified draft, a teacher-forced trace) are reported, not
    asserted: on llama-cpp-python 0.3.36's CPU kernels they differ (docs/benchmarks.md)."""
    pytest.importorskip("llama_cpp")
    from script_loader import load_script

    out = tmp_path / "exactness.json"
    assert load_script("check_batch_exactness").main(["--tokens", "6", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    several = result["cases"]["several sequences"]
    assert several["bit_identical"] and several["max_abs_diff"] == 0.0 and several["tokens"] == 6
    assert set(result["cases"]) == {"several sequences", "chunks of 2", "chunks of 3", "chunks of 4", "chunks of 8"}
    assert result["continuation"].startswith("<think>")
