"""LazyMem-135M's recipe pieces: varied training data, several windowings, upper-layer LoRA, the
held-out window table (lazymem.train.heldout, window_table), the shipped-adapter alias and its configs."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from lazymem.errors import ConfigError, LoadError
from lazymem.llm import LLMConfig
from lazymem.retrieve import RetrievalConfig, WindowConfig
from lazymem.train.heldout import WindowEvalConfig, balanced_subset, evaluate_windows, load_pairs
from lazymem.train.window_scores import score_rows, summarize
from lazymem.train.window_table import WindowTableConfig, run_window_table

ROOT = Path(__file__).resolve().parents[1]
STAGES = ROOT / "configs" / "recipes" / "lazymem-135m"  # LazyMem-135M's recipe, one file a stage
ABLATION = ROOT / "configs" / "recipes" / "lazymem-135m-ablation-locomo"  # the LoCoMo-trained ablation's
KEEP = '{"op": "KEEP", "compressed_content": "%s", "reason": "evidence"}'
DROP = '{"op": "DROP", "compressed_content": "", "reason": "no"}'


def _rows(n=6):
    """Windows of 2 messages; even ones hold gold at their first message."""
    return [
        {
            "prompt": [{"role": "system", "content": "Annotate."}, {"role": "user", "content": f"window {i}"}],
            "decision_positions": [10 * i, 10 * i + 1],
            "gold_labels": [i % 2 == 0, False],
            "question_id": f"q{i}",
            "window_index": 0,
        }
        for i in range(n)
    ]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _oracle(prompt, sampling):
    """Keeps the first message of even windows (the gold), drops the rest: a perfect model."""
    i = int(prompt[-1]["content"].split()[-1])
    return "[" + (KEEP % "gold" if i % 2 == 0 else DROP) + ", " + DROP + "]"


# --- scoring -------------------------------------------------------------------------------------------


def test_scores_count_a_failed_window_as_keeping_nothing():
    rows = _rows(4)
    outs = [
        "[" + KEEP % "a" + ", " + KEEP % "b" + "]",  # gold kept, non-gold kept
        "[" + DROP + ", " + DROP + "]",  # no gold here: both dropped
        "not json",  # gold window fails the gate: its gold is not kept
        "[" + DROP + "]",
    ]  # wrong count on a window without gold
    recs = score_rows(rows, outs)
    s = summarize(recs)
    assert [r["gate_fmt"] for r in recs] == [True, True, False, False]
    assert (s["gold_messages"], s["gold_keep_recall"]) == (2, 0.5)
    # non-gold: window 0 kept 1 (of 1), window 1 dropped 2, window 2 "dropped" 1 (failed), window 3 "dropped" 2
    assert s["nongold_drop_rate"] == round(5 / 6, 6)
    assert recs[0]["r_act"] == pytest.approx(0.915) and recs[1]["r_act"] == 1.0
    assert s["reward"] == round((0.915 + 1.0) / 4, 6) and s["r_act_valid"] == round((0.915 + 1.0) / 2, 6)
    assert sum(s["failures"].values()) == 2 and s["failures"]["wrong_count"] == 1


def test_scores_count_the_kept_tokens_beside_the_real_extractive_processors_on_the_same_window():
    """On a real window prompt: kept_tokens are the Qwen3 tokens of what the output keeps (0 when it fails the
    gate), extractive_tokens those the ExtractiveProcessor keeps of the same messages; summary and shape
    groups take their means."""
    from lazymem.construct import window_prompts
    from lazymem.construct.extractive import ExtractiveProcessor
    from lazymem.llm import count_tokens, qwen3_tokenizer_dir
    from lazymem.records import History, Message, Question
    from lazymem.retrieve import build_windows

    if not (qwen3_tokenizer_dir() / "tokenizer.json").is_file():
        pytest.skip("the Qwen3 tokenizer is not fetched (bash scripts/fetch_qwen3_tokenizer.sh)")
    texts = ["We moved to Lisbon in May. The flat is small.", "Traffic in Lisbon is awful.", "My cats sleep a lot."]
    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    q = Question("q", "single-session-user", "When did I move to Lisbon?", "May", "h", "2023/06/01", evidence=(0,))
    (prompt,) = window_prompts(h, q, build_windows(h, [1], gold=q.evidence))
    row = {
        "prompt": list(prompt.messages),
        "decision_positions": list(prompt.decision_positions),
        "gold_labels": list(prompt.gold_labels),
        "window_shape": [1, 4, 3],
    }
    out = "[" + KEEP % "We moved to Lisbon in May." + ", " + DROP + ", " + DROP + "]"
    good, failed = score_rows([row, row], [out, "not json"])
    ms = [Message(i, f"s#{i}", "s", i, "user", t, "d") for i, t in enumerate(texts)]
    extractive = sum(
        count_tokens(d["compressed_content"])
        for d in json.loads(ExtractiveProcessor().process(q.text, "d", ms))
        if d["op"] == "KEEP"
    )
    assert good["kept_tokens"] == count_tokens("We moved to Lisbon in May.") and failed["kept_tokens"] == 0
    assert (
        good["extractive_tokens"]
        == failed["extractive_tokens"]
        == extractive
        == count_tokens(texts[0]) + count_tokens(texts[1])
    )  # both share "Lisbon" with the question: kept whole
    s = summarize([good, failed])
    assert s["kept_tokens"] == good["kept_tokens"] / 2 and s["extractive_tokens"] == extractive
    assert s["by_shape"]["1,4,3"]["kept_tokens"] == s["kept_tokens"]
    assert "kept_tokens" not in summarize(score_rows(_rows(2), [DROP, DROP]))  # no window text: no count


def test_answer_recall_reads_the_answer_in_what_a_gold_window_keeps():
    """answer_recall: the gold answer's tokens in the KEEP contents of a window showing gold (0 when it fails the
    gate or keeps a span without them), beside answer_recall_shown (in the gold messages shown); absent for a
    window without gold or a question without an answer; row_answers reads the answers from the rows' dataset."""
    from lazymem.construct import window_prompts
    from lazymem.records import History, Message, Question
    from lazymem.retrieve import build_windows
    from lazymem.train.window_scores import row_answers

    texts = ["We moved to Lisbon in May. The flat is small.", "Traffic in Lisbon is awful.", "My cats sleep a lot."]
    h = History("h", tuple(Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(texts)))
    q = Question("q", "single-session-user", "When did I move to Lisbon?", "In May", "h", "2023/06/01", evidence=(0,))
    (prompt,) = window_prompts(h, q, build_windows(h, [1], gold=q.evidence))
    row = {
        "prompt": list(prompt.messages),
        "decision_positions": list(prompt.decision_positions),
        "gold_labels": list(prompt.gold_labels),
        "dataset": "d",
        "question_id": "q",
    }
    answers = {("d", "q"): ("In May", None, False)}
    outs = [
        "[" + KEEP % "We moved to Lisbon in May." + ", " + DROP + ", " + DROP + "]",
        "[" + KEEP % "The flat is small." + ", " + DROP + ", " + DROP + "]",
        "not json",
    ]
    recs = score_rows([row] * 3, outs, answers=answers)
    assert [r["answer_recall"] for r in recs] == [1.0, 0.0, 0.0]  # "in" and "may" both kept, then neither
    assert all(r["answer_recall_shown"] == 1.0 for r in recs)
    s = summarize(recs)
    assert (s["answer_windows"], s["answer_recall"], s["answer_recall_shown"]) == (3, round(1 / 3, 6), 1.0)
    no_gold = {**row, "gold_labels": [False] * 3}
    unanswerable = {("d", "q"): ("", None, True)}
    assert "answer_recall" not in score_rows([no_gold], outs[:1], answers=answers)[0]
    assert "answer_recall" not in score_rows([row], outs[:1], answers=unanswerable)[0]
    assert "answer_recall" not in summarize(score_rows([row], outs[:1]))  # no answers given: no measure

    spec = "synthetic:messages=60,seed=1,histories=1,questions=6"
    from lazymem.data.datasets import load_dataset

    q0 = load_dataset(spec).questions[0]
    got = row_answers([{"dataset": spec, "question_id": q0.id}, {"dataset": "/no/such/file.json"}])
    assert got[(spec, q0.id)] == (q0.answer, q0.category, q0.abstention)
    assert not any(k[0] == "/no/such/file.json" for k in got)  # a dataset that does not load gives no answers


