"""Secrets out of everything the project writes or prints: run folders, caches, job indexes, the executor's
pickled tasks, logs, stdout; and a secret changes no identity, so shards with a URL password still merge.

Keys are given as a ``--set`` field, a config field, ``extra_body`` and a base_url's userinfo; afterwards every
file under the output and cache folders (pickles as bytes) and the captured stdout / stderr are searched.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from fakerun import PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.cli import main as cli_main

PASSWORD = "pw7Secret9Word"  # a base_url's password
KEY = "key4Hidden8Value"  # an extra_body api key
SET_KEY = "set5Given2Token"  # a key given with --set
ENV_KEY = "env3Held6Secret"  # a key in the environment variable a config names
SECRETS = (PASSWORD, KEY, SET_KEY, ENV_KEY)
TESTS = Path(__file__).resolve().parent


def _leaks(*roots: Path, text: str = "") -> list[str]:
    """The files under `roots` (and the captured text) that hold one of SECRETS, as 'path: secret'."""
    out = [f"captured output: {s}" for s in SECRETS if s in text]
    for root in roots:
        for p in Path(root).rglob("*"):
            if p.is_file():
                data = p.read_bytes()
                out += [f"{p}: {s}" for s in SECRETS if s.encode() in data]
    return out


def _recipe(tmp_path: Path) -> Path:
    answer = {**PIPELINE["answer"], "base_url": f"http://me:{PASSWORD}@127.0.0.1:9/v1", "extra_body": {"api_key": KEY}}
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        yaml.safe_dump({"dataset": SYNTH, "limit": 4, "judge": "none", "pipeline": {**PIPELINE, "answer": answer}})
    )
    return recipe


def test_eval_and_merge_keep_every_secret_out_and_shards_with_a_url_password_merge(tmp_path, capsys):
    recipe = _recipe(tmp_path)
    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, d in enumerate(shards):
        argv = ["eval", str(recipe), "--out", str(d), "--no-progress", "--shard", f"{i}/2"]
        assert cli_main([*argv, "--set", f"pipeline.mpm.extra_body.api_key={SET_KEY}"]) == 0
    assert cli_main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    captured = capsys.readouterr()
    assert (tmp_path / "merged" / "records.jsonl").read_text().count("\n") == 4
    written = [*shards, tmp_path / "merged", Path(os.environ["LAZYMEM_CACHE"])]  # the recipe itself aside
    assert _leaks(*written, text=captured.out + captured.err) == []


def test_the_fingerprint_is_of_the_redacted_config():
    from lazymem.eval.config import EvalConfig, config_fingerprint

    def fp(url: str) -> str:
        return config_fingerprint(EvalConfig.from_dict({"pipeline": {"answer": {"base_url": url}}}))

    assert fp(f"http://me:{PASSWORD}@h/v1") == fp("http://me:<redacted>@h/v1") != fp("http://me:x@other/v1")


@pytest.fixture
def _importable_tests(monkeypatch):
    """Job processes unpickle this module's functions: they import from tests/ as pytest does."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))


def secret_cell(cell, changes) -> str:
    """A cell's run that holds a secret in its spec (as a cell's config does) and writes only a mark."""
    cell.folder.mkdir(parents=True, exist_ok=True)
    (cell.folder / "out.txt").write_text("ran" if KEY in cell.spec else "no key")
    return "ok"


def test_local_jobs_keep_the_secret_out_of_the_index_and_the_pickles(tmp_path, capsys, _importable_tests):
    from lazymem.jobs import JobsConfig, read_index
    from lazymem.sweep import Cell, Jobs, run_cells

    command = ("lazymem", "eval-table", "--set", f"pipeline.mpm.extra_body.api_key={SET_KEY}")
    jobs = Jobs(JobsConfig("local", max_parallel=1, poll_s=0.2), tmp_path / "sweep", command=command)
    cells = [Cell(("a",), tmp_path / "sweep" / "a", f"base_url=http://me:{PASSWORD}@h/v1 key={KEY}")]
    out = run_cells(cells, check=lambda c: None, run=secret_cell, load=lambda c: "ok", progress=None, jobs=jobs)
    assert [o.status for o in out] == ["ran"]
    assert (tmp_path / "sweep" / "a" / "out.txt").read_text() == "ran"  # the job had the secret it needed
    assert "<redacted>" in " ".join(read_index(tmp_path / "sweep")["command"])
    captured = capsys.readouterr()
    assert list((tmp_path / "sweep" / "jobs" / "logs").glob("*_submitted.pkl"))
    assert _leaks(tmp_path / "sweep" / "jobs", text=captured.out + captured.err) == []


