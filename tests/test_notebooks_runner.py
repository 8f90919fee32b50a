"""lazymem.notebooks: grid expansion, run ids, the papermill batch runner, explorer data, the notebooks."""

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lazymem import notebooks as nb
from lazymem.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-0123456789abcdef"


def write_notebook(path: Path) -> Path:
    """A throwaway notebook: parameters, an optional failure, a secret echoed, metrics written."""
    cells = [
        new_markdown_cell("# tiny"),
        new_code_cell(
            'w = 0  # radius\nfail = False  # raise in the next cell\napi_key = ""  # a secret\n'
            'metrics_path = ""  # where metrics go'
        ),
        new_code_cell("if fail:\n    raise ValueError('boom')\nprint('key is', api_key)"),
        new_code_cell(
            "import json, pathlib\nif metrics_path:\n"
            "    pathlib.Path(metrics_path).write_text(json.dumps({'w': w, 'sq': w * w}))"
        ),
    ]
    cells[1].metadata["tags"] = ["parameters"]
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def tiny(tmp_path):
    return write_notebook(tmp_path / "tiny.ipynb")


# --- pure parts -----------------------------------------------------------------------------------


def test_expand_grid_cartesian_in_key_order_with_overrides():
    spec = {"base": {"n": 50, "w": 9}, "grid": {"w": [0, 1], "sparse": ["bm25s", "rank_bm25"]}}
    points = nb.expand_grid(spec, {"n": 10})
    assert points == [
        {"n": 10, "w": 0, "sparse": "bm25s"},
        {"n": 10, "w": 0, "sparse": "rank_bm25"},
        {"n": 10, "w": 1, "sparse": "bm25s"},
        {"n": 10, "w": 1, "sparse": "rank_bm25"},
    ]
    assert nb.expand_grid(None) == [{}]
    assert nb.expand_grid({"grid": {"w": 3}}) == [{"w": 3}]  # a scalar is a one-value list
    with pytest.raises(ConfigError, match="no values"):
        nb.expand_grid({"grid": {"w": []}})


def test_load_grid_checks_format(tmp_path):
    good = tmp_path / "g.yaml"
    good.write_text("base: {n: 50}\ngrid:\n  w: [0, 1]\n")
    assert nb.load_grid(good) == {"base": {"n": 50}, "grid": {"w": [0, 1]}}
    bad = tmp_path / "b.yaml"
    bad.write_text("grids: {w: [0]}\n")
    with pytest.raises(ConfigError, match="unknown top-level key"):
        nb.load_grid(bad)
    bad.write_text("grid: [1, 2]\n")
    with pytest.raises(ConfigError, match="'grid' must be a mapping"):
        nb.load_grid(bad)


def test_repo_grid_file_is_valid():
    spec = nb.load_grid(ROOT / "configs" / "grids" / "02_radii.yaml")
    points = nb.expand_grid(spec)
    assert [p["w"] for p in points] == [0, 1, 2, 3]
    declared = nb.notebook_parameters(nb.resolve_notebook(spec["notebook"]))
    assert set(points[0]) <= set(declared)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "configs" / "grids").glob("*.yaml")))
def test_every_repo_grid_names_real_parameters_and_recipes(name):
    from lazymem.notebooks.ablations import ablation_config

    spec = nb.load_grid(ROOT / "configs" / "grids" / name)
    points = nb.expand_grid(spec)
    declared = nb.notebook_parameters(nb.resolve_notebook(spec["notebook"]))
    assert len(points) >= 2 and all(set(p) <= set(declared) for p in points)
    for p in points:
        if p.get("config"):  # a recipe notebook 09's points start from: it parses, with the notebook's overrides
            recipe = str(ROOT / p["config"])
            for w in p.get("radii") or []:
                c = ablation_config(p["dataset"], p.get("method", "extractive"), w, limit=p["limit"], recipe=recipe)
                assert c.limit == p["limit"] and c.pipeline.window.w == w
            for adapter in (p.get("stages") or {}).values():
                c = ablation_config(p["dataset"], "lazymem", 2, limit=p["limit"], recipe=recipe, adapter=adapter)
                assert c.pipeline.mpm.adapter == adapter and c.pipeline.lazymem.structured is (adapter is None)