def test_scores_break_down_by_style_and_window_shape_when_the_rows_carry_them():
    rows = _rows(4)
    for i, r in enumerate(rows):
        r.update(style=("casual", "synthetic")[i % 2], window_shape=[i // 2 + 1, 4, 3])
    drops = "[" + DROP + ", " + DROP + "]"
    outs = ["[" + KEEP % "a" + ", " + DROP + "]", drops, "not json", drops]
    s = summarize(score_rows(rows, outs))
    assert s["by_style"]["casual"] == {
        "windows": 2,
        "gold_windows": 2,
        "gate_fmt": 0.5,
        "gold_keep_recall": 0.5,
        "nongold_drop_rate": 1.0,
    }
    assert s["by_style"]["synthetic"]["gate_fmt"] == 1.0 and s["by_style"]["synthetic"]["gold_keep_recall"] is None
    assert list(s["by_shape"]) == ["1,4,3", "2,4,3"] and s["by_shape"]["2,4,3"]["gate_fmt"] == 0.5
    assert "by_style" not in summarize(score_rows(_rows(2), outs[:2]))  # rows without a style: no breakdown


def test_balanced_subset_is_seeded_and_half_gold():
    rows = [{"gold_labels": [i % 3 == 0]} for i in range(30)]
    a, b = balanced_subset(rows, 8, seed=1), balanced_subset(rows, 8, seed=1)
    assert a == b and len(a) == 8 and sum(rows[i]["gold_labels"][0] for i in a) == 4
    assert balanced_subset(rows, None) == list(range(30)) == balanced_subset(rows, 99)


def test_bad_pair_files_name_file_line_and_field(tmp_path):
    p = tmp_path / "pairs.jsonl"
    rows = _rows(2)
    del rows[1]["gold_labels"]
    _jsonl(p, rows)
    with pytest.raises(LoadError, match=r"pairs.jsonl: line 2, field gold_labels: missing"):
        load_pairs(p)
    p.write_text(json.dumps({**_rows(1)[0], "gold_labels": [True]}) + "\n")
    with pytest.raises(LoadError, match="1 labels for 2 decision_positions"):
        load_pairs(p)
    p.write_text("{oops\n")
    with pytest.raises(LoadError, match="line 1: not JSON"):
        load_pairs(p)
    with pytest.raises(ConfigError, match="no such file"):
        load_pairs(tmp_path / "none.jsonl")


def test_evaluate_windows_with_a_scripted_model_and_constrained_schemas(tmp_path):
    from lazymem.llm import FakeBackend

    data = _jsonl(tmp_path / "pairs.jsonl", _rows(6))
    fake = FakeBackend(_oracle)
    s = evaluate_windows(WindowEvalConfig(data=data, structured=True), tmp_path / "out", client=fake, progress=False)
    assert (s["windows"], s["gate_fmt"], s["gold_keep_recall"], s["nongold_drop_rate"], s["reward"]) == (
        6,
        1.0,
        1.0,
        1.0,
        1.0,
    )
    schemas = {json.dumps(sp.json_schema, sort_keys=True) for _, sp in fake.calls}
    assert len(schemas) == 1 and json.loads(schemas.pop())["minItems"] == 2  # exact item count per window
    recs = [json.loads(x) for x in (tmp_path / "out" / "windows.jsonl").read_text().splitlines()]
    assert len(recs) == 6 and json.loads((tmp_path / "out" / "summary.json").read_text())["windows"] == 6


def test_window_table_fills_in_over_runs_and_reads_finished_cells_back(tmp_path, monkeypatch):
    import lazymem.llm
    from lazymem.llm import FakeBackend

    made = []

    def fake_client(config, responses=None):
        made.append(config.model)
        return FakeBackend(_oracle if config.model == "oracle" else (lambda p, s: "[]"), model=config.model)

    monkeypatch.setattr(lazymem.llm, "make_client", fake_client)
    data = _jsonl(tmp_path / "pairs.jsonl", _rows(6))
    rows = {
        "oracle": {"mpm": {"backend": "fake", "model": "oracle"}},
        "empty": {"mpm": {"backend": "fake", "model": "empty"}, "structured": True},
    }
    cfg = WindowTableConfig(sets={"s": data}, rows=rows, only=("oracle",), limit=4, output_dir=str(tmp_path / "t"))
    table = run_window_table(cfg, progress=False)
    assert list(table["s"]) == ["oracle"] and table["s"]["oracle"]["windows"] == 4 and made == ["oracle"]
    table = run_window_table(
        WindowTableConfig(sets={"s": data}, rows=rows, limit=4, output_dir=str(tmp_path / "t")), progress=False
    )
    assert made == ["oracle", "empty"]  # the finished cell was read back, not run again
    assert table["s"]["empty"]["gate_fmt"] == 0.0 and table["s"]["oracle"]["gold_keep_recall"] == 1.0
    md = (tmp_path / "t" / "table.md").read_text()
    assert "| oracle | 4 | 1.000 |" in md and "| empty | 4 | 0.000 |" in md
    with pytest.raises(ConfigError, match="unknown rows"):
        WindowTableConfig(sets={"s": data}, rows=rows, only=("nope",))
    # only_sets: a second set is left alone, the finished cells of the first stay in the table
    two = WindowTableConfig(
        sets={"s": data, "t": data}, rows=rows, only_sets=("s",), limit=4, output_dir=str(tmp_path / "t")
    )
    assert list(run_window_table(two, progress=False)) == ["s"] and made == ["oracle", "empty"]
    with pytest.raises(ConfigError, match="unknown sets"):
        WindowTableConfig(sets={"s": data}, rows=rows, only_sets=("u",))
    with pytest.raises(ConfigError, match=r"rows.bad.*mdl"):
        WindowTableConfig(sets={"s": data}, rows={"bad": {"mpm": {"mdl": "x"}}}).row_config("bad", data)


def test_development_windows_are_other_histories_than_the_recipe_trains_on_and_no_test_set():
    import re

    from lazymem.eval import EvalConfig
    from lazymem.train.sft_data import SFTDataConfig

    def seeds(specs):
        return {int(re.search(r"seed=(\d+)", s).group(1)) for s in specs}

    devs = [SFTDataConfig.from_yaml(str(STAGES / f"{n}.yaml")) for n in ("dev_data", "dev_data_asked")]
    train = [SFTDataConfig.from_yaml(str(STAGES / f"{n}.yaml")) for n in ("data", "writer_data")]
    # held out: the demo's data set and the pipeline table's synthetic set
    held = [EvalConfig.from_yaml(ROOT / "configs/eval" / f"{n}.yaml").dataset for n in ("demo", "lazymem135m")]
    for dev in devs:
        assert all(s.startswith(("synthetic:", "synthetic-casual:")) for s in dev.datasets)  # never LoCoMo/LongMemEval
        assert seeds(dev.datasets).isdisjoint(seeds([s for c in train for s in c.datasets]) | seeds(held))
        assert {dev.window, *dev.extra_windows} == {WindowConfig(w=2, L=8, s=7), WindowConfig(w=1, L=4, s=3)}
        assert dev.teacher == "gold"
    locomo = SFTDataConfig.from_yaml(str(STAGES / "dev_data_locomo.yaml"))  # LoCoMo development: conversations 1-8
    from lazymem.train.selection import HELD_OUT_HISTORIES

    assert len(locomo.histories) == 8 and not set(locomo.histories) & HELD_OUT_HISTORIES


def test_locomo_ablation_is_v2s_recipe_plus_conversations_1_to_8_and_v2_has_no_test_set():
    import dataclasses

    from lazymem.train.selection import HELD_OUT_HISTORIES
    from lazymem.train.sft import SFTRecipe
    from lazymem.train.sft_data import SFTDataConfig

    v2 = SFTRecipe.from_yaml(STAGES / "sft.yaml")
    ablation = SFTRecipe.from_yaml(ABLATION / "sft.yaml")
    extra = SFTDataConfig.from_yaml(str(ABLATION / "data.yaml"))
    v2_data = SFTDataConfig.from_yaml(str(STAGES / "data.yaml"))
    # the same recipe, line for line, but for the data (v2's file first) and where it writes
    assert dataclasses.replace(ablation, data=v2.data, output_dir=v2.output_dir) == v2
    assert ablation.data == (v2.data, f"{extra.output_dir}/sft.jsonl") and ablation.output_dir != v2.output_dir
    assert len(extra.datasets) == 1 and "locomo" in extra.datasets[0] and extra.teacher == v2_data.teacher
    assert len(extra.histories) == 8 and not set(extra.histories) & HELD_OUT_HISTORIES
    assert (extra.window, extra.extra_windows) == (v2_data.window, v2_data.extra_windows)
    # the default model's data stays generated: no LoCoMo or LongMemEval source in v2's SFT data
    assert all(s.startswith(("synthetic:", "synthetic-casual:")) for s in v2_data.datasets)


def without_engine(row: dict) -> dict:
    """A table row without how it runs, only what it decides: llama.cpp named as the backend (what ``auto`` resolves
    to on CPU) and ``extra_body.decode`` (llama.cpp batched or one window at a time gives the same decisions:
    tests/test_llamacpp_batch.py)."""
    row = dict(row)
    if row.get("pipeline.mpm.backend") == "llamacpp":
        del row["pipeline.mpm.backend"]
    extra = {k: v for k, v in (row.pop("pipeline.mpm.extra_body", None) or {}).items() if k != "decode"}
    if extra:
        row["pipeline.mpm.extra_body"] = extra
    return row


def test_the_locomo_trained_adapter_runs_only_in_rows_named_ablation_with_the_prior_and_bias_chosen_for_it():
    import yaml

    adapter = yaml.safe_load((ABLATION / "keep_bias.yaml").read_text())["adapter"]
    assert adapter.endswith("ablation_locomo_sft/final") and (ROOT / adapter / "adapter_model.safetensors").is_file()
    chosen = json.loads((ROOT / "docs/results/lazymem-135m/ablation_locomo/keep_prior_drop.json").read_text())["chosen"]
    own = ("pipeline.mpm.adapter", "pipeline.keep_prior", "pipeline.mpm_sampling", "pipeline.mpm_sampling.logit_bias")

    def bias_and_rest(row):
        if "pipeline.mpm_sampling" in row:
            s = dict(row["pipeline.mpm_sampling"])
            return s.pop("logit_bias"), s
        return row["pipeline.mpm_sampling.logit_bias"], None

    seen = []
    for path in sorted((ROOT / "configs" / "tables").glob("*.yaml")):
        rows = (yaml.safe_load(path.read_text()) or {}).get("rows", {})
        for name, row in rows.items():
            if adapter not in json.dumps(row):
                continue
            seen.append(path.stem)
            assert "ablation" in name, f"{path}: row {name} runs the LoCoMo-trained adapter unlabelled"
            # decoded as v2 with independent decisions (the same keys and values), with its own prior and bias;
            # it may name the engine (llama.cpp batched: the same decisions, tests/test_llamacpp_batch.py)
            v2 = rows["lazymem_135m_v2_independent"]
            assert row.get("pipeline.mpm.backend", "llamacpp") == "llamacpp"
            assert row.get("pipeline.mpm.extra_body", {"decode": "batched"}) == {"decode": "batched"}
            assert {k: v for k, v in without_engine(row).items() if k not in own} == {
                k: v for k, v in without_engine(v2).items() if k not in own
            }
            assert row["pipeline.keep_prior"] == chosen["keep_prior"] and chosen["keep_prior_dense"] == 0
            bias, rest = bias_and_rest(row)
            assert bias == {" KEEP": chosen["keep_bias"]} and rest == bias_and_rest(v2)[1]
    assert sorted(seen) == ["longmemeval_s_real", "main_table_locomo", "paper_shape_locomo"]


def test_the_gpu_variants_of_v2_and_the_ablation_are_their_cpu_recipes_batched_in_bf16():
    import dataclasses

    from lazymem.train.sft import SFTRecipe

    for recipe in (STAGES, ABLATION):
        cpu, gpu = SFTRecipe.from_yaml(recipe / "sft.yaml"), SFTRecipe.from_yaml(recipe / "sft_gpu.yaml")
        # the same 8 examples an optimizer step, one batch instead of 8 accumulated; bf16; its own output
        assert (
            cpu.per_device_train_batch_size * cpu.gradient_accumulation_steps
            == gpu.per_device_train_batch_size * gpu.gradient_accumulation_steps
            == 8
        )
        assert gpu.bf16 and not cpu.bf16 and gpu.output_dir != cpu.output_dir
        same = {
            f: getattr(cpu, f)
            for f in (
                "per_device_train_batch_size",
                "gradient_accumulation_steps",
                "bf16",
                "output_dir",
                "logging_steps",
                "save_steps",
                "save_total_limit",
            )
        }
        assert dataclasses.replace(gpu, **same) == cpu


# --- training data: several windowings, varied text ----------------------------------------------------


def test_extra_windows_add_smaller_windows_of_the_same_questions(tmp_path):
    from lazymem.train.sft_data import SFTDataConfig, build_sft_data

    base = dict(
        datasets=("synthetic:messages=150,seed=1,histories=1,questions=6,varied=1",),
        retrieval=RetrievalConfig(n=6, dense_model=None, disk_cache=False),
        teacher="gold",
        questions=None,
        split=None,
        balance=False,
        progress=False,
    )
    build_sft_data(SFTDataConfig(**base, output_dir=str(tmp_path / "one")))
    build_sft_data(
        SFTDataConfig.from_dict(
            {**base, "extra_windows": [{"w": 1, "L": 4, "s": 3}], "output_dir": str(tmp_path / "two")}
        )
    )
    rows = [json.loads(x) for x in (tmp_path / "two" / "sft.jsonl").read_text().splitlines()]
    sizes = Counter(len(r["decision_positions"]) for r in rows)
    assert max(sizes) <= 8 and any(n <= 4 for n in sizes)
    n_one = len((tmp_path / "one" / "sft.jsonl").read_text().splitlines())
    assert len(rows) > n_one
    with pytest.raises(ConfigError, match=r"extra_windows\[0\]"):
        SFTDataConfig.from_dict({**base, "extra_windows": [{"w": 1, "Lx": 4}], "output_dir": "x"})


# --- the adapter: upper layers only, the shipped alias ---------------------------------------------------


def test_lora_on_upper_layers_only():
    from lazymem.train.modeling import LoraSettings

    s = LoraSettings(r=8, alpha=16, target_modules=("q_proj", "v_proj"), layers=[2, 3])
    cfg = s.peft_config()
    assert cfg.layers_to_transform == [2, 3] and set(cfg.target_modules) == {"q_proj", "v_proj"}
    with pytest.raises(ConfigError, match="target_modules as a list"):
        LoraSettings(layers=[1])
    with pytest.raises(ConfigError, match="layer indices"):
        LoraSettings(target_modules=("q_proj",), layers=[-1])
    from lazymem.train.recipe import load_recipe
    from lazymem.train.sft import SFTRecipe

    r = load_recipe(SFTRecipe, STAGES / "sft.yaml", {"lora": LoraSettings})  # continues v1's LoRA (every layer)
    assert r.lora is None and r.adapter.endswith("lazymem-135m-v1") and r.gradient_checkpointing is False
    assert r.bf16 is False


def test_shipped_adapter_alias_resolves_or_says_how_to_get_it(tmp_path, monkeypatch):
    import lazymem.llm.models as models

    monkeypatch.setattr(models, "ASSETS_DIR", tmp_path)
    with pytest.raises(ConfigError, match="lazymem train recipe"):
        models.resolve_adapter("lazymem-135m")
    (tmp_path / "lazymem-135m").mkdir()
    (tmp_path / "lazymem-135m" / "adapter_config.json").write_text("{}")
    assert models.resolve_adapter("lazymem-135m") == str(tmp_path / "lazymem-135m")
    assert models.resolve_adapter("some/dir") == "some/dir"
    ident = LLMConfig(model="smollm2-offline", adapter="lazymem-135m").identity()["adapter"]
    assert ident.startswith(str((tmp_path / "lazymem-135m").resolve()))
    assert models.resolve_adapter("lazymem-135m-v2") == str(tmp_path / "lazymem-135m")  # the default, by name
    with pytest.raises(ConfigError, match="'lazymem-135m-v1'"):
        models.resolve_adapter("lazymem-135m-v1")
    (tmp_path / "lazymem-135m-v1").mkdir()
    (tmp_path / "lazymem-135m-v1" / "adapter_config.json").write_text("{}")
    assert models.resolve_adapter("lazymem-135m-v1") == str(tmp_path / "lazymem-135m-v1")


def test_a_shipped_version_is_fingerprinted_under_one_name_and_v1_runs_stay_fresh():
    from lazymem.eval.config import EvalConfig, config_fingerprints
    from lazymem.pipeline.config import PipelineConfig
    from lazymem.train.heldout import WindowEvalConfig
    from lazymem.train.window_table import window_identity

    def fp(adapter):
        return config_fingerprints(EvalConfig(pipeline=PipelineConfig(mpm=LLMConfig(adapter=adapter))))[0]

    # the default alias and v2's name are one model; v1's runs were recorded as `lazymem-135m` while it was the
    # default, so they match `lazymem-135m-v1` and no longer match `lazymem-135m`
    assert fp("lazymem-135m") == fp("lazymem-135m-v2") != fp("lazymem-135m-v1")
    old_v1 = fp("lazymem-135m-v1")
    assert fp("x/final") not in (old_v1, fp("lazymem-135m"))
    win = {
        a: window_identity(WindowEvalConfig(data="d.jsonl", mpm=LLMConfig(adapter=a)))["mpm"]["adapter"]
        for a in ("lazymem-135m", "lazymem-135m-v1", "lazymem-135m-v2", None)
    }
    assert win == {
        "lazymem-135m": "lazymem-135m-v2",
        "lazymem-135m-v1": "lazymem-135m",
        "lazymem-135m-v2": "lazymem-135m-v2",
        None: None,
    }


# --- the pipeline table (lazymem.eval.table) -----------------------------------------------------------


def test_eval_table_runs_cells_resumes_and_computes_ratios(tmp_path):
    from lazymem.eval.table import EvalTableConfig, run_eval_table
    from lazymem.llm import FakeBackend

    base = tmp_path / "base.yaml"
    base.write_text(
        "dataset: 'synthetic:messages=150,seed=0,histories=1,questions=6'\nlimit: 2\njudge: none\n"
        "count_tokens: false\npipeline:\n  retrieval: {n: 4, dense_model: null, disk_cache: false}\n"
        "  window: {w: 1, L: 3, s: 2}\n"
    )
    cfg = EvalTableConfig(
        base=str(base),
        sets={"syn": {"limit": 2}},
        rows={"drop": {}, "rag": {"pipeline.method": "rag"}},
        reference="rag",
        output_dir=str(tmp_path / "t"),
    )
    made = []

    def clients(set_name, row):
        made.append(row)

        def mpm(prompt, sampling):  # all-DROP, the right count for each window
            n = prompt[-1]["content"].count('"role":')
            return "[" + ", ".join([DROP] * n) + "]"

        return {"mpm": FakeBackend(mpm), "answer": FakeBackend(lambda p, s: "Lisbon")}

    table = run_eval_table(cfg, progress=False, clients_for=clients)
    row = table["syn"]["drop"]
    assert row["questions"] == 2 and row["gate_fmt"] == 1.0 and row["gold_keep_recall"] in (0.0, None)
    assert row["nongold_drop_rate"] == 1.0 and table["syn"]["rag"]["gate_fmt"] is None
    assert (tmp_path / "t" / "syn" / "drop" / "records.jsonl").is_file()
    md = (tmp_path / "t" / "table.md").read_text()
    assert "| drop | 2 | 1.000 |" in md
    only = EvalTableConfig(
        base=str(base), sets=cfg.sets, rows=cfg.rows, reference="rag", only=("rag",), output_dir=cfg.output_dir
    )
    again = run_eval_table(only, progress=False, clients_for=clients)
    assert made == ["drop", "rag", "rag"] and again["syn"]["drop"] == row  # "drop" read back, not run
    with pytest.raises(ConfigError, match="reference"):
        EvalTableConfig(base="b", sets=cfg.sets, rows=cfg.rows, reference="nope")
    with pytest.raises(ConfigError, match="rows.x"):
        EvalTableConfig(base="b", sets=cfg.sets, rows={"x": 3})


def test_project_eval_table_config_loads_every_cell():
    from lazymem.eval import EvalConfig
    from lazymem.eval.table import EvalTableConfig
    from lazymem.train.recipe import load_recipe

    t = load_recipe(EvalTableConfig, ROOT / "configs" / "tables" / "lazymem135m.yaml")
    assert t.reference == "rag_top50" and {
        "base_free",
        "base_constrained",
        "grpo_sft_gpu_keepbias",
        "extractive",
    } <= set(t.rows)
    for s in t.sets:
        for r in t.rows:
            c = EvalConfig.from_yaml(ROOT / t.base, t.cell_overrides(s, r))
            assert c.limit == (6 if s == "synthetic_heldout" else 4)  # LoCoMo: a stated slice
            assert c.pipeline.lazymem.structured_trace == r.endswith("constrained_keepbias")
            if r.startswith("base"):
                assert c.pipeline.mpm.adapter is None and c.pipeline.lazymem.structured == (r == "base_constrained")
            if r == "rag_top50":
                assert c.pipeline.method == "rag" and c.pipeline.retrieval.n == 50


DEFAULT_ROW = "lazymem_135m_v2_v6_content"  # the test tables' row of the default as it ships (0.2.0)


@pytest.mark.parametrize("table", ["main_table_locomo", "paper_shape_locomo", "longmemeval_s_real"])
def test_the_test_tables_default_row_decodes_exactly_as_the_shipped_card_says(table):
    """The row the docs report as the default writes its decoding out (so its records keep their fingerprint
    when the card moves on); it must be the decoding and engine ``pipeline.mpm_decoding: card`` reads from the
    shipped adapter's card, on every set of every test table, or the docs would report another decoding (or
    another engine's cost) as the default's."""
    from lazymem.eval import EvalConfig
    from lazymem.eval.table import EvalTableConfig
    from lazymem.files import sha256_file
    from lazymem.llm.models import resolve_adapter
    from lazymem.pipeline import PipelineConfig
    from lazymem.pipeline.config import shipped_decoding, shipped_writer
    from lazymem.train.recipe import load_recipe

    t = load_recipe(EvalTableConfig, ROOT / "configs" / "tables" / f"{table}.yaml")
    assert DEFAULT_ROW in t.rows
    decoding, _ = shipped_decoding("lazymem-135m")
    writer = shipped_writer("lazymem-135m")

    def weights(name):
        return sha256_file(Path(resolve_adapter(name)) / "adapter_model.safetensors")

    for s in t.sets:
        row = EvalConfig.from_yaml(ROOT / t.base, t.cell_overrides(s, DEFAULT_ROW)).pipeline
        rest = {k: v for k, v in row.to_dict().items() if k not in decoding}  # the card's keys left to the card
        # the row names the content adapter by the training run it was shipped from: the same weights
        content = row.mpm.extra_body["content_adapter"]
        assert weights(content) == weights(writer), (table, s, content)
        rest["mpm"] = {**rest["mpm"], "extra_body": {**row.mpm.extra_body, "content_adapter": writer}}
        card = PipelineConfig.from_dict(
            {**rest, "mpm_decoding": "card", "mpm_sampling": {**row.mpm_sampling.as_dict(), "logit_bias": None}}
        )
        assert row.mpm.adapter == "lazymem-135m" and row.lazymem.trace_independent
        got = card.to_dict()
        got["mpm"]["extra_body"]["content_adapter"] = content
        # the engine too: the card runs llama.cpp batched, so the row's processing seconds and memory-model
        # tokens are what the default costs as it ships
        assert got["mpm"]["extra_body"]["decode"] == "batched"
        assert row.to_dict() == got, (table, s)


# --- shipping: adapter + model card from the run's files -------------------------------------------------


def test_release_copies_the_adapter_and_writes_a_card_from_files(tmp_path):
    from lazymem.train.release import ReleaseConfig, run_summary, ship

    src = tmp_path / "grpo" / "final"
    src.mkdir(parents=True)
    (src / "adapter_config.json").write_text(
        json.dumps({"r": 16, "lora_alpha": 32, "target_modules": ["q_proj"], "layers_to_transform": [15, 16]})
    )
    (src / "adapter_model.safetensors").write_bytes(b"\0" * 1000)
    sft = tmp_path / "sft" / "checkpoint-40"  # an SFT run still in progress: its newest checkpoint counts
    sft.mkdir(parents=True)
    (sft / "trainer_state.json").write_text(
        json.dumps({"global_step": 40, "max_steps": 161, "log_history": [{"step": 40, "loss": 0.12}]})
    )
    (sft / "wall_clock.json").write_text(json.dumps({"seconds": 7200.0, "segments": 2}))
    (tmp_path / "grpo" / "train_result.json").write_text(
        json.dumps(
            {
                "global_step": 30,
                "wall_s_total": 3600.0,
                "segments": 1,
                "recipe": {"learning_rate": 2e-5},
                "log_history": [{"step": 30, "loss": 0.01}],
            }
        )
    )
    (tmp_path / "w.json").write_text(json.dumps({"synthetic_heldout": {"sft": {"gate_fmt": 0.97, "windows": 40}}}))
    cfg = ReleaseConfig(
        adapter=str(src),
        stage="sft+grpo",
        sft_data=str(tmp_path / "none.json"),
        rl_data=None,
        sft_run=str(tmp_path / "sft"),
        grpo_run=str(tmp_path / "grpo"),
        window_table=str(tmp_path / "w.json"),
        pipeline_table=None,
        dest=str(tmp_path / "asset"),
        measure_load=False,
    )
    card = ship(cfg)
    assert (tmp_path / "asset" / "adapter_model.safetensors").read_bytes() == b"\0" * 1000
    assert card["sft"]["finished"] is False and card["sft"]["global_step"] == 40 and card["sft"]["wall_s_total"] == 7200
    assert card["grpo"]["finished"] is True and card["adapter_bytes"] == 1000 and card["sft_data"] is None
    md = (tmp_path / "asset" / "README.md").read_text()
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in md and "40 optimizer steps (in progress" in md
    assert "2.00 h over 2 process(es)" in md and "| sft | 0.97 | 40 |" in md and "Not measured yet." in md
    assert json.loads((tmp_path / "asset" / "card.json").read_text())["stage"] == "sft+grpo"
    assert run_summary(str(tmp_path / "nothing")) is None and "SFT2" not in md and "## Decoding" not in md
    # a second SFT stage and a chosen KEEP bias appear in the card when given
    (tmp_path / "sft2").mkdir()
    (tmp_path / "sft2" / "train_result.json").write_text(
        json.dumps(
            {"global_step": 81, "wall_s_total": 4620.0, "segments": 2, "log_history": [{"step": 81, "loss": 0.04}]}
        )
    )
    (tmp_path / "kb.json").write_text(
        json.dumps(
            {
                "keep_bias": 2.197225,
                "auc": 0.85,
                "settings": {"pairs": "dev.jsonl"},
                "chosen": {"threshold": 0.1, "by": "max mean R_act", "gold_recall": 0.8, "nongold_keep_rate": 0.2},
            }
        )
    )
    card = ship(dataclasses.replace(cfg, sft2_run=str(tmp_path / "sft2"), keep_bias=str(tmp_path / "kb.json")))
    md = (tmp_path / "asset" / "README.md").read_text()
    assert card["sft2"]["global_step"] == 81 and "SFT2: 81 optimizer steps (finished)" in md
    assert '`logit_bias: {" KEEP": 2.197225}`' in md and "at least 0.1" in md and "dev.jsonl" in md
    assert "offline, on CPU" in md and "- machine: " in md and card["device_run"] is None
    # a KEEP bias chosen together with the lexical prior (lazymem train keep-prior)
    (tmp_path / "kp.json").write_text(
        json.dumps(
            {
                "settings": {"select": ["dev160.json"]},
                "windows": 160,
                "chosen": {
                    "by": "max mean R_act",
                    "keep_prior": 8.0,
                    "keep_bias": 0.25,
                    "gold_recall": 0.84,
                    "nongold_keep_rate": 0.05,
                    "mean_r_act": 0.9,
                },
                "no_prior": {
                    "keep_prior": 0.0,
                    "keep_bias": 1.5,
                    "gold_recall": 0.81,
                    "nongold_keep_rate": 0.08,
                    "mean_r_act": 0.87,
                },
            }
        )
    )
    card = ship(dataclasses.replace(cfg, keep_bias=str(tmp_path / "kp.json"), decoding={"keep_prior": 8.0}))
    md = (tmp_path / "asset" / "README.md").read_text()
    assert (card["keep_bias"]["keep_bias"], card["keep_bias"]["keep_prior"]) == (0.25, 8.0)
    assert "`keep_prior: 8.0`" in md and '`logit_bias: {" KEEP": 0.25}`' in md and "dev160.json" in md
    assert "without a prior, 1.5: 0.81, 0.08, 0.87" in md and "ships with: `keep_prior: 8.0`" in md
    assert "keep_prior_dense" not in md and "keep_prior_dense" not in card["keep_bias"]
    assert "trace_independent" not in md
    # ... decided line by line without the earlier ops (pipeline.trace_independent): the card says so
    card = ship(
        dataclasses.replace(
            cfg, keep_bias=str(tmp_path / "kp.json"), decoding={"keep_prior": 8.0, "trace_independent": True}
        )
    )
    md = (tmp_path / "asset" / "README.md").read_text()
    assert card["decoding"]["trace_independent"] is True and "`trace_independent: true`" in md
    assert "every earlier op DROP" in md and "context=drop" in md
    # ... and with the dense prior beside it: the card names its weight, its encoder and the lexical-only best
    (tmp_path / "kpd.json").write_text(
        json.dumps(
            {
                "settings": {"select": ["dev160.json"]},
                "windows": 160,
                "chosen": {
                    "by": "max mean R_act",
                    "keep_prior": 8.0,
                    "keep_prior_dense": 10.0,
                    "keep_bias": -1.5,
                    "keep_prior_model": "minilm-offline",
                    "gold_recall": 0.9,
                    "nongold_keep_rate": 0.08,
                    "mean_r_act": 0.92,
                },
                "no_dense": {
                    "keep_prior": 8.0,
                    "keep_prior_dense": 0.0,
                    "keep_bias": 0.25,
                    "gold_recall": 0.84,
                    "nongold_keep_rate": 0.05,
                    "mean_r_act": 0.9,
                },
                "no_prior": {
                    "keep_prior": 0.0,
                    "keep_prior_dense": 0.0,
                    "keep_bias": 1.5,
                    "gold_recall": 0.81,
                    "nongold_keep_rate": 0.08,
                    "mean_r_act": 0.87,
                },
            }
        )
    )
    card = ship(
        dataclasses.replace(
            cfg, keep_bias=str(tmp_path / "kpd.json"), decoding={"keep_prior": 8.0, "keep_prior_dense": 10.0}
        )
    )
    md = (tmp_path / "asset" / "README.md").read_text()
    assert (card["keep_bias"]["keep_prior_dense"], card["keep_bias"]["keep_prior_model"]) == (10.0, "minilm-offline")
    assert "`keep_prior_dense: 10.0`" in md and "under `minilm-offline`" in md and '" KEEP": -1.5' in md
    assert "the best lexical prior alone, 8.0 with bias 0.25: 0.84, 0.05, 0.9" in md
    # stages trained on a leased GPU: the card says where, and quotes the device script's record
    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "machine": "one leased GPU",
                "commands": ["bash scripts/device_train.sh"],
                "calls": [
                    {
                        "device": "GPU",
                        "wall_s": 473.1,
                        "skipped": [],
                        "stages": {"sft": {"global_step": 410, "train_s": 240.6, "eval": {"x": {}}}},
                    }
                ],
            }
        )
    )
    card = ship(dataclasses.replace(cfg, trained_on="one leased NVIDIA H200", device_run=str(tmp_path / "run.json")))
    md = (tmp_path / "asset" / "README.md").read_text()
    assert "offline, on one leased NVIDIA H200;" in md and "- trained on: one leased NVIDIA H200" in md
    assert card["device_run"]["calls"][0]["stages"]["sft"]["global_step"] == 410
    assert "eval" not in card["device_run"]["calls"][0]["stages"]["sft"]
    # a content adapter shipped beside it: copied next to the asset, named by the card, its own README
    writer = tmp_path / "content" / "final"
    writer.mkdir(parents=True)
    (writer / "adapter_config.json").write_text(json.dumps({"r": 16}))
    (writer / "adapter_model.safetensors").write_bytes(b"\1" * 500)
    (tmp_path / "content" / "train_result.json").write_text(
        json.dumps(
            {
                "global_step": 64,
                "wall_s_total": 5124.0,
                "segments": 1,
                "recipe": {"adapter": "lazymem/assets/x"},
                "log_history": [{"step": 64, "loss": 0.05}],
            }
        )
    )
    (tmp_path / "cw.json").write_text(json.dumps({"v2_dev": {"writes": {"kept_tokens": 18.5, "windows": 120}}}))
    card = ship(
        dataclasses.replace(
            cfg,
            content_adapter=str(writer),
            content_run=str(tmp_path / "content"),
            content_table=str(tmp_path / "cw.json"),
        )
    )
    w = card["content_adapter"]
    assert (tmp_path / "asset-writer" / "adapter_model.safetensors").read_bytes() == b"\1" * 500
    assert (w["name"], w["adapter_bytes"], w["sft"]["global_step"]) == ("lazymem-135m-v2-writer", 500, 64)
    assert "`lazymem-135m-v2-writer`" in (tmp_path / "asset" / "README.md").read_text()
    wmd = (tmp_path / "asset-writer" / "README.md").read_text()
    assert "64 optimizer steps, 1.42 h over 1 process(es)" in wmd and "| writes | 18.5 | 120 |" in wmd
    assert "It never decides" in wmd and "sha256 " + w["adapter_sha256"][:16] in wmd
    with pytest.raises(ConfigError, match="content_adapter='.*nothing'"):
        ship(dataclasses.replace(cfg, content_adapter=str(tmp_path / "nothing")))
    with pytest.raises(ConfigError, match="no content-adapter name"):
        ReleaseConfig(version="lazymem-135m-v1", content_adapter=str(writer))
    with pytest.raises(ConfigError, match="adapter_model.safetensors not found"):
        ship(ReleaseConfig(adapter=str(tmp_path), dest=str(tmp_path / "x"), measure_load=False))
    with pytest.raises(ConfigError, match="stage"):
        ReleaseConfig(stage="rl")


