"""Damaged run state is an error, not a traceback: jobs.json, manifest.json and records.jsonl of the wrong shape
make every command exit 2 with one line naming the file and the field, and never lose a record.

A tiny extractive run (no model) is made once; each example mutates one file of a copy of it (wrong types,
nulls, truncation, extra and missing keys) and runs the commands that read it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from fakerun import PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazymem.cli import main as cli_main

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=4), st.floats(allow_nan=False))
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)
ENTRY = {"key": ["a"], "task": "", "folder": "f", "job_id": "1", "executor": "local", "state": "done", "log": "l"}
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI reproducible; raise max_examples to explore
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def base(tmp_path_factory, capsys):
    """A finished 3-question extractive run folder, its recipe, and a jobs index beside it."""
    root = tmp_path_factory.mktemp("base")
    recipe = root / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 3, "judge": "none", "pipeline": PIPELINE}))
    run = root / "run"
    assert cli_main(["eval", str(recipe), "--out", str(run), "--method", "extractive", "--no-progress"]) == 0
    entry = {
        "key": ["set", "row"],
        "task": "",
        "folder": str(run),
        "job_id": "123",
        "executor": "local",
        "submitted": "2024-01-01T00:00:00+00:00",
        "ended": "2024-01-01T00:01:00+00:00",
        "state": "done",
        "log": str(root / "sweep" / "jobs" / "logs" / "123_0_log.out"),
        "error": None,
    }
    index = {"label": "t", "command": ["lazymem", "eval-table"], "only_index": 1, "executor": {"kind": "local"}}
    (root / "sweep" / "jobs").mkdir(parents=True)
    (root / "sweep" / "jobs" / "jobs.json").write_text(json.dumps({**index, "jobs": [entry], "previous": []}))
    capsys.readouterr()
    return root, recipe, run


def mutate(value, data):
    """`value` (a JSON tree) with one change drawn from `data`: a node replaced by another JSON value (a
    wrong type, null), a key removed, or a key added."""
    paths = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, (*path, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, (*path, i))

    walk(value, ())
    shallow = [p for p in paths if len(p) <= 2]  # the whole file, its keys and theirs: where readers look first
    path = data.draw(st.sampled_from(shallow) if data.draw(st.booleans()) else st.sampled_from(paths))
    kind = data.draw(st.sampled_from(["replace", "drop", "add"]))
    new = json.loads(json.dumps(value))
    if not path:
        return data.draw(JSON) if kind == "replace" else new
    parent = new
    for p in path[:-1]:
        parent = parent[p]
    if kind == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif kind == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=6))] = data.draw(JSON)
    else:
        parent[path[-1]] = data.draw(JSON)
    return new


def damaged_text(value, data) -> str:
    """The JSON text of a mutation of `value`, or that text cut short."""
    text = json.dumps(mutate(value, data))
    if data.draw(st.booleans()) and data.draw(st.integers(0, 9)) == 0:
        text = text[: data.draw(st.integers(0, max(0, len(text) - 1)))]
    return text


def exits_cleanly(argv, capsys) -> None:
    """`argv` exits 0, or 2 with a message on stderr; never a traceback."""
    status = cli_main(argv)
    err = capsys.readouterr().err
    assert status in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if status == 2:
        assert err.strip(), "exit 2 without a message"


def records_kept(before: list[str], path: Path) -> None:
    """Every records.jsonl line of before is still there (in the folder, or set aside beside it)."""
    after = path.read_text().splitlines() if path.exists() else []
    aside = [line for p in path.parent.glob("previous-*/records.jsonl") for line in p.read_text().splitlines()]
    missing = [x for x in before if x not in after and x not in aside]
    assert not missing


@SETTINGS
@given(data=st.data())
def test_a_damaged_manifest_is_an_error_naming_it(base, tmp_path_factory, capsys, data):
    root, recipe, run = base
    work = tmp_path_factory.mktemp("m") / "run"
    shutil.copytree(run, work)
    manifest = json.loads((work / "manifest.json").read_text())
    (work / "manifest.json").write_text(damaged_text(manifest, data))
    before = (work / "records.jsonl").read_text().splitlines()
    force = data.draw(st.sampled_from([[], ["--force-new"]]))
    exits_cleanly(["eval", str(recipe), "--out", str(work), "--method", "extractive", "--no-progress", *force], capsys)
    records_kept(before, work / "records.jsonl")
    for argv in (["report", str(work)], ["remeasure", str(work)], ["merge", str(work), "--out", str(work) + "-m"]):
        exits_cleanly(argv, capsys)
    records_kept(before, work / "records.jsonl")


@SETTINGS
@given(data=st.data())
def test_damaged_records_are_an_error_naming_them(base, tmp_path_factory, capsys, data):
    root, recipe, run = base
    work = tmp_path_factory.mktemp("r") / "run"
    shutil.copytree(run, work)
    lines = (work / "records.jsonl").read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    lines[i] = damaged_text(json.loads(lines[i]), data)
    if data.draw(st.booleans()) and data.draw(st.integers(0, 5)) == 0:
        lines = []  # an empty records file
    (work / "records.jsonl").write_text("".join(x + "\n" for x in lines))
    before = [x for x in lines if x.strip()]
    exits_cleanly(["eval", str(recipe), "--out", str(work), "--method", "extractive", "--no-progress"], capsys)
    for argv in (["report", str(work)], ["remeasure", str(work)], ["merge", str(work), "--out", str(work) + "-m"]):
        exits_cleanly(argv, capsys)
    after = (work / "records.jsonl").read_text()
    errors = (work / "errors.jsonl").read_text() if (work / "errors.jsonl").exists() else ""
    last = before[-1] if before else None  # a last line that is no question record reads as a cut-off append
    assert all(x in after or x in errors or (x == last and '"question_id"' not in x) for x in before)


@SETTINGS
@given(data=st.data())
def test_a_damaged_jobs_index_is_an_error_naming_it(base, tmp_path_factory, capsys, data):
    root, _, _ = base
    sweep = tmp_path_factory.mktemp("j") / "sweep"
    shutil.copytree(root / "sweep", sweep)
    index = json.loads((sweep / "jobs" / "jobs.json").read_text())
    (sweep / "jobs" / "jobs.json").write_text(damaged_text(index, data))
    exits_cleanly(["jobs", str(sweep)], capsys)


@pytest.mark.parametrize(
    "index, field",
    [
        ([], None),
        ({"jobs": None}, "jobs"),
        ({"jobs": [{}]}, "jobs[0].key"),
        ({"jobs": [{k: v for k, v in ENTRY.items() if k != "log"}]}, "jobs[0].log"),
        ({"jobs": [{"key": ["a"], "job_id": 1}]}, "jobs[0].job_id"),
        ({"jobs": [{**ENTRY, "error": 3}]}, "jobs[0].error"),
        ({"jobs": [ENTRY], "command": "lazymem"}, "command"),
    ],
)
def test_the_named_jobs_index_damages_exit_2_naming_the_field(tmp_path, capsys, index, field):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "jobs.json").write_text(json.dumps(index))
    assert cli_main(["jobs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'jobs' / 'jobs.json'}: " in err and "Traceback" not in err
    if field:
        assert f"field {field}:" in err


def test_an_only_index_past_the_cell_keys_is_named(tmp_path, capsys):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "jobs.json").write_text(json.dumps({"only_index": 5, "jobs": [ENTRY]}))
    assert cli_main(["jobs", str(tmp_path)]) == 2
    assert "field only_index: 5 is not an index into its key" in capsys.readouterr().err


@pytest.mark.parametrize(
    "manifest, force", [([1], False), ("x", False), ({"runs": None}, False), ({"runs": ["a"]}, True)]
)
def test_the_named_manifest_damages_exit_2(base, tmp_path, capsys, manifest, force):
    root, recipe, run = base
    work = tmp_path / "run"
    shutil.copytree(run, work)
    (work / "manifest.json").write_text(json.dumps(manifest))
    before = (work / "records.jsonl").read_text()
    argv = ["eval", str(recipe), "--out", str(work), "--method", "extractive", "--no-progress"]
    assert cli_main(argv + (["--force-new"] if force else [])) == 2
    err = capsys.readouterr().err
    assert f"{work / 'manifest.json'}" in err and "Traceback" not in err
    assert cli_main(["merge", str(work), "--out", str(tmp_path / "m")]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert (work / "records.jsonl").read_text() == before


def test_an_empty_records_file_resumes_as_nothing_done(base, tmp_path, capsys):
    root, recipe, run = base
    work = tmp_path / "run"
    shutil.copytree(run, work)
    (work / "records.jsonl").write_text("")
    argv = ["eval", str(recipe), "--out", str(work), "--method", "extractive", "--no-progress"]
    assert cli_main(argv) == 0
    assert len((work / "records.jsonl").read_text().splitlines()) == 3
    assert cli_main(["merge", str(work), "--out", str(tmp_path / "m")]) == 0


def test_a_window_without_its_optional_hits_still_writes_its_window_line():
    """A record whose window leaves out an optional field (here ``hits``) reads, and its windows.jsonl line
    holds None there: the rewrite after a resume does not stop on it."""
    from lazymem.eval.records.run import RunRecord
    from lazymem.eval.runfiles import window_lines

    committed = (
        Path(__file__).resolve().parents[1]
        / "docs/results/lazymem-135m/table/synthetic_heldout/extractive/records.jsonl"
    )
    raw = json.loads(committed.read_text().splitlines()[0])
    del raw["windows"][0]["hits"]
    lines = window_lines([RunRecord.from_json(raw, str(committed), 1)])
    assert lines[0]["hits"] is None and lines[0]["positions"] == raw["windows"][0]["positions"]
