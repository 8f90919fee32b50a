"""A property test over the CLI: random mutations of valid recipes, datasets, run records, manifests and
eval-table recipes fed to `eval`, `eval-table`, `report`, `perturb`, `coverage` and `train sft-data`.

Every run exits 0 or 2 (never 1: that is a bug's traceback), an exit-2 message is one line that
names a file or a field, and no run folder is left holding records of two inputs: every record's
run belongs to a run whose dataset and config are the manifest's own."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bad_input import _mutate, _write

from lazymem.data.synthetic import generate_records

FAKE = {"backend": "fake", "model": "fake"}
DATASET = generate_records(60, seed=3, n_histories=1, questions_per_history=4)
EXAMPLES = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _no_model_loads(recipe):
    """A mutated recipe with its models put back to the scripted fake: a mutation that falls back to
    the default models would load SmolLM2 and MiniLM (minutes on 2 cores); model settings are
    mutated by tests/test_bad_input.py's recipe test, which builds the config only."""
    if isinstance(recipe, dict) and recipe.get("pipeline") is None:
        recipe["pipeline"] = {}  # `pipeline:` means the defaults: SmolLM2 and MiniLM, so fake them as well
    pipeline = recipe.get("pipeline") if isinstance(recipe, dict) else None
    if isinstance(pipeline, dict):
        pipeline["mpm"], pipeline["answer"], pipeline["judge"] = dict(FAKE), dict(FAKE), None
        if not isinstance(pipeline.get("retrieval"), dict):
            pipeline["retrieval"] = {}
        pipeline["retrieval"]["dense_model"] = None
        pipeline["retrieval"].pop("reranker", None)
    return recipe


def _recipe(dataset: Path) -> dict:
    return {
        "dataset": str(dataset),
        "limit": 2,
        "judge": "none",
        "seed": 0,
        "pipeline": {
            "method": "lazymem",
            "retrieval": {"dense_model": None, "n": 3},
            "window": {"w": 1},
            "mpm": dict(FAKE),
            "answer": dict(FAKE),
        },
    }


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path_factory.getbasetemp() / "lazymem_cache"))


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """A valid dataset file, recipe and finished run folder (built once, copied per example)."""
    from lazymem.cli import main

    root = tmp_path_factory.mktemp("valid")
    data = root / "data.json"
    data.write_text(json.dumps(DATASET))
    recipe = root / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(_recipe(data)))
    run = root / "run"
    assert main(["eval", str(recipe), "--out", str(run)]) == 0
    return {"data": data, "recipe": recipe, "run": run}


def _fresh(tmp_path: Path) -> Path:
    """A new folder per example (hypothesis runs every example in the same tmp_path)."""
    import tempfile

    return Path(tempfile.mkdtemp(dir=tmp_path))


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    """Run the CLI in-process; a raised exception or exit 1 is a failure of the property."""
    from lazymem.cli import main

    try:
        rc = main(argv)
    except SystemExit as e:  # argparse: exit 2 for a bad flag
        rc = e.code
    err = capsys.readouterr().err
    assert rc in (0, 2), (argv, rc, err[-1500:])
    assert "Traceback" not in err, (argv, err[-1500:])
    if rc == 2:
        line = [x for x in err.splitlines() if x.startswith("lazymem: error:") or x.startswith("usage:")]
        assert line, err[-800:]
    return rc, err