def test_recipe_steps_name_existing_configs_and_refuse_unknown_steps():
    from lazymem.notebooks.recipe import RECIPE, run_recipe, run_step

    assert [s.name for s in RECIPE][-1] == "release" and len({s.name for s in RECIPE}) == len(RECIPE)
    for step in RECIPE:
        assert (ROOT / step.config).is_file(), step.config
    with pytest.raises(ConfigError, match="recipe step 'train'"):
        run_recipe(until="train")
    with pytest.raises(ConfigError, match="unknown recipe step kind"):
        run_step("magic", {}, "x.yaml")


def test_demo_shows_kept_memory_next_to_gold_and_falls_back_without_the_adapter(capsys, tmp_path, monkeypatch):
    from lazymem.data import load_dataset
    from lazymem.demo import show_memories

    ds = load_dataset("synthetic:messages=150,seed=0,histories=1,questions=6")
    q = next(q for q in ds.questions if q.evidence)
    gold = q.evidence[0]
    rec = {
        "answer": "an answer",
        "construction": {
            "n_windows": 2,
            "n_valid": 2,
            "n_fmt": 2,
            "n_kept": 2,
            "n_messages": 8,
            "n_decided": 8,
            "n_gold_kept": 1,
            "n_gold": len(q.evidence),
            "failures": {},
        },
        "decisions": [
            {"pos": gold, "op": "KEEP", "content": "THE GOLD LINE", "reason": None},
            {"pos": gold + 1, "op": "KEEP", "content": "another line", "reason": None},
            {"pos": gold + 2, "op": "DROP", "content": "", "reason": None},
        ],
    }
    from lazymem.eval.records import RunRecord

    show_memories({q.id: RunRecord.from_json({"question_id": q.id, "method": "lazymem", "status": "ok", **rec})}, ds)
    out = capsys.readouterr().out
    assert f"gold  [KEPT   ] {ds.history(q).messages[gold].role}:" in out
    assert "kept  [gold]    THE GOLD LINE" in out and "kept  [    ]    another line" in out
    assert "gold kept 1/" in out and "model answer: 'an answer'" in out
    import lazymem.llm.models as models

    monkeypatch.setattr(models, "ASSETS_DIR", tmp_path)  # no shipped adapter in this checkout
    from lazymem.demo import demo_eval_config

    with pytest.raises(ConfigError, match="not in this checkout"):
        models.resolve_adapter(demo_eval_config().pipeline.mpm.adapter)


