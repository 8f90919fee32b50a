"""eval-table and run-folder integrity: names that are folder names, no stale
cell shown as current, a manifest without its identity never matching, and no credential given
in any --set form or in a base_url's userinfo reaching a file of the run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakerun import FAKE, PIPELINE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.errors import ConfigError
from lazymem.eval import evaluate
from lazymem.eval.runfiles import ResumeMismatchError
from lazymem.eval.table import EvalTableConfig, run_eval_table
from lazymem.llm import FakeBackend

REPO = Path(__file__).resolve().parents[1]


def write_data(path: Path, seed: int) -> str:
    from lazymem.data.synthetic.generator import write_synthetic

    return write_synthetic(path, 60, seed, 1, 6)


def base_recipe(tmp_path: Path, dataset: str) -> Path:
    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump({"dataset": dataset, "limit": 2, "judge": "none", "count_tokens": False, "pipeline": PIPELINE})
    )
    return base


def answer_clients(answer: str = "an answer"):
    return lambda set_name, row: {"answer": FakeBackend(lambda p, s: answer)}


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


# --- names are folder names ------------------------------------------------------------------------


def test_a_numeric_set_or_row_name_is_a_clear_config_error(tmp_path):
    from lazymem.train.recipe import load_recipe

    recipe = tmp_path / "table.yaml"
    recipe.write_text("base: base.yaml\nsets: {s: {limit: 1}}\nrows: {1: {pipeline.method: rag}}\n")
    with pytest.raises(ConfigError, match=r"EvalTableConfig\.rows: name 1 is a int, not a string.*quote it"):
        load_recipe(EvalTableConfig, recipe)
    with pytest.raises(ConfigError, match=r"EvalTableConfig\.sets: name 2024 is a int"):
        EvalTableConfig(base="b.yaml", sets={2024: {}}, rows={"rag": {}})


@pytest.mark.parametrize("name", ["../../x", "..", ".", "/abs/path", "a/b", "a\\b", "", " ", "nul\0x", "table.json"])
def test_a_name_that_is_not_one_folder_is_refused_and_nothing_is_written_outside(tmp_path, name):
    out = tmp_path / "deep" / "table"
    base = base_recipe(tmp_path, "synthetic:messages=60,seed=1,histories=1,questions=6")
    outside = files_under(tmp_path)
    for sets, rows in (({"s": {}}, {name: {}}), ({name: {}}, {"rag": {}})):
        with pytest.raises(ConfigError, match="must be one folder name"):
            cfg = EvalTableConfig(base=str(base), sets=sets, rows=rows, output_dir=str(out))
            run_eval_table(cfg, progress=False, clients_for=answer_clients())
    assert files_under(tmp_path) == outside and not out.exists()


# --- stale cells -----------------------------------------------------------------------------------


def test_cells_of_an_older_dataset_are_recomputed_or_flagged_never_shown_as_current(tmp_path):
    data = tmp_path / "data.json"
    old_sha = write_data(data, 1)
    base = base_recipe(tmp_path, str(data))
    rows = {"drop": {"pipeline.method": "rag"}, "rag": {"pipeline.method": "rag", "pipeline.retrieval.n": 2}}
    cfg = EvalTableConfig(base=str(base), sets={"syn": {}}, rows=rows, output_dir=str(tmp_path / "t"))
    first = run_eval_table(cfg, progress=False, clients_for=answer_clients("old"))
    assert first["syn"]["drop"]["questions"] == 2 and "recomputed" not in first["syn"]["drop"]
    # unchanged inputs: a finished cell is read back as it is
    only = EvalTableConfig(base=str(base), sets=cfg.sets, rows=rows, only=("rag",), output_dir=cfg.output_dir)
    assert run_eval_table(only, progress=False, clients_for=answer_clients())["syn"]["drop"] == first["syn"]["drop"]

    new_sha = write_data(data, 2)  # the set's dataset changed under the same path
    assert new_sha != old_sha
    table = run_eval_table(only, progress=False, clients_for=answer_clients("new"))
    drop = table["syn"]["drop"]  # left out by `only`: flagged, its old numbers not shown
    assert drop["stale"] == f"dataset sha256: {old_sha[:12]} -> {new_sha[:12]}" and drop["questions"] is None
    assert table["syn"]["rag"]["recomputed"] == f"dataset sha256: {old_sha[:12]} -> {new_sha[:12]}"
    md = (tmp_path / "t" / "table.md").read_text()
    assert "- drop stale, not shown" in md and "- rag recomputed" in md and new_sha[:12] in md

    table = run_eval_table(cfg, progress=False, clients_for=answer_clients("new"))
    assert table["syn"]["drop"]["questions"] == 2 and "dataset sha256" in table["syn"]["drop"]["recomputed"]
    assert "recomputed" not in table["syn"]["rag"]  # recomputed last time: current now
    for row in rows:
        cell = tmp_path / "t" / "syn" / row
        recs = [json.loads(x) for x in (cell / "records.jsonl").read_text().splitlines()]
        assert {r["answer"] for r in recs} == {"new"}  # no record of the old dataset beside new ones
        assert json.loads((cell / "manifest.json").read_text())["dataset"]["sha256"] == new_sha
        prev = [p for p in cell.iterdir() if p.name.startswith("previous-")]
        assert len(prev) == 1 and (prev[0] / "records.jsonl").is_file()  # set aside, never deleted


def test_a_summary_without_its_records_is_shown_by_a_full_run_and_rerun_only_when_named(tmp_path):
    """A fresh clone holds committed summaries, not the records (they quote the dataset): running the
    whole table shows such a cell as it is and reruns nothing; naming its row reruns its questions."""
    from lazymem.eval.dryrun import dry_run

    data = tmp_path / "data.json"
    write_data(data, 1)
    base = base_recipe(tmp_path, str(data))
    rows = {"a": {"pipeline.method": "rag"}, "b": {"pipeline.method": "rag", "pipeline.retrieval.n": 2}}
    cfg = EvalTableConfig(base=str(base), sets={"syn": {}}, rows=rows, output_dir=str(tmp_path / "t"))
    first = run_eval_table(cfg, progress=False, clients_for=answer_clients("first"))
    cell = tmp_path / "t" / "syn" / "a"
    (cell / "records.jsonl").unlink()
    (cell / "windows.jsonl").unlink(missing_ok=True)
    (tmp_path / "t" / "syn" / "b" / "records.jsonl").write_text(
        (tmp_path / "t" / "syn" / "b" / "records.jsonl").read_text().splitlines()[0] + "\n"
    )  # one of b's two questions recorded: resumable
    states = {c["row"]: c["state"] for c in dry_run(cfg)["cells"]}
    assert states == {
        "a": "finished, summary only (no records here): shown as it is; --set only=[a] reruns its 2 questions",
        "b": "resumable (1 of 2 recorded)",
    }
    summary = (cell / "summary.json").read_text()
    again = run_eval_table(cfg, progress=False, clients_for=answer_clients("second"))
    assert again["syn"]["a"] == first["syn"]["a"] and (cell / "summary.json").read_text() == summary
    assert not (cell / "records.jsonl").exists()  # nothing ran for a
    recs = [json.loads(x) for x in (tmp_path / "t" / "syn" / "b" / "records.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in recs] == ["first", "second"]  # b resumed: only its missing question ran
    named = EvalTableConfig(base=str(base), sets=cfg.sets, rows=rows, only=("a",), output_dir=cfg.output_dir)
    assert dry_run(named)["cells"][0]["state"] == (
        "finished, summary only (no records here): reruns its 2 questions in place"
    )
    run_eval_table(named, progress=False, clients_for=answer_clients("third"))
    recs = [json.loads(x) for x in (cell / "records.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in recs] == ["third", "third"]
    assert {c["row"]: c["state"] for c in dry_run(cfg)["cells"]} == {
        "a": "finished (2 of 2 recorded)",
        "b": "finished (2 of 2 recorded)",
    }


# --- a manifest without its identity ------------------------------------------------------------------


@pytest.mark.parametrize("drop", ["dataset", "config_sha256", "prompt_hashes"])
def test_a_manifest_without_an_identity_field_never_matches(tmp_path, drop):
    from lazymem.eval import EvalConfig

    data = tmp_path / "data.json"
    write_data(data, 1)
    cfg = EvalConfig.from_dict({"dataset": str(data), "limit": 2, "count_tokens": False, "pipeline": PIPELINE})
    out = tmp_path / "run"
    evaluate(cfg, out, progress=False, clients={"answer": FakeBackend(lambda p, s: "old")})
    m = json.loads((out / "manifest.json").read_text())
    del m[drop]
    (out / "manifest.json").write_text(json.dumps(m))
    if drop == "dataset":
        write_data(data, 2)  # the case of the issue: the rerun used to keep the old records
    with pytest.raises(ResumeMismatchError, match=r"unknown \(not in the manifest\)"):
        evaluate(cfg, out, progress=False, clients={"answer": FakeBackend(lambda p, s: "new")})
    s = evaluate(cfg, out, progress=False, clients={"answer": FakeBackend(lambda p, s: "new")}, force_new=True)
    assert s["counts"]["ok"] == 2


# --- credentials in every --set form and in a URL's userinfo --------------------------------------


def test_no_credential_from_set_values_or_a_url_userinfo_reaches_the_run_folder(tmp_path):
    flow = "FLOWsentinel0a"  # --set 'extra_body={api_key: ..., foo: 1}' (YAML flow mapping)
    js = "JSONsentinel0b"  # --set 'extra_body={"api_key": "..."}' (JSON)
    bare = "BAREsentinel0c"  # --set extra_body={"api_key":"..."} after the shell ate the quotes
    seq = "SEQsentinel0d"  # --set 'extra_body={headers: [{Authorization: ...}]}' (flow sequence)
    urlpw = "URLsentinel0e"  # a base_url's password, in the recipe
    urlpw2 = "URLsentinel0f"  # a base_url's password, on the command line
    sentinels = [flow, js, bare, seq, urlpw, urlpw2]
    recipe = tmp_path / "recipe.yaml"
    pipeline = dict(PIPELINE, answer=dict(FAKE, base_url=f"http://user:{urlpw}@127.0.0.1:9/v1"))
    recipe.write_text(
        yaml.safe_dump(
            {
                "dataset": "synthetic:messages=60,seed=1,histories=1,questions=6",
                "limit": 2,
                "count_tokens": False,
                "pipeline": pipeline,
            }
        )
    )
    out = tmp_path / "run"
    argv = [
        "eval",
        str(recipe),
        "--out",
        str(out),
        "--no-progress",
        "--set",
        f"pipeline.mpm.extra_body={{api_key: {flow}, foo: 1}}",
        "--set",
        f'pipeline.answer.extra_body={{"api_key": "{js}", "top_k": 5}}',
        "--set",
        f"pipeline.mpm.chat_template_kwargs={{api_key:{bare}}}",
        "--set",
        f"pipeline.answer.chat_template_kwargs={{headers: [{{Authorization: {seq}}}]}}",
        "--set",
        f"pipeline.mpm.base_url=http://me:{urlpw2}@127.0.0.1:9/v1",
    ]
    env = dict(
        os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "lazymem.cli", *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )  # a real `lazymem eval`: its sys.argv is what gets recorded
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not any(s in proc.stdout + proc.stderr for s in sentinels)
    written = files_under(tmp_path) - {recipe}  # the run folder and the caches
    assert {p.name for p in written} >= {"records.jsonl", "summary.json", "manifest.json", "windows.jsonl"}
    for p in written:
        data = p.read_bytes()
        for secret in sentinels:
            assert secret.encode() not in data, (p, secret)
    m = json.loads((out / "manifest.json").read_text())
    assert m["config"]["pipeline"]["answer"]["base_url"] == "http://user:<redacted>@127.0.0.1:9/v1"  # host kept
    assert m["config"]["pipeline"]["mpm"]["extra_body"] == {"api_key": "<redacted>", "foo": 1}
    command = m["runs"][-1]["command"]
    assert "pipeline.mpm.base_url=http://me:<redacted>@127.0.0.1:9/v1" in command
    assert "pipeline.mpm.extra_body=<redacted>" in command and "--no-progress" in command
