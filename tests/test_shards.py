"""Question shards and ``lazymem merge`` (lazymem.eval.shards): K shard runs merged back equal the unsharded
run; folders that do not belong together, overlap, leave questions out or are unfinished are refused.

Real runs of the runner (``evaluate``) on a tiny synthetic dataset with the fake backend (it echoes its
prompt; rag needs no other model), so the file runs in seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from fakerun import FAKE, PIPELINE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.errors import ConfigError
from lazymem.eval import EvalConfig, evaluate, select_questions
from lazymem.eval.command import add_arguments as eval_arguments
from lazymem.eval.command import config_from_args
from lazymem.eval.config import config_fingerprints
from lazymem.eval.runfiles import RunLock
from lazymem.eval.shards import add_arguments, merge_runs, run_from_args, shard_names, shard_questions
from lazymem.llm import FakeBackend

SPEC = "synthetic:messages=60,seed=1,histories=2,questions=5"  # 10 questions over 2 histories
VOLATILE = {"timings", "latency_s", "recorded_at", "run_id", "pool_timings", "seconds", "seconds_by_stage"}


def config(**kw) -> EvalConfig:
    pipeline = dict(PIPELINE, **kw.pop("pipeline", {}))
    return EvalConfig.from_dict({"dataset": SPEC, "pipeline": pipeline, "llm_cache": False, **kw})


def run(out: Path, shard: str | None = None, base: EvalConfig | None = None, **kw) -> dict:
    return evaluate(dataclasses.replace(base or config(), shard=shard), out, progress=False, **kw)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def stable(obj):
    """A record (or summary) without wall times and run ids, at any depth."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


@pytest.fixture
def shards(tmp_path) -> list[Path]:
    dirs = [tmp_path / f"shard{i}" for i in range(3)]
    for d, name in zip(dirs, shard_names(3)):
        run(d, name)
    return dirs


def test_shard_questions_are_disjoint_complete_balanced_and_applied_last():
    from lazymem.data import load_dataset

    ds = load_dataset(SPEC)
    qs = list(reversed(ds.questions))  # a given order that is not the id order
    for k in range(1, 6):
        parts = [shard_questions(qs, i, k) for i in range(k)]
        ids = [q.id for p in parts for q in p]
        assert sorted(ids) == sorted(q.id for q in qs) and len(set(ids)) == len(ids)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        for p in parts:  # back in the given order
            assert [q.id for q in p] == [q.id for q in qs if q in p]
        assert parts == [shard_questions(qs, i, k) for i in range(k)]  # deterministic
    assert [q.id for q in shard_questions(qs, 0, 3)] == [q.id for q in qs if q.id in sorted(x.id for x in qs)[::3]]
    first7 = select_questions(ds, EvalConfig(dataset=SPEC, limit=7))
    assert select_questions(ds, EvalConfig(dataset=SPEC, limit=7, shard="1/3")) == shard_questions(first7, 1, 3)
    strat = select_questions(ds, EvalConfig(dataset=SPEC, limit=4, stratified=True))
    assert select_questions(ds, EvalConfig(dataset=SPEC, limit=4, stratified=True, shard="0/2")) == shard_questions(
        strat, 0, 2
    )


def test_shard_is_selection_so_the_fingerprint_does_not_change():
    c = config()
    assert config_fingerprints(dataclasses.replace(c, shard="2/3")) == config_fingerprints(c)
    assert config_fingerprints(config(pipeline={"retrieval": {"dense_model": None, "n": 4}})) != config_fingerprints(c)


@pytest.mark.parametrize("bad", ["3/3", "1/0", "-1/2", "a/b", "1", "1/2/3", "", 3])
def test_bad_shards_are_refused_naming_the_field_and_the_flag(bad, capsys):
    with pytest.raises(ConfigError, match=r"EvalConfig\.shard=.*must be 'i/K'"):
        EvalConfig.from_dict({"shard": bad})
    if isinstance(bad, str):
        with pytest.raises(SystemExit) as e:
            eval_arguments(argparse.ArgumentParser()).parse_args(["--shard", bad])
        assert e.value.code == 2 and "--shard" in capsys.readouterr().err


def test_the_shard_flag_reaches_the_config():
    args = eval_arguments(argparse.ArgumentParser()).parse_args(["--shard", " 1 / 3", "--limit", "5"])
    assert config_from_args(args).shard == "1/3" and config_from_args(args).limit == 5