def test_trace_constrained_decoding_is_wired_through_pipeline_and_window_eval(tmp_path):
    from lazymem.construct import decision_schema
    from lazymem.llm import FakeBackend
    from lazymem.pipeline import PipelineConfig
    from lazymem.prompts import THINK_LINES

    assert decision_schema(3, think=True)[THINK_LINES] == 3 and THINK_LINES not in decision_schema(3)
    with pytest.raises(ConfigError, match="structured_trace"):
        PipelineConfig(
            lazymem={"structured": True, "structured_trace": True},
            mpm=LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1"),
        )
    assert PipelineConfig.from_dict({"structured": True, "structured_trace": True}).lazymem.structured_trace
    data = _jsonl(tmp_path / "pairs.jsonl", _rows(2))
    fake = FakeBackend(lambda p, s: "<think>\n1. a\n2. b\n</think>\n" + _oracle(p, s))
    s = evaluate_windows(
        WindowEvalConfig(data=data, structured=True, structured_trace=True), None, client=fake, progress=False
    )
    assert s["gate_fmt"] == 1.0 and all(sp.json_schema[THINK_LINES] == 2 for _, sp in fake.calls)


def test_window_eval_runs_separate_calls_side_by_side_on_llama_cpp_instances(tmp_path):
    """Structured (or grounded) windows of different shapes need separate calls; with backend llamacpp they
    run on batch_size model instances at once, as the pipeline's do, and each output lands on its window."""
    import threading
    import time

    from lazymem.llm import FakeBackend

    rows = [
        dict(r, decision_positions=list(range(10 * i, 10 * i + 1 + i % 3)), gold_labels=[True] + [False] * (i % 3))
        for i, r in enumerate(_rows(6))
    ]
    active, peak, lock = [0], [0], threading.Lock()

    def slow(prompt, sampling):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        n = sampling.json_schema["minItems"]
        return "[" + ", ".join([KEEP % prompt[-1]["content"]] + [DROP] * (n - 1)) + "]"

    data = _jsonl(tmp_path / "pairs.jsonl", rows)
    cpp = LLMConfig(backend="llamacpp", model="smollm2-offline", batch_size=2)
    s = evaluate_windows(
        WindowEvalConfig(data=data, mpm=cpp, structured=True),
        tmp_path / "out",
        client=FakeBackend(slow),
        progress=False,
    )
    assert peak[0] == 2 and s["gate_fmt"] == 1.0 and s["gold_keep_recall"] == 1.0
    records = [json.loads(line) for line in (tmp_path / "out" / "windows.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in records] == [f"q{i}" for i in range(6)]
    peak[0] = 0
    evaluate_windows(WindowEvalConfig(data=data, structured=True), None, client=FakeBackend(slow), progress=False)
    assert peak[0] == 1  # transformers (and the fake) take one call at a time


def test_keep_bias_config_refuses_bad_input_and_reads_a_finished_record_back(tmp_path):
    from lazymem.train.probe import THRESHOLDS, KeepBiasConfig, choose_keep_bias, keep_bias

    with pytest.raises(ConfigError, match="pairs"):
        KeepBiasConfig()
    with pytest.raises(ConfigError, match="limit"):
        KeepBiasConfig(pairs="x.jsonl", limit=1)
    cfg = KeepBiasConfig(pairs=str(tmp_path / "missing.jsonl"), output=str(tmp_path / "kb.json"))
    with pytest.raises(ConfigError, match="missing.jsonl"):
        choose_keep_bias(cfg)  # no pairs file: a clear error before any model loads
    with pytest.raises(ConfigError, match="target_recall"):
        KeepBiasConfig(pairs="x.jsonl", target_recall=1.5)
    grid = [{"threshold": t} for t in THRESHOLDS]
    # a record written before target_recall existed has no such key, and stays valid
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("target_recall", "styles", "context")}
    done = {"settings": settings, "keep_bias": keep_bias(0.1), "thresholds": grid}
    (tmp_path / "kb.json").write_text(json.dumps(done))
    assert choose_keep_bias(cfg) == done  # same settings, same grid: no model call
    with pytest.raises(ConfigError, match="missing.jsonl"):  # another operating point is another record
        choose_keep_bias(dataclasses.replace(cfg, target_recall=0.8))
    with pytest.raises(ConfigError, match="missing.jsonl"):  # so is another decision context (earlier ops DROP)
        choose_keep_bias(dataclasses.replace(cfg, context="drop"))
    (tmp_path / "kb.json").write_text(json.dumps({**done, "thresholds": grid[:-1]}))
    with pytest.raises(ConfigError, match="missing.jsonl"):
        choose_keep_bias(cfg)  # a record from a shorter grid is recomputed, not reused
    assert round(keep_bias(0.1), 3) == 2.197 and keep_bias(0.9) < 0
    # a style subset: a list of names; a file without that style says so before any model loads
    with pytest.raises(ConfigError, match="styles"):
        KeepBiasConfig(pairs="x.jsonl", styles="casual")
    row = {"prompt": [], "decision_positions": [0], "gold_labels": [True], "style": "synthetic"}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(row) + "\n")
    casual = KeepBiasConfig(pairs=str(tmp_path / "pairs.jsonl"), output=str(tmp_path / "c.json"), styles=["casual"])
    assert casual.styles == ("casual",)
    with pytest.raises(ConfigError, match="no pair of .*pairs.jsonl has one of these styles"):
        choose_keep_bias(casual)