def test_run_id_readable_stable_and_distinct():
    a = nb.run_id({"n": 50, "w": 2}, ["w"])
    assert a.startswith("w=2-") and len(a.split("-")[-1]) == 8
    assert a == nb.run_id({"w": 2, "n": 50}, ["w"])  # key order does not matter
    assert a != nb.run_id({"n": 10, "w": 2}, ["w"])  # the hash covers fixed parameters too
    assert nb.run_id({"api_key": "x"}, ["api_key"]) == nb.run_id({"api_key": "y"}, ["api_key"])  # never shown
    assert nb.run_id({"api_key": "x"}, ["api_key"]).startswith("default-")
    assert "/" not in nb.run_id({"dataset": "../shared/data/x.json#paper"}, ["dataset"])


def test_parse_param_and_redact():
    assert nb.parse_param("w=2") == ("w", 2)
    assert nb.parse_param("png=false") == ("png", False)
    assert nb.parse_param("dense_model=null") == ("dense_model", None)
    assert nb.parse_param("dataset=../x.json#paper") == ("dataset", "../x.json#paper")
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        nb.parse_param("w")
    assert nb.redact({"OPENAI_API_KEY": "sk", "hf_token": "t", "db_password": "p", "client_secret": "s", "w": 1}) == {
        "OPENAI_API_KEY": "<redacted>",
        "hf_token": "<redacted>",
        "db_password": "<redacted>",
        "client_secret": "<redacted>",
        "w": 1,
    }


def test_resolve_notebook_names_prefixes_and_errors(tiny):
    assert nb.resolve_notebook("02_retrieval_windows") == ROOT / "notebooks" / "02_retrieval_windows.ipynb"
    assert nb.resolve_notebook("03").name == "03_window_explorer.ipynb"
    assert nb.resolve_notebook("notebooks/01_data.ipynb").name == "01_data.ipynb"
    assert nb.resolve_notebook(tiny) == tiny.resolve()
    with pytest.raises(FileNotFoundError, match="matches no notebook.*known: .*01_data"):
        nb.resolve_notebook("99_nothing")
    with pytest.raises(FileNotFoundError, match="ambiguous"):
        nb.resolve_notebook("0")


def test_notebook_parameters_reads_values_with_equals_signs(tiny):
    assert nb.notebook_parameters(tiny) == {"w": 0, "fail": False, "api_key": "", "metrics_path": ""}
    params = nb.notebook_parameters(ROOT / "notebooks" / "02_retrieval_windows.ipynb")
    assert params["dataset"].startswith("synthetic:messages=")  # papermill's inspector misses this one


def test_unknown_parameter_fails_before_running(tiny, tmp_path):
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['radius'\]"):
        nb.run_grid(str(tiny), params={"radius": 2}, out_root=tmp_path / "runs", progress=False)
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ConfigError, match="grid is for notebook"):
        nb.run_grid(str(tiny), grid={"notebook": "01_data"}, out_root=tmp_path / "runs", progress=False)


def test_metrics_table_and_record_metrics(tmp_path):
    table = nb.metrics_table({"a": {"x": 1 / 3, "y": None}, "name": "d"})
    assert table.splitlines() == ["a.x   0.333", "a.y   -", "name  d"]
    assert nb.record_metrics({"a": 1}, "") is None
    path = nb.record_metrics({"a": 1}, tmp_path / "sub" / "m.json")
    assert json.loads(Path(path).read_text()) == {"a": 1}


# --- the runner (executes notebooks) --------------------------------------------------------------


@pytest.mark.notebooks
@pytest.mark.slow
def test_run_grid_two_points_skip_and_force(tiny, tmp_path):
    out = tmp_path / "runs"
    grid = {"grid": {"w": [1, 2]}}
    first = nb.run_grid(str(tiny), grid, out_root=out, progress=False)
    assert [r.status for r in first] == ["ok", "ok"]
    assert [r.metrics for r in first] == [{"w": 1, "sq": 1}, {"w": 2, "sq": 4}]
    dirs = sorted(p.name for p in (out / "tiny").iterdir())
    assert dirs == sorted(r.run_id for r in first) and dirs[0].startswith("w=1-")
    for r in first:
        run = Path(r.run_dir)
        assert {p.name for p in run.iterdir()} == {"tiny.ipynb", "metrics.json", "manifest.json"}
        m = json.loads((run / "manifest.json").read_text())
        assert m["status"] == "ok" and m["error"] is None and m["params"] == r.params
        assert m["notebook_sha256"] == nb.sha256_file(tiny) and m["packages"]["papermill"]
        assert set(m["git"]) == {"commit", "dirty"} and m["start"] <= m["end"] and m["duration_s"] > 0
    again = nb.run_grid(str(tiny), grid, out_root=out, progress=False)
    assert [r.status for r in again] == ["skipped", "skipped"] and again[1].metrics == {"w": 2, "sq": 4}
    forced = nb.run_grid(str(tiny), grid, out_root=out, force=True, progress=False)
    assert [r.status for r in forced] == ["ok", "ok"]


