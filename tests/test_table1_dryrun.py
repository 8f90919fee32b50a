"""The paper's Table 1 recipes (configs/paper_table1_*.yaml) and ``eval-table --dry-run``: both parse
into the paper's settings, and the dry run lists every cell, its models and a count (or bound) of its
model calls without running anything, loading a model or touching the network."""

from __future__ import annotations

import random
import socket
import sys
from pathlib import Path

import pytest

from lazymem.eval import EvalConfig
from lazymem.eval.dryrun import dry_run, dry_run_text, max_windows
from lazymem.eval.table import EvalTableConfig
from lazymem.retrieve import WindowConfig
from lazymem.retrieve.window import build_windows
from lazymem.train.recipe import build_recipe, load_recipe

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "locomo": ROOT / "configs" / "tables" / "paper_table1_locomo.yaml",
    "longmemeval": ROOT / "configs" / "tables" / "paper_table1_longmemeval.yaml",
}
ROWS = [
    "oracle_turn",
    "rag_top20",
    "rag_top50",
    "extractive",
    "nanomemory",
    "mem0",
    "lazymem",
    "lazymem_4b",
    "lazymem_135m",
]
QWEN32 = ("Qwen/Qwen3-32B", "http://127.0.0.1:8001/v1")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)  # the recipes name configs/ and ../shared/data relative to the checkout
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache"))


def table(name: str, *overrides: str) -> EvalTableConfig:
    """The table as ``lazymem eval-table --config ... --set ...`` reads it."""
    from lazymem.eval.table import apply_table_sets
    from lazymem.yamlio import read_mapping

    return build_recipe(
        EvalTableConfig, apply_table_sets(read_mapping(CONFIGS[name]), list(overrides)), str(CONFIGS[name])
    )


@pytest.mark.parametrize("name", ["locomo", "longmemeval"])
def test_the_table1_recipes_resolve_to_the_papers_settings(name):
    t = load_recipe(EvalTableConfig, CONFIGS[name])
    # Oracle Session: LongMemEval only; LazyMem-135M: LoCoMo only (LongMemEval windows at the paper's shape
    # run past SmolLM2's 8,192-token context)
    assert list(t.rows) == (ROWS[:1] + ["oracle_session"] + ROWS[1:-1] if name == "longmemeval" else ROWS)
    assert t.reference == "rag_top50" and len(t.sets) == 1
    for s in t.sets:
        for r in t.rows:
            c = EvalConfig.from_yaml(ROOT / t.base, t.cell_overrides(s, r))
            p = c.pipeline
            assert p.method == {
                "lazymem_4b": "lazymem",
                "lazymem_135m": "lazymem",
                "rag_top20": "rag",
                "rag_top50": "rag",
            }.get(r, r)
            assert (p.window.w, p.window.L, p.window.s) == (2, 8, 7)
            assert p.retrieval.n == (20 if r == "rag_top20" else 50)
            assert (p.retrieval.dense_model, p.retrieval.reranker, p.retrieval.sparse) == (
                "Qwen/Qwen3-Embedding-8B",
                "BAAI/bge-reranker-v2-m3",
                "rank_bm25",
            )
            assert (p.answer.model, p.answer.base_url) == QWEN32 and (p.judge.model, p.judge.base_url) == QWEN32
            assert c.judge == name and c.seed == 0
            if r in ("nanomemory", "mem0", "lazymem"):  # memory built by Qwen3-32B, as in the paper
                assert (p.mpm.model, p.mpm.base_url) == QWEN32
            if r == "lazymem_4b":
                assert (p.mpm.model, p.mpm.base_url) == ("lazymem-4b", "http://127.0.0.1:8000/v1")
            assert p.nanomemory.top_k == 10 and (r != "mem0" or p.mem0.top_k == 50)
            if name == "longmemeval":
                assert (c.split, c.split_seed) == ("test", 42)  # the 100 of the 360/40/100 split
            else:
                assert c.dataset.endswith("locomo10.json#paper") and c.split is None


