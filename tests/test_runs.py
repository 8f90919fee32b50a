"""Runs that cannot lose or mix results: one writer per run folder (lock), resume keyed by content.

Every model is a scripted FakeBackend and the datasets are tiny synthetic ones, so the file
runs in seconds (three short subprocesses: the CLI refused by a held lock, a slow run that is
SIGKILLed while holding the lock, and the CLI racing it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from fakerun import FAKE, PIPELINE, SYNTH, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.eval import evaluate
from lazymem.eval.runfiles import (
    LOCK_INFO_FILE,
    ResumeMismatchError,
    RunLock,
    RunLockedError,
    UnmanifestedRecordsError,
    read_records,
)
from lazymem.llm import FakeBackend

REPO = Path(__file__).resolve().parents[1]


def config(dataset: str = SYNTH, **kw):
    from lazymem.eval import EvalConfig

    return EvalConfig.from_dict({"dataset": dataset, "pipeline": dict(PIPELINE), "limit": 3, **kw})


def run(out, dataset: str = SYNTH, answer="an answer", **kw) -> tuple[dict, FakeBackend]:
    ans = FakeBackend(lambda p, s: answer)
    return evaluate(config(dataset), out, progress=False, clients={"answer": ans}, **kw), ans


def env() -> dict:
    return dict(
        os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO)
    )


def cli(tmp_path, out, *extra) -> subprocess.CompletedProcess:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"dataset": SYNTH, "limit": 3, "pipeline": PIPELINE}))
    return subprocess.run(
        [sys.executable, "-m", "lazymem.cli", "eval", str(recipe), "--out", str(out), "--no-progress", *extra],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and not p.name.startswith(".")}


# --- (a, e) one writer per folder ------------------------------------------------------------------


def test_a_second_run_into_a_locked_folder_fails_at_once_naming_the_holder(tmp_path):
    out = tmp_path / "run"
    run(out)
    before = snapshot(out)
    with RunLock(out) as held:
        assert json.loads((out / LOCK_INFO_FILE).read_text())["pid"] == os.getpid()
        t0 = time.perf_counter()
        with pytest.raises(RunLockedError) as e:
            run(out, answer="other")
        assert time.perf_counter() - t0 < 2  # no waiting
        msg = str(e.value)
        assert str(out) in msg and f"pid {os.getpid()} on host {socket.gethostname()}" in msg
        assert held.info["start"] in msg
        # the command line: exit 2, the same message, no traceback, nothing in the folder touched
        p = cli(tmp_path, out)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("lazymem: error: ") and "is locked by another run" in p.stderr
        assert f"pid {os.getpid()} on host {socket.gethostname()}" in p.stderr and "Traceback" not in p.stderr
        assert snapshot(out) == before
    assert not (out / LOCK_INFO_FILE).exists()  # released, and its holder note with it
    s, ans = run(out)  # free again: resumes, nothing to redo
    assert s["counts"]["ok"] == 3 and ans.calls == []
    assert (out / "records.jsonl").read_bytes() == before["records.jsonl"]


DRIVER = textwrap.dedent("""
    import json, sys, time
    from lazymem.eval import EvalConfig, evaluate
    from lazymem.llm import FakeBackend

    def answer(prompt, sampling):
        time.sleep(float(sys.argv[2]))
        return "slow answer"

    evaluate(EvalConfig.from_dict(json.loads(sys.argv[3])), sys.argv[1], progress=False,
             clients={"answer": FakeBackend(answer)})
