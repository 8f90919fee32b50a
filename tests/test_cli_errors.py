"""How the ``lazymem`` CLI ends: bad input is one line naming file and field with exit 2 (the project's own
errors, OSError, YAML), anything else is a bug with its traceback and exit 1; values that cannot work are
refused; a killed or terminated run is never shown as running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from lazymem.cli import main
from lazymem.data import command as data_command
from lazymem.errors import ConfigError, LoadError, ModelLoadError

REPO = Path(__file__).resolve().parents[1]
SYNTH = "synthetic:messages=60,seed=1,histories=1,questions=6"
FAKE = {"backend": "fake", "model": "fake"}
PIPELINE = {
    "method": "rag",
    "retrieval": {"dense_model": None, "n": 3},
    "window": {"w": 1},
    "mpm": FAKE,
    "answer": FAKE,
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))


def one_error_line(err: str) -> str:
    """The CLI's error: exactly one line, ``lazymem: error: ...``, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lazymem: error: ") and "Traceback" not in err, err[-2000:]
    return lines[0]


def finished_run(out: Path, limit: int = 3) -> Path:
    from lazymem.eval import EvalConfig, evaluate

    evaluate(EvalConfig.from_dict({"dataset": SYNTH, "pipeline": dict(PIPELINE), "limit": limit}), out, progress=False)
    return out


# --- bugs are bugs; the project's own errors are one line --------------------------------------------


BUGS = [ZeroDivisionError("boom"), KeyError("status"), ValueError("x"), RuntimeError("y"), TypeError("z")]
OWN = [
    ConfigError("EvalConfig.limit=-1: must be >= 0"),
    LoadError("a.json", "record 3", "status", "missing"),
    ConfigError("dataset '\ud800': no such file"),  # a lone surrogate from a recipe: printed escaped
    ModelLoadError("cannot load model m: out of memory"),
    FileNotFoundError(2, "No such file", "runs/x"),
]


def test_a_bug_prints_its_traceback_and_exits_1_and_only_the_projects_own_errors_exit_2(monkeypatch, capsys):
    def raising(exc):
        def boom(args):
            raise exc

        return boom

    for exc in BUGS:  # KeyError / ValueError / RuntimeError used to exit 2 as if the input were bad
        monkeypatch.setattr(data_command, "cmd_summary", raising(exc))
        assert main(["data", "summary", "anything"]) == 1, exc
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and type(exc).__name__ in err and "in boom" in err
        assert "lazymem: error:" not in err
    for exc in OWN:
        monkeypatch.setattr(data_command, "cmd_summary", raising(exc))
        assert main(["data", "summary", "anything"]) == 2, exc
        line = one_error_line(capsys.readouterr().err)
        want = str(exc).encode("utf-8", "backslashreplace").decode()
        assert line.endswith(want if not isinstance(exc, OSError) else "runs/x: no such file or directory")