@pytest.mark.notebooks
@pytest.mark.slow
def test_failing_point_is_recorded_and_others_still_run(tiny, tmp_path):
    results = nb.run_grid(str(tiny), {"grid": {"fail": [True, False]}}, out_root=tmp_path, progress=False)
    failed, ok = results
    assert failed.status == "failed" and not failed.ok and "ValueError: boom" in failed.error
    assert failed.metrics is None
    manifest = json.loads((Path(failed.run_dir) / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "boom" in manifest["error"]
    assert (Path(failed.run_dir) / "tiny.ipynb").exists()  # the executed notebook shows where it broke
    assert ok.status == "ok" and ok.metrics == {"w": 0, "sq": 0}
    rerun = nb.run_grid(str(tiny), {"grid": {"fail": [True, False]}}, out_root=tmp_path, progress=False)
    assert [r.status for r in rerun] == ["failed", "skipped"]  # failures are retried, successes reused


@pytest.mark.notebooks
@pytest.mark.slow
def test_secrets_never_reach_the_run_folder(tiny, tmp_path):
    (r,) = nb.run_grid(str(tiny), params={"api_key": SECRET, "w": 3}, out_root=tmp_path, progress=False)
    assert r.status == "ok" and r.params == {"api_key": "<redacted>", "w": 3}
    assert SECRET not in r.run_id
    run = Path(r.run_dir)
    for f in run.iterdir():
        assert SECRET not in f.read_text(), f.name
    executed = (run / "tiny.ipynb").read_text()
    assert "key is <redacted>" in executed  # the secret was used (echoed), then scrubbed
    assert json.loads((run / "manifest.json").read_text())["params"]["api_key"] == "<redacted>"


@pytest.mark.notebooks
@pytest.mark.slow
def test_changed_notebook_is_rerun(tiny, tmp_path):
    (first,) = nb.run_grid(str(tiny), out_root=tmp_path, progress=False)
    notebook = nbformat.read(tiny, as_version=4)
    notebook.cells.append(new_markdown_cell("edited"))
    nbformat.write(notebook, tiny)
    (second,) = nb.run_grid(str(tiny), out_root=tmp_path, progress=False)
    assert first.status == second.status == "ok" and "notebook changed" in second.notes[0]


def test_results_table():
    rows = [
        nb.RunResult("w=0-ab", {}, "ok", "d", duration_s=1.25),
        nb.RunResult("w=1-cd", {}, "failed", "d", error="ValueError: boom", duration_s=0.5),
    ]
    assert nb.results_table(rows).splitlines() == ["ok       w=0-ab  1.2 s", "failed   w=1-cd  0.5 s  ValueError: boom"]


# --- the explorer's data ----------------------------------------------------------------------------


def test_explore_question_extractive_and_run_records(tmp_path):
    from lazymem.data import load_dataset
    from lazymem.retrieve import RetrievalConfig, Retriever, WindowConfig
    from lazymem.viz import explorer_view

    ds = load_dataset("synthetic:messages=60,seed=1,histories=1,questions=6")
    retriever = Retriever(RetrievalConfig(n=5, dense_model=None))
    view = nb.explore_question(ds, "", "extractive", retriever, WindowConfig(w=1))
    q = view["question"]
    assert q.evidence and view["history"] is ds.history(q)
    assert all(r["verdict"]["ok"] for r in view["records"])  # the extractive output always passes the gate
    m = nb.explorer_metrics(view)
    assert m["question"] == q.id and m["windows"] == len(view["records"]) == m["gate_ok"]
    fig, page = explorer_view(view)
    assert q.text.split()[0] in page and fig.data[0].type == "heatmap"
    # the same view from a run folder's windows.jsonl
    run = tmp_path / "runs" / "eval1"
    run.mkdir(parents=True)
    lines = [json.dumps({"question_id": q.id, **r}) for r in view["records"]]
    lines.append(json.dumps({"question_id": "other", "positions": [0]}))
    lines[0] = json.dumps({**json.loads(lines[0]), "memory": "MEM", "answer": "ANS", "judge": "yes"})
    (run / "windows.jsonl").write_text("\n".join(lines) + "\n")
    methods = nb.explorer_methods(tmp_path / "runs")
    assert methods == ["extractive", "extractive-key-span", f"run:{run}"]
    from_run = nb.explore_question(ds, q.id, methods[-1])
    assert from_run["records"] == view["records"] and (from_run["memory"], from_run["judge"]) == ("MEM", "yes")
    absent = nb.explore_question(ds, ds.questions[-1].id, methods[-1])  # a question the run did not record
    assert absent["records"] == [] and explorer_view(absent)[0].data[0].type == "heatmap"
    with pytest.raises(ConfigError, match="explorer method"):
        nb.explore_question(ds, q.id, "magic", retriever)
    assert nb.question_options(ds)[0][1] == ds.questions[0].id


# --- the builder (notebooks/src/*.py -> notebooks/*.ipynb) and notebook 09's sweep points ----------

BUILD_SOURCE = """# %% [markdown]
# # 01 · Built

# %% tags=["parameters"]
w = 3  # radius

# %%
import sys

print("not stored")

# %%
# NBVAL_CHECK_OUTPUT
print("w", end="")
sys.stdout.flush()
print(" =", w)
"""


def test_build_executes_from_notebooks_and_keeps_only_checked_outputs(tmp_path):
    from lazymem.notebooks.build import build

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "lazymem"\n')
    (tmp_path / "notebooks" / "src").mkdir(parents=True)
    (tmp_path / "notebooks" / "src" / "01_built.py").write_text(BUILD_SOURCE)
    (path,) = build(["01"], root=tmp_path, log=None)
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.outputs for c in code[:2]] == [[], []] and [c.execution_count for c in code[:2]] == [None, None]
    assert code[2].execution_count == 3  # the kernel's count, as nbval needs it
    assert [(o.output_type, o.name, o.text) for o in code[2].outputs] == [("stream", "stdout", "w = 3\n")]  # one
    assert [c["id"] for c in notebook.cells] == ["01-00", "01-01", "01-02", "01-03"]


def fake_recipe(tmp_path) -> str:
    from fakerun import PIPELINE, SYNTH

    path = tmp_path / "recipe.yaml"
    path.write_text(json.dumps({"dataset": SYNTH, "pipeline": PIPELINE}))  # JSON is YAML
    return str(path)


def test_ablation_config_from_a_recipe_or_quick_config(tmp_path):
    from lazymem.notebooks.ablations import ablation_config

    recipe = fake_recipe(tmp_path)
    cfg = ablation_config("synthetic:messages=50,seed=2", "oracle_turn", 3, limit=4, recipe=recipe)
    assert (cfg.dataset, cfg.limit, cfg.pipeline.method) == ("synthetic:messages=50,seed=2", 4, "oracle_turn")
    assert (cfg.pipeline.window.w, cfg.pipeline.window.L, cfg.pipeline.window.s) == (3, 8, 7)
    assert cfg.pipeline.retrieval.n == 3 and cfg.pipeline.answer.backend == "fake"  # the recipe's pool and models
    base = ablation_config("synthetic:messages=50,seed=2", "lazymem", 2, recipe=recipe, adapter=None)
    assert base.pipeline.mpm.adapter is None and base.pipeline.lazymem.structured is True
    assert base.pipeline.mpm_sampling.logit_bias is None
    tuned = ablation_config("synthetic:messages=50,seed=2", "lazymem", 2, n=7, adapter="some/adapter")
    assert tuned.pipeline.mpm.adapter == "some/adapter" and tuned.pipeline.lazymem.structured is False
    assert tuned.pipeline.retrieval.n == 7 and tuned.pipeline.mpm.model == "smollm2-offline"


def test_ablation_point_runs_the_eval_and_counts_all_at_k_from_its_records(tmp_path, monkeypatch):
    from lazymem.eval.runfiles import read_records
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir
    from lazymem.notebooks.ablations import ablation_config, ablation_point

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "cache"))
    from fakerun import SYNTH

    cfg = ablation_config(SYNTH, "rag", 0, limit=0, recipe=fake_recipe(tmp_path))
    row = ablation_point(tmp_path / "w=0", cfg)
    records = read_records(tmp_path / "w=0" / "records.jsonl")[0]
    with_gold = [r for r in records if r["question"]["evidence"]]
    expected = sum(set(r["question"]["evidence"]) <= set(r["pool"]["positions"]) for r in with_gold) / len(with_gold)
    assert row["All@k"] == expected and 0 < expected < 1  # RAG has no windows: its pool is what it saw
    assert (row["questions"], row["errors"]) == (len(records), 0) and row["gate_fmt"] is None
    assert set(row) == {
        "score",
        "metric",
        "All@k",
        "gate_fmt",
        "strict_gate",
        "gold_keep_recall",
        "memory_tokens",
        "questions",
        "errors",
    }
    assert ablation_point(tmp_path / "w=0", cfg) == row  # resumed: nothing recomputed, the same row


