"""Run state that cannot lie: every record carries the run id and config fingerprint it was made under, and
resume, merge, report, remeasure and eval-table's freshness check refuse a record that is not the folder's own.

Every model is the fake backend on a tiny synthetic data set (extractive needs no model at all).
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from fakerun import PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.cli import main as cli_main
from lazymem.eval.runfiles import ForeignRecordError, ResumeMismatchError, check_run_folder, load_records


def _eval(tmp_path, out, method, *extra, dataset=SYNTH, capsys=None):
    """``lazymem eval`` of `method` on 4 questions into `out`; its exit status."""
    recipe = tmp_path / f"{method}.yaml"
    recipe.write_text(yaml.safe_dump({"dataset": dataset, "limit": 4, "judge": "none", "pipeline": PIPELINE}))
    return cli_main(["eval", str(recipe), "--out", str(out), "--method", method, "--no-progress", *extra])


@pytest.fixture
def two_runs(tmp_path, capsys):
    """An extractive and a rag run folder of the same questions."""
    ex, rag = tmp_path / "ex", tmp_path / "rag"
    assert _eval(tmp_path, ex, "extractive") == 0
    assert _eval(tmp_path, rag, "rag") == 0
    capsys.readouterr()
    return ex, rag


def _lines(path):
    return path.read_text().splitlines(keepends=True)


def test_every_record_carries_its_run_id_and_the_fingerprint_its_manifest_lists(two_runs):
    ex, _ = two_runs
    m = json.loads((ex / "manifest.json").read_text())
    run = m["runs"][-1]
    for line in _lines(ex / "records.jsonl"):
        r = json.loads(line)
        assert (
            (r["run_id"], r["config_sha256"])
            == (run["run_id"], run["config_sha256"])
            == (
                run["run_id"],
                m["config_sha256"],
            )
        )


def test_resume_refuses_records_copied_from_another_methods_folder(tmp_path, two_runs, capsys):
    ex, rag = two_runs
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(ex / "manifest.json", mixed / "manifest.json")
    text = "".join(_lines(ex / "records.jsonl")[:2] + _lines(rag / "records.jsonl")[-2:])
    (mixed / "records.jsonl").write_text(text)
    assert _eval(tmp_path, mixed, "extractive") == 2
    err = capsys.readouterr().err
    rag_run = json.loads((rag / "manifest.json").read_text())["runs"][-1]["run_id"]
    ex_run = json.loads((ex / "manifest.json").read_text())["runs"][-1]["run_id"]
    assert f"{mixed / 'records.jsonl'}: line 3:" in err and rag_run in err and ex_run in err
    assert "--force-new" in err and "Traceback" not in err
    assert (mixed / "records.jsonl").read_text() == text  # nothing resumed, nothing lost


def test_a_whole_records_file_of_another_method_appended_is_refused_by_eval_and_report(tmp_path, two_runs, capsys):
    ex, rag = two_runs
    before = (ex / "records.jsonl").read_text()
    (ex / "records.jsonl").write_text(before + (rag / "records.jsonl").read_text())
    assert _eval(tmp_path, ex, "extractive") == 2
    assert "line 5:" in capsys.readouterr().err
    assert cli_main(["report", str(ex)]) == 2
    err = capsys.readouterr().err
    assert "line 5:" in err and "method 'rag'" in err and "Traceback" not in err
    assert not json.loads((ex / "summary.json").read_text())["run_dir"].endswith("rag")


def test_a_record_with_the_folders_run_id_but_another_fingerprint_is_refused(tmp_path, two_runs, capsys):
    ex, _ = two_runs
    lines = _lines(ex / "records.jsonl")
    r = json.loads(lines[1])
    r["config_sha256"] = "f" * 64
    lines[1] = json.dumps(r) + "\n"
    (ex / "records.jsonl").write_text("".join(lines))
    assert _eval(tmp_path, ex, "extractive") == 2
    err = capsys.readouterr().err
    assert "line 2:" in err and "ffffffffffff" in err and "config fingerprint" in err


def test_records_written_before_they_carried_a_fingerprint_still_resume(tmp_path, two_runs, capsys):
    ex, _ = two_runs
    old = [{k: v for k, v in json.loads(x).items() if k != "config_sha256"} for x in _lines(ex / "records.jsonl")]
    (ex / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    assert _eval(tmp_path, ex, "extractive") == 0
    assert [json.loads(x) for x in _lines(ex / "records.jsonl")] == old


def test_merge_refuses_a_shard_holding_a_record_of_another_run(tmp_path, capsys):
    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, d in enumerate(shards):
        assert _eval(tmp_path, d, "extractive", "--shard", f"{i}/2") == 0
    other = tmp_path / "other"
    assert _eval(tmp_path, other, "extractive", "--shard", "1/2") == 0
    capsys.readouterr()
    first = _lines(shards[1] / "records.jsonl")[0]
    (shards[1] / "records.jsonl").write_text(
        "".join([*_lines(other / "records.jsonl")[:1], *_lines(shards[1] / "records.jsonl")[1:]])
    )
    assert first != (shards[1] / "records.jsonl").read_text().splitlines(keepends=True)[0]
    assert cli_main(["merge", *map(str, shards), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"{shards[1] / 'records.jsonl'}: line 1:" in err and "Traceback" not in err
    assert not (tmp_path / "m" / "records.jsonl").exists()


def test_remeasure_refuses_what_eval_refuses_unknown_dataset_bytes_after_the_data_changed(tmp_path, capsys):
    from lazymem.data.synthetic.generator import write_synthetic

    data = tmp_path / "data.json"
    write_synthetic(data, 60, 1, 1, 6)
    run = tmp_path / "run"
    assert _eval(tmp_path, run, "extractive", dataset=str(data)) == 0
    m = json.loads((run / "manifest.json").read_text())
    del m["dataset"]["sha256"]
    (run / "manifest.json").write_text(json.dumps(m))
    old = [{k: v for k, v in json.loads(x).items() if k != "memory_measures"} for x in _lines(run / "records.jsonl")]
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    write_synthetic(data, 60, 2, 1, 6)  # same path, other content
    before = (run / "records.jsonl").read_bytes()
    capsys.readouterr()
    assert cli_main(["remeasure", str(run)]) == 2
    remeasure_err = capsys.readouterr().err
    assert _eval(tmp_path, run, "extractive", dataset=str(data)) == 2
    eval_err = capsys.readouterr().err
    for err in (remeasure_err, eval_err):
        assert "dataset sha256: unknown (not in the manifest) ->" in err and "--force-new" in err
    assert (run / "records.jsonl").read_bytes() == before


def test_remeasure_refuses_a_record_of_another_run(tmp_path, two_runs, capsys):
    ex, rag = two_runs
    (ex / "records.jsonl").write_text((ex / "records.jsonl").read_text() + _lines(rag / "records.jsonl")[0])
    assert cli_main(["remeasure", str(ex)]) == 2
    assert "line 5:" in capsys.readouterr().err


def test_the_one_check_refuses_a_record_without_a_run_id_where_the_manifest_lists_runs(two_runs):
    ex, _ = two_runs
    records, _ = load_records(ex / "records.jsonl")
    manifest = json.loads((ex / "manifest.json").read_text())
    check_run_folder(ex, manifest, records, {})  # the folder's own: fine
    with pytest.raises(ForeignRecordError, match="line 1: .*no run_id"):
        check_run_folder(ex, manifest, [records[0].with_(run_id=None), *records[1:]], {})
    with pytest.raises(ResumeMismatchError, match="dataset sha256"):
        check_run_folder(ex, manifest, records, {"dataset_sha256": "0" * 64})


def test_the_freshness_check_refuses_a_cell_holding_another_runs_record(tmp_path, two_runs):
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig
    from lazymem.eval.table import cell_changes

    ex, rag = two_runs
    cfg = EvalConfig.from_dict(json.loads((ex / "manifest.json").read_text())["config"])
    dataset = load_dataset(SYNTH)
    assert cell_changes(ex, cfg, dataset) == []
    (ex / "records.jsonl").write_text((ex / "records.jsonl").read_text() + _lines(rag / "records.jsonl")[0])
    with pytest.raises(ForeignRecordError, match="line 5"):
        cell_changes(ex, cfg, dataset)