def test_a_bug_in_a_cli_subprocess_exits_1_with_its_traceback(tmp_path):
    script = (
        "import sys; from lazymem import cli\nfrom lazymem.data import command\n"
        "def boom(args): return {}['status']\n"
        "command.cmd_summary = boom\n"
        "sys.exit(cli.main(['data', 'summary', 'x']))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert r.returncode == 1 and "KeyError: 'status'" in r.stderr and "Traceback" in r.stderr, r.stderr[-2000:]


# --- a hand-edited run folder: the error names the file and the field ----------------------------------


def test_a_hand_edited_record_or_manifest_names_file_and_field(tmp_path, capsys):
    run = finished_run(tmp_path / "run")
    records = run / "records.jsonl"
    lines = records.read_text().splitlines()
    rec = json.loads(lines[1])
    del rec["status"]
    records.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    assert main(["report", str(run)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(records) in line and "status" in line and line != "lazymem: error: status"

    run2 = finished_run(tmp_path / "run2")
    manifest = json.loads((run2 / "manifest.json").read_text())
    manifest["config"] = "edited by hand"
    (run2 / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(run2)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(run2 / "manifest.json") in line and "config" in line


# --- YAML errors: one line with file, line and column ------------------------------------------------


def test_a_yaml_error_is_one_line_with_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: synthetic:messages=60,seed=1\npipeline: {method: rag\n  answer: [\n")
    for argv in (["eval", str(bad), "--out", str(tmp_path / "o")], ["train", "sft", "--config", str(bad)]):
        assert main(argv) == 2
        line = one_error_line(capsys.readouterr().err)
        assert f"{bad}:3:" in line and "not valid YAML" in line, line
    ok = tmp_path / "ok.yaml"
    ok.write_text("dataset: synthetic:messages=60,seed=1\n")
    assert main(["eval", str(ok), "--out", str(tmp_path / "o"), "--set", "pipeline.window={w: ["]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "override 'pipeline.window={w: ['" in line and "column 6" in line and "not valid YAML" in line


def test_a_yaml_error_reaching_the_cli_unwrapped_is_one_line(tmp_path, monkeypatch, capsys):
    def parse(args):  # as a reader that loads a file object itself (notebooks' grid files)
        with open(args.spec, encoding="utf-8") as f:
            yaml.safe_load(f)

    monkeypatch.setattr(data_command, "cmd_summary", parse)
    grid = tmp_path / "grid.yaml"
    grid.write_text("a: 1\nb: [2\n")
    assert main(["data", "summary", str(grid)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{grid}:3:1: not valid YAML" in line


# --- values that cannot work ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["perturb", "RUN", "--draws", "0"], "--draws"),
        (["perturb", "RUN", "--draws", "-2"], "--draws"),
        (["perturb", "RUN", "--limit", "-1"], "--limit"),
        (["eval", "--limit", "-1"], "--limit"),
        (["eval", "--workers", "0"], "--workers"),
        (["bench", "pipeline", "--limit", "-1"], "--limit"),
        (["coverage", "SPEC", "--k", "0"], "--k"),
    ],
)
def test_flags_out_of_range_are_refused_with_a_usage_line(capsys, argv, flag):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: lazymem") and f"argument {flag}: " in err and "must be an integer in " in err


def test_perturb_run_and_the_eval_config_refuse_a_negative_limit_or_no_draws(tmp_path):
    from lazymem.eval import EvalConfig
    from lazymem.eval.perturb import perturb_run

    with pytest.raises(ConfigError, match="draws=0 must be an integer >= 1"):
        perturb_run(tmp_path, draws=0)
    with pytest.raises(ConfigError, match="limit=-1 must be"):  # records[:-1] dropped the last question
        perturb_run(tmp_path, limit=-1)
    with pytest.raises(ConfigError, match="EvalConfig.limit=-1"):  # YAML recipes set limit too
        EvalConfig.from_dict({"dataset": SYNTH, "limit": -1})


@pytest.mark.parametrize(
    "argv, words",
    [
        (["bench", "retrieval", "--sizes", "10,x"], ["--sizes", "10,x"]),
        (["bench", "embedding", "--batch-sizes", "0"], ["--batch-sizes", "in 1..65536"]),
        (["coverage", SYNTH, "--w", "0,one", "--dense-model", "none"], ["--w", "0,one"]),
    ],
)
def test_bad_integer_lists_are_refused_with_a_usage_line(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert all(w in line for w in words) and "must be comma-separated integers" in line, line


@pytest.mark.parametrize(
    "argv, words",
    [
        (["retrieve", SYNTH, "--question", "no-such-id", "--dense-model", "none"], ["--question", "no-such-id"]),
    ],
)
def test_bad_values_reached_inside_a_command_are_one_line(capsys, argv, words):
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert all(w in line for w in words), line


# --- coverage on a history without messages -----------------------------------------------------------


def test_coverage_on_a_history_without_messages_prints_a_table(tmp_path, capsys):
    from lazymem.data.synthetic import generate_records

    rec = generate_records(60, seed=3, n_histories=1, questions_per_history=1)[0]
    rec.update(haystack_sessions=[], haystack_session_ids=[], haystack_dates=[], answer_session_ids=[])
    path = tmp_path / "empty.json"
    path.write_text(json.dumps([rec]))
    assert main(["coverage", str(path), "--dense-model", "none"]) == 0
    out = capsys.readouterr().out
    assert "0 of 1 questions with gold evidence" in out and "undefined" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[:2] for r in rows] == [["0", "-"], ["1", "-"], ["2", "-"], ["3", "-"]], out


def test_coverage_sets_the_papers_all_at_50_beside_a_named_benchmark_and_writes_out(tmp_path, capsys):
    from lazymem.data.synthetic import generate_records

    path = tmp_path / "my_longmemeval_slice.json"  # a LongMemEval-format file: its name names the benchmark
    path.write_text(json.dumps(generate_records(60, seed=3, n_histories=1, questions_per_history=2)))
    out_json = tmp_path / "cov" / "coverage.json"
    assert main(["coverage", str(path), "--dense-model", "none", "--out", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "paper" in next(line for line in out.splitlines() if "All@50" in line), out
    rows = {r[0]: r for r in (line.split() for line in out.splitlines() if line.strip()[:1].isdigit())}
    assert [rows[w][2] for w in "0123"] == ["0.950", "0.970", "0.980", "0.980"], out  # paper Table 2, LongMemEval
    saved = json.loads(out_json.read_text())
    assert out_json.read_text().endswith("\n") and saved["n_questions"] == 2


# --- a killed or terminated run is never shown as running --------------------------------------------


def test_a_run_left_running_by_a_kill_reads_as_interrupted_and_the_rerun_records_it(tmp_path, capsys):
    from lazymem.eval.report import build_report, report_markdown
    from lazymem.eval.runfiles import RunLock

    run = finished_run(tmp_path / "run", limit=2)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["status"] = manifest["runs"][-1]["status"] = "running"  # what kill -9 leaves behind
    manifest["end"] = manifest["runs"][-1]["end"] = None
    (run / "manifest.json").write_text(json.dumps(manifest))

    rep = build_report([run])
    assert rep["rows"][0]["status"] == rep["runs"][0]["status"] == "interrupted"
    assert "run: interrupted (rerun `lazymem eval` into its folder to resume it)" in report_markdown(rep)
    assert main(["report", str(run)]) == 0 and "interrupted" in capsys.readouterr().out
    with RunLock(run):  # a live writer holds the lock: then it is running
        assert build_report([run])["rows"][0]["status"] == "running"

    finished_run(run, limit=3)  # the rerun resumes (one more question) and records the kill
    runs = json.loads((run / "manifest.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["interrupted", "done"] and runs[0]["killed"] is True
    assert build_report([run])["rows"][0]["status"] == "done"


DRIVER = textwrap.dedent("""
    import sys, time
    from lazymem import cli
    from lazymem.llm.fake import FakeBackend

    def slow(self, prompt, sampling):
        time.sleep(30)
        return "slow answer"

    FakeBackend._answer = slow
    sys.exit(cli.main(["eval", sys.argv[2], "--out", sys.argv[1], "--no-progress"]))
""")


def test_sigterm_ends_a_cli_run_with_status_interrupted(tmp_path):
    out, driver, recipe = tmp_path / "run", tmp_path / "driver.py", tmp_path / "recipe.yaml"
    driver.write_text(DRIVER)
    recipe.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 3, "pipeline": PIPELINE}))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(out), str(recipe)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 90
        while not (out / "manifest.json").exists():  # written before the first (slow) answer
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "the driver never started its run"
            time.sleep(0.05)
        time.sleep(0.5)  # inside the slow answer
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read().decode()[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["runs"][-1]["status"] == "interrupted"
    assert manifest["end"] is not None and (out / "summary.json").exists()


def test_sigterm_keeps_its_default_outside_the_command_line():
    from lazymem.eval.runner import sigterm_exits

    with sigterm_exits():
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored: evaluate() alone installs nothing
