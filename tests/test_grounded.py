"""Grounded content: the rewritten-KEEP statistic (lazymem.construct.grounded) and
grounded decoding (lazymem.llm.grounding) on both local backends, the real SmolLM2 included (slow)."""

from __future__ import annotations

import json

import pytest

from lazymem.construct import Decision, GateVerdict, construction_stats, decision_schema, parse_decisions, strip_think
from lazymem.construct.grounded import count_rewritten, is_span, window_texts
from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig, Sampling
from lazymem.llm.grounding import JsonScan, SpanText, SpanTokens, escaped, grounded_gbnf
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.prompts import annotation_messages
from lazymem.records import History, Message, Question
from lazymem.retrieve import Hit, Pool, RetrievalConfig, WindowConfig

# A short window in the paper's prompt format: quotes, a backslash and unicode need JSON escaping.
TEXTS = [
    'Hey Sam! I adopted a corgi named "Biscuit" last week.',
    "Congrats! Corgis are great.",
    "Mi piace: café C:\\dogs, naïve 🐶 pics.",
]


def _messages(texts=TEXTS):
    return [
        Message(i, f"s#{i}", "s", i, "user" if i % 2 == 0 else "assistant", t, "2023/05/20")
        for i, t in enumerate(texts)
    ]


def _prompt(texts=TEXTS, query="What is the name of my dog?"):
    return annotation_messages(_messages(texts), query, "2023/06/01")


# --- the span check ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, message, span",
    [
        ("corgi named", "I adopted a corgi named Biscuit.", True),  # exact
        ("I adopted a corgi named Biscuit.", "I adopted a corgi named Biscuit.", True),  # the whole message
        ("Hey Evan", "Hey Sam, how are you?", False),  # a name rewritten
        ("Adopted a corgi.", "I adopted a corgi named Biscuit.", False),  # case changed
        ("The user adopted a corgi", "I adopted a corgi named Biscuit.", False),  # paraphrase
        ("  adopted a\n corgi ", "I adopted   a corgi named Biscuit.", True),  # whitespace around and inside
        ("adopted a corgi.", "I adopted a corgi named Biscuit.", True),  # one closing period tolerated
        ("adopted a corgi..", "I adopted a corgi named Biscuit.", False),
        ("café naïve 🐶", "Mi piace: café naïve 🐶 pics.", True),  # unicode, exact
        ("cafe naive", "Mi piace: café naïve 🐶 pics.", False),  # accents dropped
        ('named "Biscuit"', 'a corgi named "Biscuit" last week', True),  # quotes
        ("named 'Biscuit'", 'a corgi named "Biscuit" last week', False),
        ("C:\\dogs", "saved in C:\\dogs today", True),  # backslash
        ("", "anything", False),
        ("   ", "anything", False),  # nothing kept is not a span
    ],
)
def test_is_span_on_hand_cases(content, message, span):
    assert is_span(content, message) is span


def test_count_rewritten_judges_each_keep_against_its_own_message():
    ds = [Decision(0, "KEEP", "Hey Sam!"), Decision(1, "KEEP", "Hey Sam!"), Decision(2, "DROP", "")]
    assert count_rewritten(ds, {0: TEXTS[0], 1: TEXTS[1], 2: TEXTS[2]}) == (2, 1)  # item 1's span is message 0's
    with pytest.raises(KeyError, match="position 1"):
        count_rewritten(ds, {0: TEXTS[0]})


def test_window_texts_reads_the_decided_messages_back_from_a_real_prompt():
    msgs = _messages(TEXTS + ["   ", "Bye."])
    prompt = annotation_messages(msgs, "q?", "2023/06/01", n_prev_bridge=1, n_next_bridge=1)
    assert window_texts(prompt) == tuple(TEXTS + ["Bye."])  # blank message not decided; bridges in order
    assert window_texts([{"role": "user", "content": "window 0"}]) is None