def _one_input_per_folder(folder: Path) -> None:
    """Every record was written by a run whose dataset and config are the manifest's."""
    records, manifest = folder / "records.jsonl", folder / "manifest.json"
    if not records.exists() or not manifest.exists():
        return
    m = json.loads(manifest.read_text())
    runs = {r.get("run_id"): r for r in m.get("runs", []) if isinstance(r, dict)}
    sha, config = (m.get("dataset") or {}).get("sha256"), m.get("config_sha256")
    for line in records.read_text().split("\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line: the next resume drops it
        run = runs.get(rec.get("run_id"))
        assert run is not None, f"record of unknown run {rec.get('run_id')} in {folder}"
        assert run.get("dataset_sha256") == sha and run.get("config_sha256") == config, (run, sha, config)


@EXAMPLES
@given(data=st.data())
def test_eval_on_mutated_recipes(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    path = tmp_path / "r.yaml"
    path.write_text(
        yaml.safe_dump(_no_model_loads(_mutate(_recipe(valid["data"]), data)), allow_unicode=True),
        encoding="utf-8",
        errors="surrogatepass",
    )
    out = tmp_path / "out"
    _cli(["eval", str(path), "--out", str(out)], capsys)
    _one_input_per_folder(out)


@EXAMPLES
@given(data=st.data())
def test_eval_resumed_on_a_mutated_dataset_never_mixes_inputs(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    run = tmp_path / "run"
    shutil.copytree(valid["run"], run)
    mutated = _write(tmp_path, _mutate(DATASET, data), data)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump(_recipe(mutated)))
    _cli(["eval", str(recipe), "--out", str(run)], capsys)
    _one_input_per_folder(run)


@EXAMPLES
@given(data=st.data())
def test_coverage_on_mutated_datasets(tmp_path, capsys, data):
    tmp_path = _fresh(tmp_path)
    path = _write(tmp_path, _mutate(DATASET, data), data)
    _cli(["coverage", str(path), "--dense-model", "none", "--n", "5", "--k", "5", "--w", "0,1", "--json"], capsys)


def _mutated_run(tmp_path, valid, data) -> Path:
    """The finished run with its records, manifest or summary mutated (or a record line cut)."""
    run = tmp_path / "run"
    shutil.copytree(valid["run"], run)
    target = data.draw(st.sampled_from(["records", "manifest", "summary", "cut"]))
    if target == "records":
        lines = [json.loads(x) for x in (run / "records.jsonl").read_text().split("\n") if x.strip()]
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = _mutate(lines[i], data)
        (run / "records.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    elif target == "cut":
        text = (run / "records.jsonl").read_text()
        (run / "records.jsonl").write_text(text[: data.draw(st.integers(0, len(text)))])
    else:
        f = run / f"{target}.json"
        doc = _mutate(json.loads(f.read_text()), data)
        if target == "manifest" and isinstance(doc, dict) and isinstance(doc.get("config"), dict):
            _no_model_loads(doc["config"])  # perturb answers with the manifest's answer model
        f.write_text(json.dumps(doc))
    return run


@EXAMPLES
@given(data=st.data())
def test_report_on_mutated_runs(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    run = _mutated_run(tmp_path, valid, data)
    _cli(["report", str(run), str(valid["run"]), "--names", "a,b", "--out", str(tmp_path / "rep")], capsys)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_perturb_on_mutated_runs(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    run = _mutated_run(tmp_path, valid, data)
    _cli(["perturb", str(run), "--out", str(tmp_path / "p"), "--draws", "1"], capsys)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_eval_table_on_mutated_recipes(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    table = {
        "base": str(valid["recipe"]),
        "sets": {"s": {"limit": 1}},
        "rows": {"rag": {"pipeline.method": "rag"}, "ext": {"pipeline.method": "extractive"}},
        "reference": "rag",
        "output_dir": str(tmp_path / "table"),
    }
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(_mutate(table, data), allow_unicode=True), encoding="utf-8", errors="surrogatepass")
    _cli(["eval-table", "--config", str(path), "--no-progress"], capsys)
    for folder in tmp_path.rglob("manifest.json"):
        _one_input_per_folder(folder.parent)
    outside = [p for p in tmp_path.parent.glob("*") if p.name.startswith("..")]
    assert not outside


SFT_DATA = {
    "datasets": None,
    "split": "train",
    "questions": 4,
    "seed": 0,
    "retrieval": {"n": 5, "sparse": "rank_bm25", "dense_model": None, "reranker": None},
    "window": {"w": 1, "L": 4, "s": 3},
    "bridges": "none",
    "teacher": "gold",
    "balance": True,
}


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_train_sft_data_on_mutated_recipes(tmp_path, capsys, valid, data):
    tmp_path = _fresh(tmp_path)
    recipe = copy.deepcopy(SFT_DATA)
    recipe["datasets"] = [str(valid["data"])]
    recipe["output_dir"] = str(tmp_path / "sft")
    path = tmp_path / "sft.yaml"
    recipe = _mutate(recipe, data)
    if isinstance(recipe, dict):  # no model loads (the gold teacher, no dense encoder), as above
        recipe["teacher"] = "gold"
        if not isinstance(recipe.get("retrieval"), dict):
            recipe["retrieval"] = {}
        recipe["retrieval"].update(dense_model=None, reranker=None)
    path.write_text(yaml.safe_dump(recipe, allow_unicode=True), encoding="utf-8", errors="surrogatepass")
    _cli(["train", "sft-data", "--config", str(path)], capsys)
