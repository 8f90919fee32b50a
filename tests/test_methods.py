"""Methods are classes registered by name: the pipeline calls them, the rest of the project asks them.

The toy baseline below is what docs/ARCHITECTURE.md shows: one new module (written to a temporary
folder) and one registry line, and it runs through the pipeline, an evaluation run, the memory
measures, attribution, the dry run's model list and the committed tables' fingerprints.
"""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from fakerun import FAKE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.errors import ConfigError
from lazymem.llm import FakeBackend
from lazymem.pipeline import LazyMemPipeline, PipelineConfig
from lazymem.pipeline.methods import REGISTRY, Method, method_class, method_names

REPO = Path(__file__).resolve().parents[1]

TOY = textwrap.dedent('''
    """A toy baseline: the memory is the history's longest message."""
    from lazymem.pipeline.methods import Method, MethodOutput
    from lazymem.prompts import text_memory


    class Longest(Method):
        name, label = "longest", "Longest message"

        def memory(self, history, question, pool, timings):
            best = max(history.messages, key=lambda m: len(m.text))
            return MethodOutput(text_memory([best]), baseline={"pos": best.pos})

        @classmethod
        def memory_positions(cls, record, question, history):
            return {record.baseline["pos"]}
''')


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_method.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(REGISTRY, "longest", "toy_method:Longest")  # the one registry line
    yield method_class("longest")
    sys.modules.pop("toy_method", None)


def test_every_registered_method_is_a_method_named_as_registered():
    for name in method_names():
        cls = method_class(name)
        assert issubclass(cls, Method) and cls.name == name and cls.label
        assert cls.section is None or hasattr(PipelineConfig(), cls.section)  # its settings are a config section
    with pytest.raises(ConfigError, match="unknown method 'nope'; methods are"):
        method_class("nope")
    with pytest.raises(ConfigError, match="PipelineConfig.method='nope': must be one of"):
        PipelineConfig(method="nope")


def test_what_callers_ask_matches_what_each_method_does():
    by = {n: method_class(n) for n in method_names()}
    assert [n for n, c in by.items() if c.retrieves] == ["lazymem", "extractive", "rag"]
    assert [n for n, c in by.items() if c.constructs] == ["lazymem", "extractive"]
    assert [n for n, c in by.items() if c.writes_text] == ["nanomemory", "mem0"]
    assert [n for n, c in by.items() if c.uses_mpm] == ["lazymem", "nanomemory", "mem0"]
    assert [n for n, c in by.items() if c.processing_stage] == ["lazymem", "extractive", "nanomemory", "mem0"]
    assert {n: c.section for n, c in by.items() if c.section} == {"extractive": "extractive",
                                                                   "nanomemory": "nanomemory", "mem0": "mem0"}
    from lazymem.eval.paper import PAPER_SYSTEM

    assert PAPER_SYSTEM == {"oracle_turn": "Oracle Turn", "oracle_session": "Oracle Session",
                            "nanomemory": "NanoMemory", "mem0": "Mem0"}


def test_a_toy_baseline_is_one_module_and_one_registry_line(toy, tmp_path):
    from lazymem.data import load_dataset
    from lazymem.eval import EvalConfig, evaluate
    from lazymem.eval.attribution import attribute

    assert "longest" in method_names() and toy.label == "Longest message"
    ds = load_dataset(SYNTH)
    q = ds.questions[0]
    history = ds.history(q)
    answer = FakeBackend(lambda p, s: "an answer")
    pipe = LazyMemPipeline(PipelineConfig(method="longest", answer=PipelineConfig().answer.__class__(**FAKE)),
                           clients={"answer": answer})
    r = pipe.answer(history, q)
    longest = max(history.messages, key=lambda m: len(m.text))
    assert r.ok and r.method == "longest" and longest.text in r.memory and r.pool is None
    assert r.answer_prompt == "answer_text" and "processing" in r.timings and r.answer == "an answer"

    config = EvalConfig.from_dict({"dataset": SYNTH, "limit": 3, "pipeline": {
        "method": "longest", "retrieval": {"dense_model": None}, "answer": FAKE}})
    summary = evaluate(config, tmp_path / "run", progress=False, clients={"answer": answer}, dataset=ds)
    assert summary["counts"]["ok"] == 3
    recs = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    for rec in recs:
        assert rec["method"] == "longest" and rec["baseline"]["pos"] == longest.pos
        m = rec["memory_measures"]
        assert m["evidence_match"] == "identity"  # asked the method for its positions
        qq = next(x for x in ds.questions if x.id == rec["question_id"])
        assert m["evidence_recall"] == len({longest.pos} & set(qq.evidence)) / len(set(qq.evidence))
        assert attribute(rec)["stage"] in (None, "QA error", "no gold evidence")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["pipeline"]["method"] == "longest" and manifest["models"]["mpm"] is None


def test_old_flat_method_settings_still_load_and_keep_their_fingerprint():
    from lazymem.eval import EvalConfig, config_fingerprint

    flat = {"dataset": SYNTH, "pipeline": {"method": "nanomemory", "nanomemory_top_k": 4, "nanomemory_context": 2048}}
    nested = {"dataset": SYNTH, "pipeline": {"method": "nanomemory", "nanomemory": {"top_k": 4, "context": 2048}}}
    a, b = EvalConfig.from_dict(flat), EvalConfig.from_dict(nested)
    assert a == b and a.pipeline.nanomemory.top_k == 4 and config_fingerprint(a) == config_fingerprint(b)
    legacy = a.pipeline.legacy_dict()
    assert (legacy["nanomemory_top_k"], legacy["nanomemory_context"]) == (4, 2048) and "nanomemory" not in legacy
    flat_mem0 = EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": "rag", "mem0_chunk": 3}})
    assert flat_mem0.pipeline.mem0.chunk == 3
    with pytest.raises(ConfigError, match="nanomemory_top_k and nanomemory.top_k both set"):
        EvalConfig.from_dict({"dataset": SYNTH, "pipeline": {"method": "rag", "nanomemory_top_k": 4,
                                                             "nanomemory": {"top_k": 5}}})


MAIN_TABLE = REPO / "configs" / "tables" / "main_table_locomo.yaml"
LOCOMO = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo is not in ../shared/data on this machine")
def test_the_committed_main_table_cells_stay_resumable_across_fingerprint_versions(monkeypatch):
    """Every cell of the committed main table stays fresh: those recorded before method sections and the
    thinking-budget fields existed (version 2's hash) and those recorded with them unset (version 1's)."""
    import yaml

    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig
    from lazymem.eval.table import EvalTableConfig, cell_changes

    monkeypatch.chdir(REPO)
    raw = yaml.safe_load(MAIN_TABLE.read_text())
    table = EvalTableConfig(**{k: raw[k] for k in ("base", "sets", "rows", "reference", "output_dir") if k in raw})
    states = {}
    for set_name in table.sets:
        for row in table.rows:
            cfg = EvalConfig.from_yaml(table.base, table.cell_overrides(set_name, row))
            ds = load_dataset(cfg.dataset, subset=cfg.subset)
            states[row] = cell_changes(Path(table.output_dir) / set_name / row, cfg, ds)
    # a committed cell is fresh ([]); a row configured but not run yet has no results (None); none is stale
    stale = {row: changes for row, changes in states.items() if changes}
    fresh = [row for row, changes in states.items() if changes == []]
    assert not stale and len(fresh) >= 12, (stale, fresh)