def test_three_shards_merge_into_the_unsharded_run_and_it_resumes_as_finished(tmp_path, shards):
    whole = tmp_path / "whole"
    s_whole = run(whole)
    sizes = [len(lines(d / "records.jsonl")) for d in shards]
    assert sorted(sizes) == [3, 3, 4]
    merged = tmp_path / "merged"
    s = merge_runs(shards, merged)
    got, want = lines(merged / "records.jsonl"), lines(whole / "records.jsonl")
    assert [json.loads(x)["question_id"] for x in got] == [json.loads(x)["question_id"] for x in want]
    assert [stable(json.loads(x)) for x in got] == [stable(json.loads(x)) for x in want]
    shard_lines = {line for d in shards for line in lines(d / "records.jsonl")}
    assert set(got) == shard_lines  # each line byte for byte as its shard wrote it
    assert [stable(json.loads(x)) for x in lines(merged / "windows.jsonl")] == [
        stable(json.loads(x)) for x in lines(whole / "windows.jsonl")
    ]
    on_disk = json.loads((merged / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(s)) and s["run_dir"] == str(merged)
    assert s["latency_s"]["total"]["n"] == 10 and s.pop("run_dir") != s_whole.pop("run_dir")
    assert stable(s) == stable(s_whole)
    assert s["counts"] == {"selected": 10, "recorded": 10, "ok": 10, "error": 0, "missing": 0}
    m, m_whole = (json.loads((d / "manifest.json").read_text()) for d in (merged, whole))
    assert m["status"] == "done" and m["config_sha256"] == m_whole["config_sha256"]
    assert m["dataset"] == m_whole["dataset"] and m["prompt_hashes"] == m_whole["prompt_hashes"]
    assert m["config"] == m_whole["config"] and m["config"]["shard"] is None
    prov = m["merged_from"]
    assert [p["shard"] for p in prov] == ["0/3", "1/3", "2/3"] and [p["questions"] for p in prov] == sizes
    assert [p["run_dir"] for p in prov] == [str(d.resolve()) for d in shards]
    assert all(len(p["run_ids"]) == 1 for p in prov) and m["runs"][-1]["merged_from"] == prov

    # lazymem eval with the unsharded config resumes the merged folder: nothing left to do, no model called
    answer = FakeBackend(lambda p, s: pytest.fail("a merged run redid a question"))
    again = run(merged, clients={"answer": answer})
    assert again["counts"]["ok"] == 10 and answer.calls == []
    m2 = json.loads((merged / "manifest.json").read_text())
    assert m2["runs"][-1]["questions_todo"] == 0 and m2["runs"][-1]["resumed_ok"] == 10
    assert lines(merged / "records.jsonl") == got

    # the same merge again is allowed (its manifest records it, even after a shard resumed with nothing to do);
    # another one into a folder with records is not
    run(shards[0], "0/3")
    assert merge_runs(shards, merged)["counts"]["ok"] == 10
    with pytest.raises(ConfigError, match="already holds records"):
        merge_runs(shards, whole)


def test_a_shard_may_hold_no_question(tmp_path):
    base = config(limit=2)
    dirs = [tmp_path / f"s{i}" for i in range(3)]
    for d, name in zip(dirs, shard_names(3)):
        run(d, name, base=base)
    assert [len(lines(d / "records.jsonl")) for d in dirs] == [1, 1, 0]
    s = merge_runs(dirs, tmp_path / "m")
    assert s["counts"]["ok"] == 2 and json.loads((tmp_path / "m" / "manifest.json").read_text())["config"]["limit"] == 2


def test_eval_and_merge_command_lines(tmp_path, monkeypatch, capsys):
    import yaml

    from lazymem.eval.command import run_from_args as eval_from_args

    monkeypatch.chdir(tmp_path)
    Path("recipe.yaml").write_text(yaml.safe_dump({"dataset": SPEC, "pipeline": PIPELINE, "llm_cache": False}))
    for name in shard_names(2):
        args = eval_arguments(argparse.ArgumentParser()).parse_args(
            ["recipe.yaml", "--shard", name, "--limit", "5", "--no-progress"]
        )
        assert eval_from_args(args, command=["lazymem", "eval"]) == 0
    dirs = [Path("runs/eval/recipe-shard0of2"), Path("runs/eval/recipe-shard1of2")]  # the default folders
    assert [len(lines(d / "records.jsonl")) for d in dirs] == [3, 2]
    capsys.readouterr()
    args = add_arguments(argparse.ArgumentParser()).parse_args([*map(str, dirs), "--out", "merged", "--json"])
    assert run_from_args(args) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["counts"]["ok"] == 5 and "recipe-shard1of2: 2 records" in out.err
    with pytest.raises(SystemExit):
        add_arguments(argparse.ArgumentParser()).parse_args([str(dirs[0])])  # --out is required


def refused(dirs, out, match, **kw) -> str:
    with pytest.raises(ConfigError, match=match) as e:
        merge_runs(dirs, out, **kw)
    assert not Path(out).exists()  # nothing written, not even the folder
    return str(e.value)


def test_shards_of_another_config_are_refused(tmp_path, shards):
    other = tmp_path / "other2"
    run(other, "2/3", base=config(pipeline={"retrieval": {"dense_model": None, "n": 4}}))
    msg = refused([*shards[:2], other], tmp_path / "m", "config_sha256 differs")
    assert str(other) in msg and str(shards[0]) in msg
    assert "config keys that differ: pipeline.retrieval.n: 3 / 4)" in msg
    limited = tmp_path / "limited2"
    run(limited, "2/3", base=config(limit=8))
    msg = refused([*shards[:2], limited], tmp_path / "m", r"EvalConfig\.limit differs")
    assert "8 in" in msg and str(limited) in msg


def test_shards_of_another_dataset_are_refused(tmp_path, shards):
    from lazymem.data import load_dataset

    ds = load_dataset(SPEC)
    changed = dataclasses.replace(ds, sha256="f" * 64)  # the same spec, other bytes
    other = tmp_path / "other2"
    run(other, "2/3", dataset=changed)
    msg = refused([*shards[:2], other], tmp_path / "m", "dataset sha256 differs")
    assert "ffffffffffff in" in msg and str(other) in msg
    refused(shards, tmp_path / "m", "the folders' records were made on", dataset=changed)


def test_shards_made_with_other_prompts_are_refused(tmp_path, shards, monkeypatch):
    """A shard run after a prompt changed (its manifest's prompt hashes differ) is not merged."""
    from lazymem import prompts

    real = prompts.prompt_hashes
    changed = {**real(), "answer_text": "e" * 64}
    monkeypatch.setattr(prompts, "prompt_hashes", lambda: changed)
    other = tmp_path / "other2"
    run(other, "2/3")
    monkeypatch.setattr(prompts, "prompt_hashes", real)
    assert json.loads((other / "manifest.json").read_text())["prompt_hashes"]["answer_text"] == "e" * 64
    msg = refused([*shards[:2], other], tmp_path / "m", "prompt hashes differs")
    assert "answer_text: eeeeeeeeeeee" in msg and str(other) in msg
    merge_runs(shards, tmp_path / "ok")  # the three shards of one prompt set still merge


def test_overlapping_and_missing_questions_are_refused(tmp_path, shards):
    copy = tmp_path / "copy0"
    shutil.copytree(shards[0], copy)
    msg = refused([*shards, copy], tmp_path / "m", "must be disjoint and complete")
    assert "in both" in msg and str(copy) in msg
    refused([shards[0], shards[0], shards[1], shards[2]], tmp_path / "m", "given more than once")
    msg = refused(shards[:2], tmp_path / "m", "in no folder")
    assert "shard(s) not given: ['2/3']" in msg
    whole = tmp_path / "whole"
    run(whole)
    refused([whole, shards[1]], tmp_path / "m", "in both")


def test_unfinished_shards_are_refused_with_the_reason(tmp_path, shards):
    with RunLock(shards[1]):  # a shard still running
        refused(shards, tmp_path / "m", "is still running")
    manifest = shards[2] / "manifest.json"
    m = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(dict(m, status="running")))  # killed outright: nobody holds its lock
    refused(shards, tmp_path / "m", "status 'running'.*it was killed")
    manifest.write_text(json.dumps(dict(m, status="interrupted")))
    refused(shards, tmp_path / "m", "status 'interrupted'")
    manifest.write_text(json.dumps(m))
    failing = tmp_path / "failing2"
    from lazymem.data import load_dataset

    victim = shard_questions(load_dataset(SPEC).questions, 2, 3)[0]
    answer = FakeBackend(lambda p, s: ConnectionError("down") if victim.text in str(p) else "fine")
    run(failing, "2/3", clients={"answer": answer})
    refused([*shards[:2], failing], tmp_path / "m", "status 'done_with_errors'")
    refused([*shards[:2], tmp_path / "nowhere"], tmp_path / "m", "is not a folder")
    assert merge_runs(shards, tmp_path / "m")["counts"]["ok"] == 10  # the shards themselves were left as they were
