"""lazymem.eval.remeasure: measures added to a finished run equal the runner's own, once, safely."""

from __future__ import annotations

import json

import pytest
import yaml
from fakerun import FAKE, PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.errors import LoadError
from lazymem.eval.remeasure import remeasure
from lazymem.eval.runfiles import ResumeMismatchError


@pytest.fixture
def old_run(tmp_path, capsys):
    """A real extractive run whose records and summary are made to look older than the measures."""
    from lazymem.cli import main as cli_main

    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 4, "judge": "none", "pipeline": PIPELINE}))
    run = tmp_path / "extractive"
    assert cli_main(["eval", str(base), "--out", str(run), "--method", "extractive", "--no-progress"]) == 0
    capsys.readouterr()
    lines = (run / "records.jsonl").read_text().splitlines()
    fresh = [json.loads(x) for x in lines]
    old = [{k: v for k, v in r.items() if k != "memory_measures"} for r in fresh]
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    summary = json.loads((run / "summary.json").read_text())
    expected_summary = summary.pop("memory_measures")
    (run / "summary.json").write_text(json.dumps(summary))
    return run, fresh, expected_summary


def test_remeasure_equals_the_runners_measures_and_a_second_call_changes_nothing(old_run):
    run, fresh, expected_summary = old_run
    assert remeasure(run) == {"measured": 4, "kept": 0, "errors": 0}
    again = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    assert again == fresh  # every field as the runner wrote it, the measures included
    assert json.loads((run / "summary.json").read_text())["memory_measures"] == expected_summary
    before = (run / "records.jsonl").read_bytes()
    assert remeasure(run) == {"measured": 0, "kept": 4, "errors": 0}
    assert (run / "records.jsonl").read_bytes() == before


def test_the_command_line_remeasures_through_lazymem(old_run, capsys):
    from lazymem.cli import main as cli_main

    run, fresh, _ = old_run
    assert cli_main(["remeasure", str(run)]) == 0
    assert f"{run}: measured 4, already measured 0, errors 0" in capsys.readouterr().out
    assert [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()] == fresh


def test_remeasure_refuses_other_data_a_torn_line_and_an_unknown_question(old_run, capsys):
    from lazymem.cli import main as cli_main

    run, _, _ = old_run
    manifest = json.loads((run / "manifest.json").read_text())
    records = (run / "records.jsonl").read_text()
    sha = manifest["dataset"]["sha256"]
    manifest["dataset"]["sha256"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ResumeMismatchError, match="dataset sha256: 000000000000 ->"):
        remeasure(run)
    assert cli_main(["remeasure", str(run)]) == 2 and "different inputs" in capsys.readouterr().err
    (run / "records.jsonl").write_text(records + '{"question_id": "syn1-h0-q9", "sta')
    with pytest.raises(LoadError, match="line 5: the last line is cut off"):
        remeasure(run)
    assert (run / "records.jsonl").read_text() == records + '{"question_id": "syn1-h0-q9", "sta'  # nothing lost
    manifest["dataset"]["sha256"] = sha
    (run / "manifest.json").write_text(json.dumps(manifest))
    own = {k: json.loads(records.splitlines()[0])[k] for k in ("run_id", "config_sha256")}
    extra = json.dumps({"question_id": "nope", "method": "extractive", "status": "ok", "memory": "", **own})
    (run / "records.jsonl").write_text(records + extra + "\n")
    with pytest.raises(LoadError, match=r"record 5, field question_id: 'nope' is not a question"):
        remeasure(run)