def test_every_keep_bias_is_the_one_chosen_for_its_adapter_on_the_development_windows():
    import yaml

    import lazymem.llm.models as models

    results = ROOT / "docs/results/lazymem-135m"
    # the development windows: synthetic (keep_bias*.json, v2_dev/) and, for labelled target-calibrated rows,
    # LoCoMo conversations 1-8 (locomo_dev/; never the test conversations 9-10)
    records = [
        json.loads(p.read_text())
        for p in sorted(
            [
                *results.glob("keep_bias*.json"),
                *results.glob("v2_dev/keep_bias*.json"),
                *results.glob("locomo_dev/keep_bias*.json"),
            ]
        )
    ]
    if not records:
        pytest.skip("no keep_bias*.json yet (recipe steps keep-bias*)")
    # each shipped version is a copy of a training output (its card says which)
    shipped = {
        name: json.loads((ROOT / "lazymem/assets" / d / "card.json").read_text())
        for name, d in models.LAZYMEM_135M_VERSIONS.items()
    }
    source = {name: card["shipped_from"] for name, card in shipped.items()}
    assert source["lazymem-135m-v1"] == "models/lazymem-135m/train/grpo_sft_gpu/step3"
    source["lazymem-135m"] = source[models.LAZYMEM_135M_DEFAULT]
    chosen: dict[str, set] = {}  # an adapter may have several operating points (best R_act, a recall floor)
    for r in records:
        adapter = r["settings"]["adapter"]
        chosen.setdefault(source.get(adapter, adapter), set()).add(r["keep_bias"])
    # (keep_prior, bias) pairs chosen on development probe records (lazymem train keep-prior), and the best bias
    # without a prior there; a row with a prior must decode with a chosen pair, one chosen in its own decoding's
    # context (independent decisions, pipeline.trace_independent: probes read with every earlier op DROP)
    pairs: dict[tuple[str, bool], set] = {}
    for p in sorted([*results.glob("v2_dev/keep_prior*.json"), *results.glob("independent_dev/keep_prior*.json")]):
        r = json.loads(p.read_text())
        probes = [json.loads((ROOT / s).read_text())["settings"] for s in r["settings"]["select"]]
        adapters = {x["adapter"] for x in probes}
        assert len(adapters) == 1 and not any("locomo" in s for s in r["settings"]["select"]), r["settings"]
        a = adapters.pop()
        contexts = {x.get("context", "gold") for x in probes}
        assert len(contexts) == 1, r["settings"]
        independent = contexts.pop() == "drop"
        for c in (r["chosen"], r.get("no_dense")):  # (lexical prior, dense prior, bias); records before the dense one
            if c:  # chose the lexical pair only
                pairs.setdefault((source.get(a, a), independent), set()).add(
                    (c["keep_prior"], c.get("keep_prior_dense", 0.0), c["keep_bias"])
                )
        chosen.setdefault(source.get(a, a), set()).add(r["no_prior"]["keep_bias"])
    biased, prior = {}, {}
    demo = yaml.safe_load((ROOT / "configs/eval/demo.yaml").read_text())["pipeline"]
    if demo.get("mpm_decoding") == "card":  # the demo decodes as its adapter's card says (checked below)
        assert demo["mpm"]["adapter"] in source and "logit_bias" not in demo["mpm_sampling"]
    else:
        demo_key = (source[demo["mpm"]["adapter"]], demo["mpm_sampling"]["logit_bias"][" KEEP"])
        if demo.get("keep_prior") or demo.get("keep_prior_dense"):
            prior["demo"] = (
                (demo_key[0], bool(demo.get("trace_independent"))),
                (demo.get("keep_prior", 0.0), demo.get("keep_prior_dense", 0.0), demo_key[1]),
            )
        else:
            biased["demo"] = demo_key
    table = yaml.safe_load((ROOT / "configs/tables/lazymem135m.yaml").read_text())["rows"]
    biased.update(
        {
            f"table.{n}": (r["pipeline.mpm.adapter"], r["pipeline.mpm_sampling.logit_bias"][" KEEP"])
            for n, r in table.items()
            if r.get("pipeline.mpm_sampling.logit_bias")
        }
    )  # null: no bias
    for cfg in ("main_table_locomo.yaml", "paper_shape_locomo.yaml", "longmemeval_s_real.yaml"):
        rows = yaml.safe_load((ROOT / "configs/tables" / cfg).read_text())["rows"]
        for n, r in rows.items():
            if n.startswith("control_"):  # a control: the default's settings with one part taken away, none its own
                continue
            bias = r.get("pipeline.mpm_sampling.logit_bias") or (r.get("pipeline.mpm_sampling") or {}).get("logit_bias")
            if r.get("pipeline.mpm.adapter") in source and bias and r.get("pipeline.keep_prior"):
                key = (source[r["pipeline.mpm.adapter"]], bool(r.get("pipeline.trace_independent")))
                prior[f"{cfg}.{n}"] = (
                    key,
                    (r["pipeline.keep_prior"], r.get("pipeline.keep_prior_dense", 0.0), bias[" KEEP"]),
                )
            elif r.get("pipeline.mpm.adapter") in source and bias:
                biased[f"{cfg}.{n}"] = (source[r["pipeline.mpm.adapter"]], bias[" KEEP"])
    assert len(biased) >= 4 and all(b in chosen.get(a, ()) for a, b in biased.values()), (chosen, biased)
    assert prior and all(b in pairs.get(a, ()) for a, b in prior.values()), (pairs, prior)
    for card in shipped.values():
        kb = card["keep_bias"]
        if kb.get("keep_prior") is not None:
            independent = bool((card.get("decoding") or {}).get("trace_independent"))
            assert (kb["keep_prior"], kb.get("keep_prior_dense", 0.0), kb["keep_bias"]) in pairs[
                (card["shipped_from"], independent)
            ]
            # the card ships the prior it chose
            assert card["decoding"]["keep_prior"] == kb["keep_prior"]
            assert card["decoding"].get("keep_prior_dense", 0.0) == kb.get("keep_prior_dense", 0.0)
        else:
            assert kb["keep_bias"] in chosen[card["shipped_from"]]


@pytest.mark.parametrize("table", ["main_table_locomo.yaml", "paper_shape_locomo.yaml"])
def test_each_control_row_is_the_default_with_one_part_taken_away(table):
    """control_untrained_default_decoding: the default's row with no decision adapter; control_default_no_prior:
    the default's row with the lexical prior off. Nothing else differs (the controls measure those parts)."""
    import yaml

    rows = yaml.safe_load((ROOT / "configs/tables" / table).read_text())["rows"]

    default = without_engine(rows["lazymem_135m_v2_v6_content"])

    def diff(row: dict) -> dict:
        row = without_engine(row)
        return {k: (default.get(k), row.get(k)) for k in set(default) | set(row) if default.get(k) != row.get(k)}

    assert diff(rows["control_untrained_default_decoding"]) == {"pipeline.mpm.adapter": ("lazymem-135m", None)}
    assert diff(rows["control_default_no_prior"]) == {"pipeline.keep_prior": (5.0, 0.0)}