# --- the committed notebooks ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["01_data", "02_retrieval_windows", "03_window_explorer"])
def test_committed_notebooks_follow_the_template(name):
    path = ROOT / "notebooks" / f"{name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert notebook.metadata.kernelspec.name == "python3"
    assert notebook.cells[0].cell_type == "markdown" and notebook.cells[0].source.startswith(f"# {name[:2]}")
    params_cells = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", ())]
    assert len(params_cells) == 1
    for line in params_cells[0].source.splitlines():
        assert " = " in line and "  # " in line, f"parameter without a comment: {line!r}"
    params = nb.notebook_parameters(path)
    assert params["metrics_path"] == "" and params["png"] is True and params["figures_dir"] == "figures"
    for cell in notebook.cells:
        if cell.cell_type == "code" and "# NBVAL_CHECK_OUTPUT" not in cell.source:
            assert not cell.outputs, "only the checked cells keep outputs in the committed notebook"
    last = [c for c in notebook.cells if c.cell_type == "code"][-1]
    assert last.source.startswith("# NBVAL_CHECK_OUTPUT") and "record_metrics(metrics, metrics_path)" in last.source
    assert last.outputs and last.execution_count, "run `lazymem notebooks build` to store the checked outputs"


@pytest.mark.notebooks
@pytest.mark.slow
def test_notebook_04_limit_0_runs_every_question_through_papermill(tmp_path):
    spec = "synthetic:messages=60,seed=1,histories=1,questions=7"
    from lazymem.data import load_dataset

    n_questions = len(load_dataset(spec).questions)
    (r,) = nb.run_grid(
        "04_evaluate",
        params={
            "dataset": spec,
            "limit": 0,
            "methods": ["rag", "oracle_turn"],
            "backend": "fake",
            "n": 10,
            "out_root": str(tmp_path / "eval"),
            "figures_dir": str(tmp_path / "fig"),
            "png": False,
        },
        out_root=tmp_path / "runs",
        progress=False,
    )
    assert r.status == "ok", r.error
    assert r.metrics == {
        m: {"questions_ok": n_questions, "errors": 0, "gate_fmt": None} for m in ("rag", "oracle_turn")
    }
    for m in ("rag", "oracle_turn"):
        summary = json.loads((tmp_path / "eval" / m / "summary.json").read_text())
        assert summary["counts"]["selected"] == n_questions > 2  # 0 = all, not the default 2


@pytest.mark.notebooks
@pytest.mark.slow
def test_a_secret_parameter_stays_out_of_local_jobs_and_the_run_folder(tiny, tmp_path, capsys):
    """`lazymem notebooks run NB -p api_key=... --executor local`: the key reaches the notebook (it echoes
    it, then the executed copy is scrubbed) but no file under the output root (job index, pickled tasks,
    job logs, run folders) and no captured output."""
    from lazymem.cli import main

    out = tmp_path / "runs"
    argv = ["notebooks", "run", str(tiny), "-p", f"api_key={SECRET}", "-p", "w=2", "--out-root", str(out)]
    assert main([*argv, "--executor", "local", "--max-parallel", "1", "--no-progress"]) == 0
    captured = capsys.readouterr()
    executed = list(out.rglob("tiny.ipynb"))
    assert executed and "key is <redacted>" in executed[0].read_text()
    assert list(out.rglob("jobs.json")) and list(out.rglob("*_submitted.pkl"))  # it ran as a local job
    leaks = [str(p) for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == [] and SECRET not in captured.out + captured.err