@pytest.mark.parametrize("form", ["config", "set", "url"])
def test_train_sft_data_prints_its_card_without_the_teachers_key(tmp_path, capsys, monkeypatch, form):
    """`lazymem train sft-data` prints the step's result (the resolved teacher config among it): a key given in
    the config, in --set or as a base_url password is shown redacted, never as given."""
    import lazymem.notebooks.recipe as recipe

    key, password = "sk-" + "q" * 40, "hunter2hunter2"
    teacher = {"backend": "openai", "model": "deepseek", "base_url": "http://api.example/v1"}
    if form == "config":
        teacher["api_key"] = key
    if form == "url":
        teacher["base_url"] = f"http://user:{password}@api.example/v1"
    config = tmp_path / "data.yaml"
    config.write_text(
        yaml.safe_dump({"datasets": ["synthetic"], "teacher": teacher, "output_dir": str(tmp_path / "o")})
    )
    sets = ["--set", f"teacher.api_key={key}"] if form == "set" else []

    def step(kind, data, where):  # the step's own result: its resolved config, as the real step returns it
        return {"config": dict(data), "pairs": 0}

    monkeypatch.setattr(recipe, "run_step", step)
    assert cli_main(["train", "sft-data", "--config", str(config), *sets]) == 0
    out = capsys.readouterr()
    assert "deepseek" in out.out
    assert key not in out.out + out.err and password not in out.out + out.err


# --- the whole grid: each command that takes a config, with a key in every form at once ----------------------


def _table_recipe(tmp_path: Path) -> Path:
    """A one-row table whose answer model carries a URL password and an extra_body key in the config."""
    answer = {
        **PIPELINE["answer"],
        "base_url": f"http://me:{PASSWORD}@127.0.0.1:9/v1",
        "extra_body": {"api_key": KEY},
        "api_key_env": "LAZYMEM_TEST_KEY",
    }
    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump({"dataset": SYNTH, "limit": 2, "judge": "none", "pipeline": {**PIPELINE, "answer": answer}})
    )
    recipe = tmp_path / "table.yaml"
    recipe.write_text(yaml.safe_dump({"base": str(base), "sets": {"syn": {}}, "rows": {"rag": {}}}))
    return recipe


@pytest.mark.parametrize("executor", ["inline", "local"])
def test_every_command_keeps_every_form_of_key_out_of_files_and_output(
    tmp_path, capsys, monkeypatch, _importable_tests, executor
):
    """eval-table (inline and as local jobs, through the CLI), jobs, report, remeasure and eval on the cell:
    a key as a base_url password, an extra_body field, a --set value and an environment variable reaches no
    file under the output and cache folders (pickled tasks and job logs as bytes) and no captured output."""
    monkeypatch.setenv("LAZYMEM_TEST_KEY", ENV_KEY)
    recipe, out = _table_recipe(tmp_path), tmp_path / "table"
    row = f"rows={{rag: {{pipeline.mpm.extra_body.api_key: {SET_KEY}}}}}"  # a key in a --set row override
    given = ["--set", f"output_dir={out}", "--set", row, "--no-progress"]
    if executor == "local":
        given += ["--executor", "local", "--max-parallel", "1"]
    assert cli_main(["eval-table", "--config", str(recipe), *given]) == 0
    cell = out / "syn" / "rag"
    assert (cell / "records.jsonl").read_text().count("\n") == 2
    if executor == "local":
        assert cli_main(["jobs", str(out)]) == 0
        assert list((out / "jobs" / "logs").iterdir())  # the job's logs are there to search
    assert cli_main(["report", str(cell), "--out", str(tmp_path / "report"), "--no-png"]) == 0
    assert cli_main(["remeasure", str(cell)]) == 0
    captured = capsys.readouterr()
    leaks = _leaks(out, tmp_path / "report", Path(os.environ["LAZYMEM_CACHE"]), text=captured.out + captured.err)
    assert leaks == [], leaks
