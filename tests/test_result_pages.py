"""Result pages: ``lazymem eval-table --page`` writes a table's page (title, description, config, table,
command, each cell's commit and date) from the finished cells and runs nothing; the committed pages are
what their configs write now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from fakerun import PIPELINE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.eval.table import EvalTableConfig, run_eval_table
from lazymem.llm import FakeBackend

REPO = Path(__file__).resolve().parents[1]
COMMITTED = ["main_table_locomo", "paper_shape_locomo", "longmemeval_s_real", "ablation_radius_locomo", "lazymem135m"]


def _table(tmp_path: Path, **extra) -> EvalTableConfig:
    base = tmp_path / "base.yaml"
    dataset = "synthetic:messages=60,seed=1,histories=1,questions=6"
    base.write_text(
        yaml.safe_dump({"dataset": dataset, "limit": 2, "judge": "none", "count_tokens": False, "pipeline": PIPELINE})
    )
    rows = {"rag": {"pipeline.method": "rag"}, "rag2": {"pipeline.method": "rag", "pipeline.retrieval.n": 2}}
    return EvalTableConfig(base=str(base), sets={"syn": {}}, rows=rows, output_dir=str(tmp_path / "t"), **extra)


def test_the_page_is_written_from_finished_cells_and_runs_nothing(tmp_path):
    calls = []

    def clients(set_name, row):
        calls.append(row)
        return {"answer": FakeBackend(lambda p, s: "an answer")}

    cfg = _table(tmp_path, title="A small table", description="Two RAG rows.\n  Read the tokens.")
    run_eval_table(cfg, progress=False, clients_for=clients, command=["lazymem", "eval-table", "--config", "t.yaml"])
    assert sorted(calls) == ["rag", "rag2"]
    records = {p: p.read_bytes() for p in (tmp_path / "t").rglob("records.jsonl")}
    calls.clear()

    changed = EvalTableConfig(
        **{**cfg.__dict__, "rows": {**cfg.rows, "rag2": {"pipeline.method": "rag", "pipeline.retrieval.n": 3}}}
    )
    table = run_eval_table(changed, progress=False, clients_for=clients, page_only=True, config_path="configs/t.yaml")
    assert calls == []  # nothing ran, not even the stale cell
    assert {p: p.read_bytes() for p in (tmp_path / "t").rglob("records.jsonl")} == records
    assert table["syn"]["rag"]["questions"] == 2 and "stale" not in table["syn"]["rag"]
    assert table["syn"]["rag2"]["questions"] is None and "config_sha256" in table["syn"]["rag2"]["stale"]
    page = (tmp_path / "t" / "table.md").read_text()
    assert page.startswith("# A small table\n\nTwo RAG rows. Read the tokens.\n\nConfig: `configs/t.yaml`")
    assert "- rag2 stale, not shown" in page
    assert "Remade by `lazymem eval-table --config t.yaml`" not in page  # page_only was given no command
    commit_lines = [line for line in page.splitlines() if line.startswith("- commit ")]
    assert len(commit_lines) == 1 and commit_lines[0].endswith("syn/rag")  # the stale cell is not listed


@pytest.mark.parametrize("name", COMMITTED)
def test_each_committed_page_is_what_its_config_writes_now(tmp_path, name):
    """Every cell a committed page shows is fresh (config, dataset and prompts match) and the page is
    ``lazymem eval-table --config configs/tables/<name>.yaml --page``'s output, byte for byte."""
    from lazymem.train.recipe import load_recipe

    config_path = f"configs/tables/{name}.yaml"
    cfg = load_recipe(EvalTableConfig, REPO / config_path)
    committed = REPO / cfg.output_dir
    if "../shared/data" in (REPO / config_path).read_text() + (REPO / cfg.base).read_text():
        if not (REPO / "../shared/data").is_dir():
            pytest.skip("the table reads ../shared/data, which is not beside this checkout")
    copy = tmp_path / "out"
    for f in committed.rglob("*"):  # the cells' manifests and summaries (records are not needed)
        if f.is_file() and f.name in ("summary.json", "manifest.json", "records.jsonl", "errors.jsonl"):
            (copy / f.relative_to(committed)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, copy / f.relative_to(committed))
    page_cfg = EvalTableConfig(**{**cfg.__dict__, "output_dir": str(copy)})
    import os

    cwd = os.getcwd()
    os.chdir(REPO)  # the configs name paths relative to the project root
    try:
        table = run_eval_table(
            page_cfg,
            progress=False,
            page_only=True,
            config_path=config_path,
            command=["lazymem", "eval-table", "--config", config_path],
        )
    finally:
        os.chdir(cwd)
    assert not [(s, r) for s, rows in table.items() for r, v in rows.items() if v.get("stale")], "stale cells"
    assert (copy / "table.md").read_text() == (committed / "table.md").read_text()