@pytest.fixture
def offline(monkeypatch):
    """No model client, no socket, no heavy import: any of them fails the dry run."""
    import lazymem.llm as llm
    import lazymem.llm.factory as factory

    def refuse(*a, **k):
        raise AssertionError("the dry run must not create a model client or open a connection")

    monkeypatch.setattr(factory, "make_client", refuse)
    monkeypatch.setattr(llm, "make_client", refuse, raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    before = set(sys.modules)
    yield
    heavy = {"torch", "transformers", "sentence_transformers", "vllm", "FlagEmbedding", "mem0"}
    assert not (set(sys.modules) - before) & heavy


def test_the_locomo_dry_run_lists_every_cell_and_counts_its_calls(offline, shared_data, capsys):
    plan = dry_run(table("locomo"))
    cells = {c["row"]: c for c in plan["cells"]}
    assert list(cells) == ROWS and {c["questions"] for c in cells.values()} == {314}
    assert all(c["calls"]["answer"] == 314 and c["calls"]["judge"] == 314 for c in cells.values())
    assert cells["lazymem"]["calls"]["mpm_max_per_question"] == 50  # n = 50 windows at most (w=2 <= L, s)
    assert 0 < cells["lazymem"]["calls"]["mpm_max"] <= 314 * 50
    assert cells["rag_top20"]["calls"]["mpm"] == 0 and cells["nanomemory"]["calls"]["mpm"] == 314
    assert cells["mem0"]["calls"]["mpm_min"] > 0  # at least one extraction call per add of both conversations
    assert cells["rag_top50"]["calls"]["embed_queries"] == 314
    assert cells["oracle_turn"]["calls"].get("embed_queries") is None
    assert cells["rag_top50"]["calls"]["rerank_pairs_max"] <= 314 * 100
    assert cells["lazymem_4b"]["models"]["mpm"]["endpoint"] == "http://127.0.0.1:8000/v1"
    models = {(m["model"], m["endpoint"]): m for m in plan["models"]}
    assert set(models[QWEN32]["roles"]) == {"answer", "judge", "mpm"}
    assert ("lazymem-4b", "http://127.0.0.1:8000/v1") in models
    assert {"Qwen/Qwen3-Embedding-8B", "BAAI/bge-reranker-v2-m3"} <= {m for m, _ in models}
    assert plan["totals"]["answer"] == 314 * len(ROWS) and plan["api_key_envs"] == ["VLLM_API_KEY"]
    text = dry_run_text(plan)
    for row in ROWS:  # the project's own rows are marked in the plan and its text
        mark = " (ours, not in the paper)" if row in ("extractive", "lazymem_135m") else ""
        assert f"locomo_paper / {row}{mark}: method" in text
        assert cells[row]["not_in_paper"] is bool(mark)
    assert "MPM <= " in text and "upper bound" in text and "Qwen/Qwen3-32B" in text and "lazymem-4b" in text


def test_the_longmemeval_dry_run_needs_no_hub_and_reads_a_local_copy(offline, shared_data):
    plan = dry_run(table("longmemeval"))  # longmemeval_s_cleaned is not on disk: counts unknown, no download
    assert len(plan["cells"]) == len(ROWS) and all(c["questions"] is None for c in plan["cells"])
    assert any("not on disk" in w for w in plan["warnings"]) and plan["totals"]["answer"] is None
    assert "oracle_session" in dry_run_text(plan)
    local = shared_data / "longmemeval" / "s_fragment_3haystacks.json"
    plan = dry_run(table("longmemeval", f"sets.longmemeval_test.dataset={local}", "sets.longmemeval_test.split=null"))
    cells = {c["row"]: c for c in plan["cells"]}
    from lazymem.data import load_dataset

    n = len(load_dataset(str(local)).questions)  # 2: the loader drops one of the 3 third-party records
    assert {c["questions"] for c in cells.values()} == {n} and cells["oracle_session"]["state"] == "new"
    assert cells["lazymem"]["calls"]["embed_documents_max"] > 300  # haystacks of ~400 messages


def test_the_dry_run_names_cells_that_only_leaves_out(offline, shared_data):
    plan = dry_run(table("locomo", "only=[rag_top50]"))
    states = {c["row"]: c["state"] for c in plan["cells"]}
    assert states["rag_top50"] == "new" and states["lazymem"] == "not run (only)"
    assert plan["totals"]["answer"] == 314
    assert {m["model"] for m in plan["models"]} == {
        "Qwen/Qwen3-32B",
        "Qwen/Qwen3-Embedding-8B",
        "BAAI/bge-reranker-v2-m3",
    }  # what the cells that run need


@pytest.mark.parametrize("w,L,s", [(2, 8, 7), (1, 4, 3), (3, 4, 2), (5, 8, 7), (0, 1, 1), (2, 3, 1)])
def test_max_windows_bounds_what_the_windowing_gives(w, L, s):
    rng = random.Random(w * 100 + L * 10 + s)
    cfg = WindowConfig(w=w, L=L, s=s)
    for _ in range(300):
        n_hits, size = rng.randint(1, 12), rng.randint(12, 80)
        hits = rng.sample(range(size), min(n_hits, size))
        assert len(build_windows(size, hits, cfg)) <= max_windows(len(hits), w, L, s)
    spread = [20 + i * (4 * w + 2 + L) for i in range(6)]  # far apart: each hit its own window, the bound is reached
    assert len(build_windows(200, spread, cfg)) == max_windows(6, w, L, s) or 2 * w + 1 > L


@pytest.mark.parametrize("name", ["locomo", "longmemeval"])
def test_the_dry_run_shows_the_judge_settings_the_open_settings_and_the_systems_not_run(name, offline):
    """The judge thinks unless told not to: the dry run prints how every cell asks it (reply cap,
    thinking), the settings the paper leaves open as the project chose them, and the paper's Table 1
    systems this table cannot run with the paper's reported numbers beside them."""
    from lazymem.eval.paper import PROJECT_CHOICES, REPORTED

    plan = dry_run(table(name))
    text = dry_run_text(plan)
    cap = {"locomo": 1024, "longmemeval": 10}[name]
    for c in plan["cells"]:
        js = c["judge_settings"]
        assert js["kind"] == name and js["max_tokens"] == cap
        assert js["chat_template_kwargs"] == {"enable_thinking": False}
    assert f"judge {name}: max_tokens {cap} (official), thinking off (enable_thinking: false)" in text
    assert not [w for w in plan["warnings"] if "thinks with no budget" in w]
    for key in PROJECT_CHOICES:
        assert f"  {key} = " in text
    bench = REPORTED[name]
    for system in ("LightMem", "StructMem", "MemoryBank", "MemSkill", "MemT"):
        line = next(x for x in text.splitlines() if x.startswith(f"  {system}: "))
        lj = bench[system]["lj"] if system in bench else None
        assert (f"LJ {lj:.2f}" in line) if lj is not None else "not reported" in line


def test_a_judge_left_thinking_is_a_dry_run_warning(offline):
    from lazymem.yamlio import read_mapping

    data = read_mapping(CONFIGS["longmemeval"])
    del data["sets"]["longmemeval_test"]["pipeline.judge"]["chat_template_kwargs"]  # as the config was before
    plan = dry_run(build_recipe(EvalTableConfig, data, str(CONFIGS["longmemeval"])))
    assert all(c["judge_settings"]["thinking"].endswith("no budget") for c in plan["cells"])
    assert any("thinks with no budget under max_tokens 10" in w for w in plan["warnings"])


def test_a_set_into_one_row_changes_that_setting_and_keeps_the_rest_of_the_row(offline, shared_data):
    """``--set rows.R.pipeline.a.b=v`` is one more dotted key of row R: the row's other settings (its MPM server,
    its window) stay. A nested ``pipeline`` mapping in the row would replace its whole pipeline section."""
    from lazymem.errors import ConfigError

    def mpm(plan: dict, row: str) -> dict:
        return next(c for c in plan["cells"] if c["row"] == row)["config"]["pipeline"]["mpm"]

    before = mpm(dry_run(table("locomo")), "lazymem")
    after = mpm(dry_run(table("locomo", "rows.lazymem.pipeline.mpm.extra_body.decode=batched")), "lazymem")
    assert after["extra_body"] == {**(before["extra_body"] or {}), "decode": "batched"}
    assert {k: v for k, v in after.items() if k != "extra_body"} == {
        k: v for k, v in before.items() if k != "extra_body"
    }
    with pytest.raises(ConfigError, match="no row 'lazymem_9b'.*oracle_turn"):
        table("locomo", "rows.lazymem_9b.pipeline.mpm.model=x")
