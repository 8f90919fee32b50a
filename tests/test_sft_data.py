"""Training data (lazymem.train.sft_data, rl_data, teacher, datacard) on small synthetic data and LoCoMo."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from lazymem.construct import parse_decisions, strip_think
from lazymem.data import load_dataset
from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend, LLMConfig, Sampling
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.retrieve import RetrievalConfig, WindowConfig
from lazymem.train.rl_data import RLDataConfig, balance_pool, build_rl_prompts
from lazymem.train.sft_data import (
    HeldOutError,
    SFTDataConfig,
    balance_windows,
    build_sft_data,
    load_sources,
    query_window_pairs,
    sample_by_type,
    select_questions,
)
from lazymem.train.teacher import GOLD_TEACHER, gold_target

SYNTH = "synthetic:messages=150,seed=0,histories=2,questions=6"
RETRIEVAL = RetrievalConfig(n=6, dense_model=None, disk_cache=False)
WINDOW = WindowConfig()  # the paper's w=2, L=8, s=7
ROOT = Path(__file__).resolve().parents[1]
LOCOMO_TRAIN = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47", "conv-48"]


def sft_config(tmp_path, name="sft", **kw) -> SFTDataConfig:
    base = dict(
        datasets=(SYNTH,),
        retrieval=RETRIEVAL,
        window=WINDOW,
        teacher="gold",
        questions=None,
        output_dir=str(tmp_path / name),
        progress=False,
    )
    return SFTDataConfig(**{**base, **kw})


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def all_pairs(config):
    datasets, _ = load_sources(config)
    selected, _ = select_questions(datasets, config)
    return [p for pairs in query_window_pairs(datasets, selected, config) for p in pairs]


@pytest.fixture(scope="module")
def gold_unbalanced(tmp_path_factory):
    """Gold-teacher SFT data with every window kept (balance off): (config, card, rows)."""
    cfg = sft_config(tmp_path_factory.mktemp("gold"), balance=False)
    card = build_sft_data(cfg)
    return cfg, card, read_jsonl(Path(cfg.output_dir) / "sft.jsonl")


# (a) what inference sends --------------------------------------------------------------------------


def test_sft_prompts_are_byte_identical_to_inference(gold_unbalanced):
    cfg, card, rows = gold_unbalanced
    assert card["instances"] == card["query_window_pairs"] == len(rows)  # balance off, gold teacher: nothing lost
    ds = load_dataset(SYNTH)
    mpm, answer = FakeBackend(), FakeBackend()
    pipe = LazyMemPipeline(
        PipelineConfig(
            method="lazymem",
            retrieval=RETRIEVAL,
            window=WINDOW,
            mpm=LLMConfig(backend="fake", model="fake"),
            answer=LLMConfig(backend="fake", model="fake"),
        ),
        clients={"mpm": mpm, "answer": answer},
    )
    checked = 0
    for qid in sorted({r["question_id"] for r in rows})[:3]:
        mpm.calls.clear()
        q = ds.question(qid)
        pipe.answer(ds.history(q), q)
        sent = [json.dumps(list(p), ensure_ascii=False) for p, _ in mpm.calls]
        ours = [
            json.dumps(r["prompt"], ensure_ascii=False)
            for r in sorted((r for r in rows if r["question_id"] == qid), key=lambda r: r["window_index"])
        ]
        assert sent and sent == ours
        checked += len(sent)
    assert checked >= 3


# (b) the gold-label teacher ------------------------------------------------------------------------


def test_gold_teacher_targets_pass_the_gate_and_keep_exactly_the_gold(gold_unbalanced):
    cfg, card, rows = gold_unbalanced
    ds = load_dataset(SYNTH)
    assert card["teacher"] == GOLD_TEACHER and card["discarded"] == 0
    for r in rows:
        v = parse_decisions(r["completion"][0]["content"], r["decision_positions"])
        assert v.ok, v.detail
        kept = [d.pos for d in v.decisions if d.op == "KEEP"]
        gold = [p for p, g in zip(r["decision_positions"], r["gold_labels"]) if g]
        assert kept == gold and r["n_keep"] == len(gold)
        history = ds.histories[r["history_id"]]
        assert all(d.content == history[d.pos].text for d in v.decisions if d.op == "KEEP")  # verbatim
        assert set(ds.question(r["question_id"]).evidence) >= set(gold)
    assert sum(r["n_keep"] > 0 for r in rows) == card["gold_bearing_windows"] > 0
    shown = {(r["question_id"], p) for r in rows for p, g in zip(r["decision_positions"], r["gold_labels"]) if g}
    assert card["selection"]["gold_messages_in_windows"] == len(shown) <= card["selection"]["gold_messages"]


def test_key_span_teacher_keeps_each_golds_answer_sentence_as_a_span_of_it(gold_unbalanced, tmp_path):
    """``teacher_keep: key_span`` on the real generator: the same windows and ops as the verbatim gold teacher,
    each KEEP a grounded span of its message, the answer-bearing sentence where one holds an answer word (so
    multi-sentence gold gets shorter), the whole message otherwise; stated in the card; refused for a model
    teacher, and the verbatim default leaves earlier configs' dicts as they were."""
    from lazymem.construct.extractive import split_sentences
    from lazymem.construct.grounded import is_span
    from lazymem.text import content_tokens

    _, _, verbatim = gold_unbalanced
    cfg = sft_config(tmp_path, balance=False, teacher_keep="key_span")
    card = build_sft_data(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    assert "key-span" in card["teacher"] and "key span" in (Path(cfg.output_dir) / "card.md").read_text()
    assert [(r["question_id"], r["decision_positions"]) for r in rows] == [
        (r["question_id"], r["decision_positions"]) for r in verbatim
    ]
    ds = load_dataset(SYNTH)
    shorter = 0
    for r in rows:
        v = parse_decisions(r["completion"][0]["content"], r["decision_positions"])
        assert v.ok, v.detail
        q = ds.question(r["question_id"])
        for d in (d for d in v.decisions if d.op == "KEEP"):
            text = ds.histories[r["history_id"]][d.pos].text
            assert is_span(d.content, text)
            answer_words = content_tokens(str(q.answer))
            if d.content != text:  # cut: one sentence of several, holding an answer word
                assert d.content in split_sentences(text) and answer_words & content_tokens(d.content)
                shorter += 1
            else:
                assert len(split_sentences(text)) < 2 or not any(
                    answer_words & content_tokens(x) for x in split_sentences(text)
                )
    assert shorter > 0
    with pytest.raises(ConfigError, match="teacher_keep"):
        sft_config(tmp_path, teacher=LLMConfig(backend="fake", model="m"), teacher_keep="key_span")
    with pytest.raises(ConfigError, match="teacher_keep"):
        sft_config(tmp_path, teacher_keep="summary")
    assert "teacher_keep" not in sft_config(tmp_path).to_dict() and cfg.to_dict()["teacher_keep"] == "key_span"


def test_content_teacher_keeps_gold_key_spans_and_the_extractive_non_gold_cut_to_a_sentence(gold_unbalanced, tmp_path):
    """``teacher_keep: content`` (a content adapter's targets) on the real generator: the verbatim teacher's
    windows; every gold message KEEP (its key span), every non-gold one the real ExtractiveProcessor keeps KEEP
    too, cut to its sentence most like the query, the rest DROP; the trace's ops are the array's; the card says
    these are never decision targets."""
    import json

    from lazymem.construct.extractive import ExtractiveProcessor, query_key_span
    from lazymem.construct.gate import strip_think
    from lazymem.construct.grounded import is_span
    from lazymem.llm.trace import trace_ops

    _, _, verbatim = gold_unbalanced
    cfg = sft_config(tmp_path, balance=False, teacher_keep="content", teacher="gold-trace")
    card = build_sft_data(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    assert (
        "content-adapter" in card["teacher"] and "never for deciding" in (Path(cfg.output_dir) / "card.md").read_text()
    )
    assert [(r["question_id"], r["decision_positions"]) for r in rows] == [
        (r["question_id"], r["decision_positions"]) for r in verbatim
    ]
    ds = load_dataset(SYNTH)
    related = cut = 0
    for r in rows:
        text_out = r["completion"][0]["content"]
        v = parse_decisions(strip_think(text_out).strip(), r["decision_positions"])
        assert v.ok, v.detail
        assert trace_ops(text_out) == [d.op for d in v.decisions]
        q = ds.question(r["question_id"])
        h = ds.histories[r["history_id"]]
        msgs = [h[p] for p in r["decision_positions"]]
        extractive = [d["op"] for d in json.loads(ExtractiveProcessor().process(q.text, "d", msgs))]
        for d, gold, ext, m in zip(v.decisions, r["gold_labels"], extractive, msgs):
            assert d.op == ("KEEP" if gold or ext == "KEEP" else "DROP")
            if d.op == "KEEP":
                assert is_span(d.content, m.text)
            if d.op == "KEEP" and not gold:
                related += 1
                assert d.content == query_key_span(q.text, m.text)
                cut += d.content != m.text
    assert related > 0 and cut > 0

    # balanced, the windows are the gold teacher's own (balance on the gold, not on the KEEPs)
    def balanced(name, keep):
        build_sft_data(sft_config(tmp_path, name, teacher_keep=keep))
        return [
            (r["question_id"], r["window_index"], r["decision_positions"])
            for r in read_jsonl(tmp_path / name / "sft.jsonl")
        ]

    assert balanced("b1", "key_span") == balanced("b2", "content")


# (c) discards by reason ----------------------------------------------------------------------------


def test_scripted_teacher_failures_are_discarded_and_counted(tmp_path):
    cfg = sft_config(tmp_path, teacher=LLMConfig(backend="fake", model="teacher"), balance=False, batch_questions=3)
    pairs = all_pairs(cfg)
    script, expected = {}, Counter()
    behaviours = ["good", "prose", "wrong_count", "fail", "bad_op"]
    n_other = 0
    for k, pair in enumerate(pairs):
        good = gold_target(pair.prompt, pair.history)
        if any(pair.prompt.gold_labels):
            kind = "drop_gold" if k % 2 else "good"
        else:
            kind, n_other = behaviours[n_other % len(behaviours)], n_other + 1
        n = pair.prompt.n_decisions
        all_drop = json.dumps([{"op": "DROP", "compressed_content": "", "reason": "off topic"}] * n)
        script[pair.prompt.messages[-1]["content"]] = {
            "good": good,
            "drop_gold": all_drop,
            "prose": "Here are my decisions:\n" + good,
            "wrong_count": json.dumps(json.loads(good)[:-1]),
            "fail": RuntimeError("teacher server down"),
            "bad_op": good.replace('"DROP"', '"drop"', 1),
        }[kind]
        expected[
            {
                "good": "ok",
                "drop_gold": "dropped_gold",
                "prose": "extra_text",
                "wrong_count": "wrong_count",
                "fail": "failed_call",
                "bad_op": "bad_op",
            }[kind]
        ] += 1
    assert len(script) == len(pairs)  # every window's user message is distinct
    assert all(expected[k] for k in ("ok", "dropped_gold", "extra_text", "wrong_count", "failed_call", "bad_op"))

    class Counting(FakeBackend):
        batches = 0

        def generate(self, prompts, sampling=Sampling()):
            Counting.batches += 1
            return super().generate(prompts, sampling)

    teacher = Counting(script)
    card = build_sft_data(cfg, client=teacher)
    ok = expected.pop("ok")
    assert card["discards_by_reason"] == dict(expected) and card["discarded"] == sum(expected.values())
    assert card["discards_by_paper_reason"] == {
        "drops_gold": expected["dropped_gold"],
        "unparsable": expected["extra_text"],
        "wrong_count": expected["wrong_count"],
        "failed_call": expected["failed_call"],
        "schema_violation": expected["bad_op"],
    }
    assert card["instances"] == ok and card["teacher"] == "fake:teacher"
    assert all(s == cfg.teacher_sampling for _, s in teacher.calls)
    n_questions = card["questions"]
    assert Counting.batches == -(-n_questions // 3)  # one generate call per batch of 3 questions
    ann = read_jsonl(Path(cfg.output_dir) / "annotations.jsonl")
    assert Counter(a["status"] for a in ann)["failed_call"] == expected["failed_call"]
    assert all("teacher server down" in a["error"] for a in ann if a["status"] == "failed_call")


# (d) reasoning traces stay in the target -----------------------------------------------------------


def test_think_trace_is_kept_in_the_target_and_the_gate_judges_the_rest(tmp_path):
    cfg = sft_config(tmp_path, teacher=LLMConfig(backend="fake", model="thinker"), balance=False)
    pairs = all_pairs(cfg)
    script = {}
    for k, p in enumerate(pairs):
        think = f"<think>Window {k}: which messages answer the query? Only gold ones [1].</think>\n\n"
        # every 4th trace is never closed: the gate sees the whole text and refuses it
        script[p.prompt.messages[-1]["content"]] = (
            think.replace("</think>", "") if k % 4 == 3 else think
        ) + gold_target(p.prompt, p.history)
    card = build_sft_data(cfg, client=FakeBackend(script))
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    n_open = sum(k % 4 == 3 for k in range(len(pairs)))
    assert card["instances"] == len(pairs) - n_open == card["targets_with_think"] == len(rows)
    assert card["discarded"] == n_open and set(card["discards_by_reason"]) <= {"extra_text", "invalid_json"}
    for r in rows:
        target = r["completion"][0]["content"]
        assert target.startswith("<think>Window ") and "</think>" in target and r["has_think"]
        assert parse_decisions(strip_think(target), r["decision_positions"]).ok


def test_numbered_trace_teacher_numbers_each_reason_as_its_trace_line(tmp_path):
    cfg = sft_config(tmp_path, teacher="gold-trace-numbered", balance=False)
    card = build_sft_data(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    assert card["instances"] == len(rows) > 0 and card["discarded"] == 0 and "numbered" in card["teacher"]
    for r in rows:
        target = r["completion"][0]["content"]
        trace, _, array = target.partition("</think>\n")
        items = json.loads(array)
        numbers = [line.split(".", 1)[0] for line in trace.splitlines()[1:]]
        assert (
            numbers
            == [str(i) for i in range(1, len(items) + 1)]
            == [it["reason"].split(":")[0].removeprefix("message ") for it in items]
        )
        assert [it["op"] == "KEEP" for it in items] == [bool(g) for g in r["gold_labels"]]
        assert parse_decisions(strip_think(target), r["decision_positions"]).ok
    with pytest.raises(ConfigError, match="gold-trace-numbered"):
        sft_config(tmp_path, teacher="gold-numbered")


# (e) window-level balancing ------------------------------------------------------------------------


def test_balancing_pairs_keep_windows_with_as_many_all_drop_windows(tmp_path, gold_unbalanced):
    _, full, _ = gold_unbalanced
    a = build_sft_data(sft_config(tmp_path, "a", seed=1))
    rows = read_jsonl(Path(a["files"]["sft"]["path"]))
    n_keep = sum(r["n_keep"] > 0 for r in rows)
    assert n_keep == a["windows_with_keep"] == a["all_drop_windows_kept"] == len(rows) - n_keep > 0
    assert a["windows_with_keep"] + a["all_drop_windows"] == full["instances"]
    b = build_sft_data(sft_config(tmp_path, "b", seed=1))
    assert a["files"]["sft"]["sha256"] == b["files"]["sft"]["sha256"]  # same seed, same bytes


def test_balance_windows_is_seeded_and_takes_all_when_short():
    n_keep = [1] * 5 + [0] * 40
    picks = {seed: balance_windows(n_keep, seed) for seed in range(4)}
    assert all(len(p) == 10 and p[:5] == [0, 1, 2, 3, 4] for p in picks.values())
    assert balance_windows(n_keep, 2) == picks[2] and len({tuple(p) for p in picks.values()}) > 1
    assert balance_windows([2, 1, 0, 3], 0) == [0, 1, 2, 3]  # fewer all-DROP than KEEP windows: all of them


def test_sample_by_type_is_proportional_and_checks_per_type():
    items = [(f"a{i}", "A") for i in range(20)] + [(f"b{i}", "B") for i in range(10)]
    picked = sample_by_type(items, 9, seed=3)
    assert Counter(k[0] for k in picked) == {"a": 6, "b": 3} and picked == sample_by_type(items, 9, seed=3)
    assert sample_by_type(items, 100) == [k for k, _ in items]
    assert Counter(k[0] for k in sample_by_type(items, per_type={"B": 4})) == {"b": 4}
    with pytest.raises(ConfigError, match="more questions"):
        sample_by_type(items, per_type={"B": 11})


# (f) LoCoMo: conversations 9-10 are refused; conversations 1-8 build ------------------------------


@pytest.fixture(scope="module")
def locomo(shared_data) -> str:
    path = shared_data / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip(f"{path} missing")
    return str(path)


QUIET_REPAIRS = pytest.mark.filterwarnings("ignore:.*evidence ids that point to no turn")  # the loader's repair notice


@QUIET_REPAIRS
@pytest.mark.parametrize(
    "kw", [dict(split="train"), dict(split=None, histories=("conv-49",)), dict(split=None, suffix="#paper")]
)
def test_locomo_test_conversations_are_refused(locomo, tmp_path, kw):
    kw = dict(kw)
    spec = locomo + kw.pop("suffix", "")
    cfg = sft_config(tmp_path, datasets=(spec,), **kw)
    with pytest.raises(HeldOutError, match="conv-49"):
        build_sft_data(cfg)
    with pytest.raises(HeldOutError):
        build_rl_prompts(
            RLDataConfig(datasets=(spec,), retrieval=RETRIEVAL, output_dir=str(tmp_path / "rl"), progress=False, **kw)
        )
    assert not (tmp_path / "sft" / "sft.jsonl").exists()


@QUIET_REPAIRS
def test_locomo_conversations_1_to_8_gold_card(locomo, tmp_path):
    cfg = sft_config(
        tmp_path,
        datasets=(locomo,),
        split=None,
        histories=tuple(LOCOMO_TRAIN),
        types=("multi-hop", "temporal", "open-domain", "single-hop"),
        questions=4,
    )
    card = build_sft_data(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    assert card["teacher"] == GOLD_TEACHER and card["questions"] == 4
    assert card["sources"][0]["sha256"] == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    assert sum(card["selection"]["used_by_type"].values()) == 4 and card["discarded"] == 0
    assert rows and not {r["history_id"] for r in rows} & {"conv-49", "conv-50"}
    assert card["instances"] == len(rows) == 2 * card["windows_with_keep"]
    assert card["lengths"]["input"]["n"] == len(rows) and card["lengths"]["input"]["mean"] > 0
    assert card["paper"]["query_window_pairs"] == 3075
    md = (Path(cfg.output_dir) / "card.md").read_text()
    assert "gold-label teacher" in md and "3,075" in md and "79fa87e90f040813" in md


# (g) RL prompts ------------------------------------------------------------------------------------


def test_rl_prompts_are_balanced_with_and_without_replacement(tmp_path):
    cfg = RLDataConfig(
        datasets=(SYNTH,),
        retrieval=RETRIEVAL,
        window=WINDOW,
        size=None,
        output_dir=str(tmp_path / "rl"),
        progress=False,
    )
    card = build_rl_prompts(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "rl_prompts.jsonl")
    n_other = card["pool"] - card["gold_bearing"]
    assert card["size"] == len(rows) == 2 * n_other  # size None: every prompt without gold once
    assert card["gold_bearing_sampled"] == card["other_sampled"] == n_other == sum(not r["has_gold"] for r in rows)
    key = lambda r: (r["question_id"], r["window_index"])  # noqa: E731
    other = Counter(key(r) for r in rows if not r["has_gold"])
    gold = Counter(key(r) for r in rows if r["has_gold"])
    assert max(other.values()) == 1 and len(other) == n_other  # without replacement: each exactly once
    assert card["gold_bearing"] < n_other and max(gold.values()) > 1  # with replacement: repeats
    assert len(gold) == card["gold_bearing_unique"] <= card["gold_bearing"]
    assert 0 < card["gold_bearing_share"] < 0.5
    ds = load_dataset(SYNTH)
    for r in rows[:20]:
        q, h = ds.question(r["question_id"]), ds.histories[r["history_id"]]
        assert (r["query"], r["query_time"], r["gold_answer"], r["reasoning_chain"]) == (
            q.text,
            q.query_time,
            q.answer,
            "",
        )
        assert r["sources"] == [
            {"role": h[p].role, "content": h[p].text, "timestamp": h[p].timestamp} for p in r["decision_positions"]
        ]
        assert r["has_gold"] == any(r["gold_labels"]) and r["prompt"][0]["role"] == "system"
    again = build_rl_prompts(RLDataConfig(**{**cfg.__dict__, "output_dir": str(tmp_path / "rl2")}))
    assert again["files"]["rl_prompts"]["sha256"] == card["files"]["rl_prompts"]["sha256"]


def test_balance_pool_counts_and_refusals():
    flags = [True] * 3 + [False] * 30
    picked = balance_pool(flags, 20, seed=5)
    gold, other = [i for i in picked if i < 3], [i for i in picked if i >= 3]
    assert len(gold) == len(other) == 10 and len(set(other)) == 10
    assert picked == balance_pool(flags, 20, seed=5) and picked != balance_pool(flags, 20, seed=6)
    with pytest.raises(ConfigError, match="without replacement"):
        balance_pool(flags, 70)
    with pytest.raises(ConfigError, match="none"):
        balance_pool([False] * 4, 4)


# (h) loadable with datasets; configs and recipes ---------------------------------------------------


def test_jsonl_loads_with_datasets(gold_unbalanced, tmp_path):
    datasets = pytest.importorskip("datasets")
    cfg, _, rows = gold_unbalanced
    sft = datasets.load_dataset("json", data_files=str(Path(cfg.output_dir) / "sft.jsonl"), split="train")
    assert len(sft) == len(rows) and {
        "prompt",
        "completion",
        "question_id",
        "decision_positions",
        "gold_labels",
        "n_keep",
        "window_positions",
        "question_type",
    } <= set(sft.column_names)
    assert [m["role"] for m in sft[0]["prompt"]] == ["system", "user"]
    assert sft[0]["completion"][0]["role"] == "assistant"
    rl = RLDataConfig(datasets=(SYNTH,), retrieval=RETRIEVAL, size=8, output_dir=str(tmp_path / "rl"), progress=False)
    build_rl_prompts(rl)
    ds = datasets.load_dataset("json", data_files=str(Path(rl.output_dir) / "rl_prompts.jsonl"), split="train")
    assert (
        len(ds) == 8
        and isinstance(ds[0]["sources"], list)
        and set(ds[0]["sources"][0]) == {"role", "content", "timestamp"}
    )


def test_config_validation_and_recipes():
    with pytest.raises(ConfigError, match="teacher"):
        SFTDataConfig()  # the teacher is never implied
    with pytest.raises(ConfigError, match="unknown field"):
        SFTDataConfig.from_dict({"teacher": "gold", "teachr": "gold"})
    with pytest.raises(ConfigError, match="test split"):
        SFTDataConfig(teacher="gold", split="test")
    c = SFTDataConfig.from_dict(
        {
            "teacher": {"backend": "openai", "model": "m", "base_url": "http://x/v1"},
            "teacher_sampling": {"max_tokens": 100},
            "window": {"w": 1},
            "datasets": "synthetic",
        }
    )
    assert (c.teacher.model, c.teacher_sampling.max_tokens, c.window.w, c.datasets) == ("m", 100, 1, ("synthetic",))
    assert c.questions == 100 and RLDataConfig().questions is None and RLDataConfig().size == 10000
    synth = SFTDataConfig.from_yaml(str(ROOT / "configs" / "recipes" / "quickstart-cpu" / "data.yaml"))
    loco = SFTDataConfig.from_yaml(str(ROOT / "configs" / "recipes" / "quickstart-cpu" / "data_locomo.yaml"))
    assert synth.teacher == loco.teacher == "gold" and set(loco.histories) == set(LOCOMO_TRAIN)
    # The training data are built as inference retrieves, up to the BM25 engine: the data configs keep
    # the paper's rank_bm25, inference defaults to bm25s, which ranks the same (tests/test_retrieve.py).
    same_engine = dataclasses.replace(synth.retrieval, sparse=PipelineConfig().retrieval.sparse)
    assert synth.retrieval.sparse == "rank_bm25" and PipelineConfig().retrieval.sparse == "bm25s"
    assert (same_engine, synth.window, synth.bridges) == (PipelineConfig().retrieval, PipelineConfig().window, "none")


def test_selection_names_unknown_histories_and_types(tmp_path):
    ds = [load_dataset(SYNTH)]
    with pytest.raises(ConfigError, match="histories"):
        select_questions(ds, sft_config(tmp_path, histories=("conv-26",)))
    with pytest.raises(ConfigError, match="types"):
        select_questions(ds, sft_config(tmp_path, types=("single-session-usr",)))
    selected, counts = select_questions(ds, sft_config(tmp_path, types=("SSU", "KU"), questions=3))
    assert len(selected) == counts["used"] == 3 and {q.abbrev for _, q in selected} <= {"SSU", "KU"}
    assert all(q.evidence for _, q in selected)
    assert counts["datasets"][0]["in_split"] < counts["datasets"][0]["questions"]


def test_card_counts_instances_by_style_and_window_shape(tmp_path):
    """Three styles, one-message windows (w=0) beside (1, 8, 7): every row carries both, the card counts them."""
    from lazymem.train.datacard import by_style_and_shape

    specs = (
        "synthetic:messages=60,seed=1,histories=1,questions=4,varied=1",
        "synthetic:messages=60,seed=1,histories=1,questions=4,varied=1,long=1",
        "synthetic-casual:conversations=1,sessions=5,seed=1,questions=5",
    )
    cfg = sft_config(
        tmp_path,
        datasets=specs,
        split=None,
        teacher="gold-trace-numbered",
        window=WindowConfig(w=0, L=4, s=3),
        extra_windows=(WindowConfig(w=1, L=8, s=7),),
    )
    card = build_sft_data(cfg)
    rows = read_jsonl(Path(cfg.output_dir) / "sft.jsonl")
    styles = Counter(r["style"] for r in rows)
    shapes = Counter("w={},L={},s={}".format(*r["window_shape"]) for r in rows)
    assert set(styles) == {"synthetic", "synthetic-long", "casual"} and set(shapes) == {"w=0,L=4,s=3", "w=1,L=8,s=7"}
    assert card["instances_by_style"] == dict(sorted(styles.items()))
    assert card["instances_by_shape"] == dict(sorted(shapes.items()))
    assert sum(sum(v.values()) for v in card["instances_by_style_shape"].values()) == len(rows) == card["instances"]
    assert card["over_max_length"]["limit"] == 2048 and "| casual |" in Path(cfg.output_dir, "card.md").read_text()
    assert sum(card["selection"]["query_window_pairs_by_shape"].values()) == card["query_window_pairs"]
    # one-message windows: one decision, and the gold-trace target passes the gate with the gold label
    singles = [r for r in rows if r["window_shape"][0] == 0 and len(r["window_positions"]) == 1]
    assert singles and any(r["n_keep"] for r in singles)
    for r in singles:
        assert len(r["decision_positions"]) == 1 and r["n_keep"] == r["n_gold"]
    # casual rows show the speakers' names as roles, never user/assistant
    casual = next(r for r in rows if r["style"] == "casual")
    assert '"role": "user"' not in casual["prompt"][-1]["content"]
    assert by_style_and_shape(rows)["by_style"] == card["instances_by_style"]