def test_construction_stats_counts_rewritten_keeps_of_valid_windows_only():
    ok = GateVerdict(True, "ok", (Decision(0, "KEEP", "corgi named"), Decision(1, "KEEP", "Corgis are the best")), "")
    ok2 = GateVerdict(True, "ok", (Decision(1, "DROP", ""), Decision(2, "KEEP", "café C:\\dogs")), "")
    bad = GateVerdict(False, "wrong_count", (), "[]")
    texts = dict(enumerate(TEXTS))
    s = construction_stats([([0, 1], ok), ([1, 2], ok2), ([2], bad)], gold_positions=[0], texts=texts)
    assert (s.n_keep_decisions, s.n_rewritten, s.rewritten_rate) == (3, 1, pytest.approx(1 / 3))
    none = construction_stats([([2], bad)], texts=texts)
    assert (none.n_keep_decisions, none.n_rewritten, none.rewritten_rate) == (0, 0, None)
    unknown = construction_stats([([0, 1], ok)])  # without texts nothing is judged
    assert (unknown.n_keep_decisions, unknown.n_rewritten, unknown.rewritten_rate) == (2, None, None)


# --- decoding pieces, without a model -----------------------------------------------------------------------


def test_span_text_offsets_follow_json_escaping():
    s = SpanText('a "b"\\ c')
    assert s.esc == escaped('a "b"\\ c') == 'a \\"b\\"\\\\ c'
    assert [s.esc[i:] for i in s.starts] == [s.esc, '\\"b\\"\\\\ c', "c"]
    assert 3 not in s.ends and 4 in s.ends  # inside the escape of the quote / after it
    assert s.at('\\"b') == [5] and s.at("b") == []  # spans start at words, "b" is mid-word


def test_json_scan_tracks_items_keys_escapes_and_skips_the_trace():
    s = JsonScan().feed(
        '<think>\n1. user: "x" -> KEEP [not the array]\n</think>\n[{"op": "DROP", '
        '"compressed_content": "", "reason": "r \\" }"}, {"op": "KEEP", "compressed_content": "a \\"'
    )
    assert (s.item, s.op, s.content) == (1, "KEEP", 'a \\"')
    assert s.closed_content == [(0, "")]
    t = s.copy().feed('b\\"", "reason": ""}]')
    assert t.closed and t.closed_content[-1] == (1, 'a \\"b\\"') and s.content == 'a \\"'


def test_span_tokens_allow_only_span_continuations_and_whole_closes():
    vocab = ["Hey", " Sam", " Evan", "!", '"', '",', ' "', "Se", "x", '!"']
    v = SpanTokens(vocab)
    spans = [SpanText("Hey Sam! Hi"), SpanText("x")]
    ids = {t: i for i, t in enumerate(vocab)}
    at = JsonScan().feed('[{"op": "KEEP", "compressed_content": "Hey')
    allowed = {vocab[i] for i in v.allowed(at, spans)}
    assert " Sam" in allowed and " Evan" not in allowed and '"' in allowed and '",' in allowed
    empty = v.allowed(JsonScan().feed('[{"op": "KEEP", "compressed_content": "'), spans)
    assert ids["Hey"] in empty and ids['"'] not in empty  # a KEEP may not close on nothing
    assert ids['"'] in v.allowed(JsonScan().feed('[{"op": "DROP", "compressed_content": "'), spans)
    second = v.allowed(
        JsonScan().feed(
            '[{"op": "DROP", "compressed_content": "", "reason": ""}, {"op": "KEEP", "compressed_content": "'
        ),
        spans,
    )
    assert {vocab[i] for i in second} == {"x"}
    near = JsonScan().feed('[{"op": "KEEP", "compressed_content":')
    assert near.near_content and ids[' "'] not in v.banned(near, spans)
    assert v.allowed(JsonScan().feed('[{"op": "KEEP", "reason": "'), spans) is None  # not content: free