""")


def test_a_sigkilled_lock_holder_does_not_block_the_next_run(tmp_path):
    out = tmp_path / "run"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    raw = {"dataset": SYNTH, "limit": 3, "pipeline": PIPELINE}
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(out), "30", json.dumps(raw)],
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 60
        while not (out / "manifest.json").exists():  # written with the lock held, before the first answer
            if proc.poll() is not None:
                pytest.fail(f"driver ended early: {proc.stderr.read().decode()[-2000:]}")
            if time.time() > deadline:
                pytest.fail("the driver never started its run")
            time.sleep(0.05)
        holder = json.loads((out / LOCK_INFO_FILE).read_text())
        assert holder["pid"] == proc.pid
        # a real two-process race: the CLI is refused while the driver runs, naming the driver
        p = cli(tmp_path, out)
        assert p.returncode == 2 and f"pid {proc.pid} on host" in p.stderr and "Traceback" not in p.stderr
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert (out / LOCK_INFO_FILE).exists()  # the dead holder's note stays; its lock does not
    t0 = time.perf_counter()
    s, ans = run(out)
    assert time.perf_counter() - t0 < 30 and s["counts"]["ok"] == 3 and len(ans.calls) == 3
    runs = json.loads((out / "manifest.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["interrupted", "done"]  # the killed run never closed: the rerun says so
    assert runs[0]["pid"] == proc.pid and runs[1]["pid"] == os.getpid()
    assert not (out / LOCK_INFO_FILE).exists()


# --- (b) resume keyed by dataset, config and prompts ------------------------------------------------


def test_a_changed_dataset_file_is_refused_and_force_new_sets_the_old_results_aside(tmp_path, capsys):
    from lazymem.cli import main as cli_main
    from lazymem.data.synthetic.generator import write_synthetic

    data = tmp_path / "data.json"
    old_sha = write_synthetic(data, 60, 1, 1, 6)
    out = tmp_path / "run"
    run(out, str(data))
    before = snapshot(out)
    new_sha = write_synthetic(data, 60, 2, 1, 6)  # same path, other content
    assert new_sha != old_sha
    with pytest.raises(ResumeMismatchError) as e:
        run(out, str(data))
    msg = str(e.value)
    assert f"dataset sha256: {old_sha[:12]} -> {new_sha[:12]}" in msg and "--force-new" in msg
    assert e.value.changes == [f"dataset sha256: {old_sha[:12]} -> {new_sha[:12]}"]
    assert snapshot(out) == before  # (e) the refused run changed nothing
    # the command line says the same and exits 2
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"dataset": str(data), "limit": 3, "pipeline": PIPELINE}))
    assert cli_main(["eval", str(recipe), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lazymem: error: ") and new_sha[:12] in err and "Traceback" not in err
    assert snapshot(out) == before
    # --force-new: the old results move aside (byte for byte), every question is redone
    s, ans = run(out, str(data), answer="new answer", force_new=True)
    assert s["counts"]["ok"] == 3 and len(ans.calls) == 3
    prev = [p for p in out.iterdir() if p.name.startswith("previous-")]
    assert len(prev) == 1
    for name in ("records.jsonl", "summary.json", "windows.jsonl"):
        assert (prev[0] / name).read_bytes() == before[name]
    assert (prev[0] / "manifest.json").read_bytes() == before["manifest.json"]
    recs, _ = read_records(out / "records.jsonl")
    assert len(recs) == 3 and all(r["answer"] == "new answer" for r in recs)
    m = json.loads((out / "manifest.json").read_text())
    assert m["dataset"]["sha256"] == new_sha
    assert [r["moved_to"] for r in m["runs"][:1]] == [prev[0].name] and "moved_to" not in m["runs"][1]
    assert m["runs"][1]["set_aside_to"] == prev[0].name and m["runs"][1]["force_new"] is True
    # and from now on the folder resumes as usual
    s, ans = run(out, str(data))
    assert s["counts"]["ok"] == 3 and ans.calls == []


def test_changed_prompts_or_config_are_refused_naming_what_changed(tmp_path, monkeypatch):
    from lazymem import prompts

    out = tmp_path / "run"
    run(out)
    before = snapshot(out)
    real = prompts.prompt_hashes()
    name = sorted(real)[0]
    monkeypatch.setattr(prompts, "prompt_hashes", lambda: dict(real, **{name: "f" * 64}))
    with pytest.raises(ResumeMismatchError, match=rf"prompt {name}: {real[name][:12]} -> ffffffffffff"):
        run(out)
    monkeypatch.undo()
    with pytest.raises(ResumeMismatchError, match=r"a different configuration.*config_sha256: \w{12} -> \w{12}"):
        evaluate(config(seed=7), out, progress=False, clients={"answer": FakeBackend(lambda p, s: "a")})
    assert snapshot(out) == before
    # overwrite=True (the old flag) is force_new now: nothing is deleted
    s = evaluate(config(seed=7), out, progress=False, clients={"answer": FakeBackend(lambda p, s: "a")}, overwrite=True)
    assert s["counts"]["recorded"] == 3
    prev = [p for p in out.iterdir() if p.name.startswith("previous-")]
    assert len(prev) == 1 and (prev[0] / "records.jsonl").read_bytes() == before["records.jsonl"]


# --- (c) records without a manifest -------------------------------------------------------------------


def test_records_without_a_manifest_are_never_resumed(tmp_path):
    out = tmp_path / "run"
    run(out)
    (out / "manifest.json").unlink()
    before = snapshot(out)
    with pytest.raises(UnmanifestedRecordsError, match=r"has records.jsonl but no readable manifest.json"):
        run(out)
    (out / "manifest.json").write_text("{not json")  # unreadable is the same as missing
    before = snapshot(out)
    with pytest.raises(UnmanifestedRecordsError, match="--force-new"):
        run(out)
    assert snapshot(out) == before
    s, ans = run(out, force_new=True)
    assert s["counts"]["ok"] == 3 and len(ans.calls) == 3
    prev = [p for p in out.iterdir() if p.name.startswith("previous-")]
    assert (prev[0] / "records.jsonl").read_bytes() == before["records.jsonl"]
    assert [r["status"] for r in json.loads((out / "manifest.json").read_text())["runs"]] == ["done"]