def test_the_grounded_grammar_compiles_in_llama_cpp():
    llama_cpp = pytest.importorskip("llama_cpp")
    for text in (
        grounded_gbnf(TEXTS, free_think=True),
        grounded_gbnf(TEXTS, think_lines=3, max_reason=16),
        grounded_gbnf(["   ", "ok"]),
        grounded_gbnf(TEXTS, ops=["KEEP", None, "DROP"]),
    ):
        llama_cpp.LlamaGrammar.from_string(text, verbose=False)
    assert '"\\\\\\"Biscuit\\\\\\""' in grounded_gbnf(TEXTS)  # the JSON escape, escaped again for GBNF


def test_trace_following_grammars_fix_each_items_op_and_compile_in_llama_cpp():
    """llama.cpp's trace-following second pass: item i can only be the op its trace line named."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from lazymem.llm.llamacpp import followed_schema, grounded_grammar, schema_grammar, trace_grammar

    fixed = grounded_gbnf(TEXTS, ops=["KEEP", None, "DROP"])
    items = {line.split(" ::= ")[0]: line for line in fixed.splitlines() if line.startswith("item-")}
    assert "span-0" in items["item-0"] and '\\"DROP\\"' not in items["item-0"]  # KEEP only
    assert "span-1" in items["item-1"] and '\\"DROP\\"' in items["item-1"]  # open: either
    assert "span-2" not in fixed and '\\"KEEP\\"' not in items["item-2"]  # DROP only: no span rule either
    assert grounded_gbnf(["   "], ops=["KEEP"]) == grounded_gbnf(["   "], ops=["DROP"])  # no word: DROP
    with pytest.raises(ValueError, match="2 ops for 3 texts"):
        grounded_gbnf(TEXTS, ops=["KEEP", "DROP"])
    schema = decision_schema(3, 64, 16, think=True)
    for text in (
        trace_grammar(3),
        grounded_grammar(schema, TEXTS, ["KEEP", None, "DROP"]),
        schema_grammar(followed_schema(schema, ["DROP", "KEEP", None])),
    ):
        llama_cpp.LlamaGrammar.from_string(text, verbose=False)
    assert not grounded_grammar(schema, TEXTS, [None] * 3).startswith('root ::= "<think>')  # the array alone
    assert trace_grammar(2).count("trace-line") == 3 and "{1,300}" in trace_grammar(2)


# --- configuration and the pipeline ------------------------------------------------------------------------


def test_backends_without_token_control_refuse_grounded_decoding_plainly():
    server = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ConfigError, match="cannot do grounded decoding"):
        PipelineConfig(mpm=server, lazymem={"grounded": True})
    with pytest.raises(ConfigError, match="grounded must be unset"):
        PipelineConfig(mpm=LLMConfig(backend="fake"), mpm_sampling=Sampling(grounded=["x"]))
    from lazymem.train.heldout import WindowEvalConfig

    with pytest.raises(ConfigError, match="cannot do grounded decoding"):
        WindowEvalConfig(data="x.jsonl", mpm=server, grounded=True)
    assert "grounded" not in PipelineConfig().legacy_dict()  # older run fingerprints stay valid
    assert PipelineConfig(lazymem={"grounded": True}).to_dict()["lazymem"]["grounded"]
    assert "grounded" not in Sampling().as_dict() and Sampling(grounded=["a"]).as_dict()["grounded"] == ["a"]


class _Retriever:
    def retrieve(self, history, query):
        hits = tuple(Hit(pos=p, rank=r, score=1.0) for r, p in enumerate([0, 2], start=1))
        return Pool(query=query, hits=hits, stages=("fixed",), history_id=history.id, timings={"total": 0.0})


def test_the_pipeline_sends_each_window_its_texts_and_counts_rewrites():
    h = History("h", tuple(_messages()))
    q = Question("q", "single-session-user", "What is my dog's name?", "Biscuit", "h", "2023/06/01", evidence=(0,))

    def upper(prompt, sampling):  # KEEPs every message, upper-cased: each KEEP rewritten
        return json.dumps([{"op": "KEEP", "compressed_content": t.upper(), "reason": ""} for t in window_texts(prompt)])

    mpm = FakeBackend(upper)
    c = PipelineConfig(
        retrieval=RetrievalConfig(dense_model=None),
        mpm=LLMConfig(backend="fake"),
        answer=LLMConfig(backend="fake"),
        lazymem={"grounded": True},
        window=WindowConfig(w=0, L=1, s=1),
    )
    r = LazyMemPipeline(c, clients={"mpm": mpm, "answer": FakeBackend(["x"])}, retriever=_Retriever()).answer(h, q)
    assert [s.grounded for _, s in mpm.calls] == [(TEXTS[0],), (TEXTS[2],)]  # one call per window, its own text
    assert all(s.json_schema is None for _, s in mpm.calls)  # grounded works without the count constraint
    assert (r.stats.n_keep_decisions, r.stats.n_rewritten, r.stats.rewritten_rate) == (2, 2, 1.0)
    assert r.to_dict()["construction"]["n_rewritten"] == 2


def test_held_out_scoring_counts_rewritten_keeps_from_the_prompt():
    from lazymem.train.window_scores import score_rows, summarize

    row = {"prompt": _prompt(), "decision_positions": [4, 5, 6], "gold_labels": [True, False, False]}
    out = json.dumps(
        [
            {"op": "KEEP", "compressed_content": "Hey Evan!", "reason": ""},
            {"op": "KEEP", "compressed_content": "Corgis are great.", "reason": ""},
            {"op": "DROP", "compressed_content": "", "reason": ""},
        ]
    )
    s = summarize(score_rows([row, {**row, "prompt": [{"role": "user", "content": "no block"}]}], [out, out]))
    assert (s["n_keep_decisions"], s["n_rewritten"], s["rewritten_rate"]) == (2, 1, 0.5)  # the 2nd row is not judged


# --- the real SmolLM2 --------------------------------------------------------------------------------------


def _check_grounded(text: str, texts, min_keep: int = 1):
    v = parse_decisions(strip_think(text).strip(), list(range(len(texts))))
    assert v.ok, (v.reason, v.detail, text)
    keeps = [(d.content, texts[d.pos]) for d in v.decisions if d.op == "KEEP"]
    assert len(keeps) >= min_keep, text
    for content, message in keeps:
        assert content in message and content.strip() == content, (content, message)


@pytest.mark.slow
def test_llama_cpp_grounded_decoding_keeps_only_spans_on_the_base_gguf():
    pytest.importorskip("llama_cpp")
    from lazymem.llm import make_client

    # One thread: llama.cpp's threads spin on each other when the CPU is shared with other work.
    client = make_client(LLMConfig(backend="llamacpp", model="smollm2-offline", num_threads=1, batch_size=1))
    prompt = _prompt()
    # beside the count constraint (a decision schema: its reason bound is kept), KEEP pushed by a bias
    s = Sampling(
        max_tokens=160, json_schema=decision_schema(3, 64, 16), grounded=window_texts(prompt), logit_bias={"KEEP": 8.0}
    )
    out = client.generate([prompt], s)[0]
    assert out.ok and out.finish_reason == "stop", out
    _check_grounded(out.text, TEXTS)


@pytest.mark.slow
def test_transformers_grounded_decoding_keeps_only_spans_with_the_shipped_adapter():
    from lazymem.llm import make_client

    client = make_client(
        LLMConfig(backend="transformers", model="smollm2-offline", adapter="lazymem-135m", num_threads=1)
    )
    texts = TEXTS[:2]
    prompt = _prompt(texts)
    # beside structured_trace (the grammar and FollowTrace), the trace's " KEEP" pushed by a bias; the content
    # unbounded in the schema, as the pipeline and the window evaluation ask under grounded decoding
    s = Sampling(
        max_tokens=200,
        json_schema=decision_schema(2, None, 32, think=True),
        grounded=window_texts(prompt),
        logit_bias={" KEEP": 6.0},
    )
    out = client.generate([prompt], s)[0]
    assert out.ok and out.finish_reason == "stop", out
    _check_grounded(out.text, texts)
