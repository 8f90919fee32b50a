"""lazymem.jobs: sweeps as jobs with submitit's real LocalExecutor (real processes), `lazymem jobs`, Slurm scripts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fakerun import PIPELINE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.cli import main
from lazymem.errors import ConfigError
from lazymem.jobs import JobsConfig, make_executor, read_index, sbatch_script
from lazymem.jobs_status import jobs_status
from lazymem.sweep import Cell, Jobs, JobsFailedError, run_cells

TESTS = Path(__file__).resolve().parent
SYNTH = "synthetic:messages=60,seed=1,histories=1,questions=6"
VARYING = {"run_id", "recorded_at", "timings", "latency_s", "cached"}  # what differs between two runs of a cell


@pytest.fixture(autouse=True)
def _importable_tests(monkeypatch):
    """Jobs unpickle this module's functions: the job processes import from tests/ as pytest does."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))


def toy_run(cell: Cell, changes: tuple[str, ...]) -> str:
    """A toy cell's run: its spec and the process id into out.txt; 'boom' raises."""
    if cell.spec == "boom":
        raise ValueError(f"cell {cell.key[0]} broke")
    cell.folder.mkdir(parents=True, exist_ok=True)
    (cell.folder / "out.txt").write_text(f"{cell.spec} {os.getpid()}")
    return cell.spec


def toy_check(cell: Cell) -> list[str] | None:
    p = cell.folder / "out.txt"
    return None if not p.exists() else [] if p.read_text().split()[0] == cell.spec else ["spec changed"]


def test_cells_run_as_real_local_processes_two_at_a_time_and_are_reused(tmp_path):
    cells = [Cell((k,), tmp_path / k, v) for k, v in {"a": "1", "b": "boom", "c": "3"}.items()]
    jobs = Jobs(JobsConfig("local", max_parallel=2, poll_s=0.2), tmp_path, command=("lazymem", "toy"))
    load = lambda c: (c.folder / "out.txt").read_text().split()[0]  # noqa: E731
    out = run_cells(cells, check=toy_check, run=toy_run, load=load, catch=True, progress=None, jobs=jobs)
    assert [(o.status, o.result) for o in out] == [("ran", "1"), ("failed", None), ("ran", "3")]
    assert out[1].error == "ValueError: cell b broke" and out[1].mark() == {"failed": "ValueError: cell b broke"}
    pids = {int((tmp_path / k / "out.txt").read_text().split()[1]) for k in "ac"}
    assert len(pids) == 2 and os.getpid() not in pids  # each cell its own process
    index = read_index(tmp_path)
    assert [(e["key"], e["state"], e["executor"]) for e in index["jobs"]] == [
        (["a"], "done", "local"),
        (["b"], "failed", "local"),
        (["c"], "done", "local"),
    ]
    assert all(e["submitted"] <= e["ended"] and Path(e["log"]).is_file() for e in index["jobs"])
    # again: the finished cells are read back, only the failed one is a job again; without catch it raises
    with pytest.raises(JobsFailedError, match=r"1 cell\(s\) failed as jobs .*b: ValueError: cell b broke"):
        run_cells(cells, check=toy_check, run=toy_run, load=load, progress=None, jobs=jobs)
    again = read_index(tmp_path)
    assert [e["job_id"] for e in again["jobs"][:2]] == [index["jobs"][0]["job_id"], index["jobs"][2]["job_id"]]
    assert again["previous"][0]["job_id"] == index["jobs"][1]["job_id"]  # the earlier try stays on record


def where_i_run(tag: str) -> dict:
    """A job's view of its cores: the affinity mask and the thread count it was given."""
    return {"tag": tag, "cores": sorted(os.sched_getaffinity(0)), "omp": os.environ.get("OMP_NUM_THREADS")}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity call on this platform")
def test_a_local_sweep_divides_the_cores_among_the_jobs_it_runs_at_once(tmp_path):
    from lazymem.jobs import Task, core_slots, run_tasks
    from lazymem.runtime import usable_cores

    config = JobsConfig("local", max_parallel=2, poll_s=0.2)
    slots = core_slots(config)
    cores = usable_cores()
    assert len(slots) == 2 and all(len(s) == max(1, len(cores) // 2) and set(s) <= set(cores) for s in slots)
    if len(cores) >= 2:
        assert not set(slots[0]) & set(slots[1])  # disjoint while they fit
    tasks = [Task((k,), tmp_path / k, where_i_run, (k,)) for k in "abc"]
    ended = run_tasks(tasks, config, tmp_path, lines=False)
    got = [e.result for e in ended]
    assert all(e.ok for e in ended) and [g["tag"] for g in got] == ["a", "b", "c"]
    assert all(tuple(g["cores"]) in slots and g["omp"] == str(len(g["cores"])) for g in got)
    assert got[0]["cores"] != got[1]["cores"] or len(cores) < 2  # the two first jobs ran side by side, apart
    assert core_slots(JobsConfig("slurm")) is None and core_slots(JobsConfig("inline")) is None


def _records(path: Path) -> list[dict]:
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in VARYING}
        return [clean(v) for v in x] if isinstance(x, list) else x

    return [clean(json.loads(line)) for line in path.read_text().splitlines()]


def _table(out: Path) -> dict:
    """A table.json less processing_s (a latency: the one column that differs between two runs)."""
    table = json.loads((out / "table.json").read_text())
    return {
        s: {r: {k: v for k, v in c.items() if k != "processing_s"} for r, c in rows.items()}
        for s, rows in table.items()
    }


def _table_recipe(tmp_path: Path, rows: dict, limit: int = 4, pipeline: dict = PIPELINE) -> Path:
    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump({"dataset": SYNTH, "limit": limit, "judge": "none", "count_tokens": False, "pipeline": pipeline})
    )
    recipe = tmp_path / "table.yaml"
    recipe.write_text(
        yaml.safe_dump({"base": str(base), "sets": {"syn": {}}, "rows": rows, "output_dir": str(tmp_path / "inline")})
    )
    return recipe


ROWS = {"rag3": {"pipeline.retrieval.n": 3}, "oracle": {"pipeline.method": "oracle_turn"}}


def test_eval_table_as_local_jobs_gives_the_inline_records_and_lazymem_jobs_says_so(tmp_path, capsys):
    recipe = _table_recipe(tmp_path, ROWS)
    assert main(["eval-table", "--config", str(recipe), "--no-progress", "--json"]) == 0
    out = tmp_path / "local"
    assert (
        main(
            [
                "eval-table",
                "--config",
                str(recipe),
                "--no-progress",
                "--json",
                "--set",
                f"output_dir={out}",
                "--executor",
                "local",
                "--max-parallel",
                "2",
            ]
        )
        == 0
    )
    capsys.readouterr()
    for row in ROWS:
        assert _records(out / "syn" / row / "records.jsonl") == _records(
            tmp_path / "inline" / "syn" / row / "records.jsonl"
        )
    assert _table(out) == _table(tmp_path / "inline")
    assert main(["jobs", str(out)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["cell", "job", "state", "questions", "log"]
    assert [line.split()[:5:4] for line in text[1:3]] == [["syn", "done"], ["syn", "done"]]
    assert all(" 4  [job] done in " in line for line in text[1:3]) and text[3] == "2 done"
    # a second sweep: every cell finished, no job submitted
    jobs_before = read_index(out)["jobs"]
    assert (
        main(
            [
                "eval-table",
                "--config",
                str(recipe),
                "--no-progress",
                "--json",
                "--set",
                f"output_dir={out}",
                "--executor",
                "local",
            ]
        )
        == 0
    )
    assert read_index(out)["jobs"] == jobs_before


def test_sharded_cells_merge_into_the_inline_records(tmp_path, capsys):
    rows = {"rag3": ROWS["rag3"]}
    recipe = _table_recipe(tmp_path, rows, limit=5)
    assert main(["eval-table", "--config", str(recipe), "--no-progress", "--json"]) == 0
    out = tmp_path / "sharded"
    assert (
        main(
            [
                "eval-table",
                "--config",
                str(recipe),
                "--no-progress",
                "--json",
                "--set",
                f"output_dir={out}",
                "--executor",
                "local",
                "--shards",
                "3",
            ]
        )
        == 0
    )
    cell = out / "syn" / "rag3"
    assert _records(cell / "records.jsonl") == _records(tmp_path / "inline" / "syn" / "rag3" / "records.jsonl")
    assert sorted(p.name for p in (cell / "shards").iterdir()) == ["0-of-3", "1-of-3", "2-of-3"]
    assert [
        len((cell / "shards" / s / "records.jsonl").read_text().splitlines()) for s in ("0-of-3", "1-of-3", "2-of-3")
    ] == [2, 2, 1]
    assert [e["task"] for e in read_index(out)["jobs"]] == ["0-of-3", "1-of-3", "2-of-3"]
    manifest = json.loads((cell / "manifest.json").read_text())
    assert [m["shard"] for m in manifest["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert _table(out) == _table(tmp_path / "inline")


def _slow_answer(body: dict) -> str:
    time.sleep(1.0)
    return "an answer"


def _controller_and_task(pid: int) -> list[int]:
    """A local job's processes: submitit's controller (the job id) and the task it started."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [pid, *(int(c) for c in (children.read_text().split() if children.exists() else []))]


@pytest.mark.slow
def test_a_job_killed_mid_run_is_resubmitted_and_redoes_no_finished_question(tmp_path):
    from servers import ChatServer

    srv = ChatServer(reply=_slow_answer)
    with srv as url:
        answer = {"backend": "openai", "model": "m", "base_url": url, "max_retries": 0}
        recipe = _table_recipe(tmp_path, {"rag3": ROWS["rag3"]}, limit=5, pipeline={**PIPELINE, "answer": answer})
        out = tmp_path / "killed"
        cmd = [
            sys.executable,
            "-m",
            "lazymem.cli",
            "eval-table",
            "--config",
            str(recipe),
            "--no-progress",
            "--json",
            "--set",
            f"output_dir={out}",
            "--executor",
            "local",
        ]
        sweep = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        records = out / "syn" / "rag3" / "records.jsonl"
        deadline = time.time() + 120
        while not (records.exists() and len(records.read_text().splitlines()) >= 2) and time.time() < deadline:
            assert sweep.poll() is None, sweep.communicate()
            time.sleep(0.2)
        (job,) = read_index(out)["jobs"]
        for pid in reversed(_controller_and_task(int(job["job_id"]))):
            os.kill(pid, signal.SIGKILL)
        _, err = sweep.communicate(timeout=120)
        assert sweep.returncode == 1, err  # the cell failed as a job: the table says so, exit 1
        before = records.read_text().splitlines()
        assert 2 <= len(before) < 5
        status = jobs_status(out)
        assert status["jobs"][0]["state"] == "failed" and "ended without a result" in status["jobs"][0]["error"]
        assert status["jobs"][0]["questions"] == len(before)
        assert status["resubmit"][-2:] == ["--set", "only=[rag3]"]
        again = subprocess.run(
            [sys.executable, "-m", "lazymem.cli", *status["resubmit"][1:]], capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr
        after = records.read_text().splitlines()
    assert after[: len(before)] == before  # the finished questions kept as they were, not redone
    rows = [json.loads(line) for line in after]
    assert len({r["question_id"] for r in rows}) == 5 and all(r["attempt"] == 1 for r in rows)
    assert len({r["run_id"] for r in rows[: len(before)]}) == 1 and rows[-1]["run_id"] != rows[0]["run_id"]
    assert len(srv.requests) <= 6  # five questions, one of them perhaps cut off by the kill
    assert jobs_status(out)["counts"]["done"] == 1


@pytest.mark.slow
@pytest.mark.notebooks
def test_notebook_grid_points_as_local_jobs(tmp_path):
    from test_notebooks_runner import write_notebook

    from lazymem.notebooks import run_grid

    tiny = write_notebook(tmp_path / "tiny.ipynb")
    results = run_grid(
        str(tiny),
        {"grid": {"fail": [True, False]}},
        out_root=tmp_path / "runs",
        progress=False,
        executor="local",
        command=["lazymem", "notebooks", "run", str(tiny)],
    )
    failed, ok = results
    assert failed.status == "failed" and "ValueError: boom" in failed.error and ok.metrics == {"w": 0, "sq": 0}
    status = jobs_status(tmp_path / "runs" / "tiny")
    assert status["counts"] == {"queued": 0, "running": 0, "done": 1, "failed": 1}
    assert status["resubmit"] == ["lazymem", "notebooks", "run", str(tiny)]  # failed points rerun, ok ones reused


SLURM = JobsConfig(
    "slurm",
    partition="gpu-a100",
    gpus_per_job=2,
    time_min=240,
    mem_gb=64,
    cpus_per_job=8,
    setup=("source .venv/bin/activate",),
    slurm_extra={"account": "lab"},
)


def test_the_sbatch_script_submitit_writes_names_partition_gpus_and_time(tmp_path):
    script = sbatch_script(SLURM, tmp_path / "logs", name="eval-table")
    lines = script.splitlines()
    for flag in (
        "--partition=gpu-a100",
        "--gpus-per-node=2",
        "--time=240",
        "--mem=65536MB",
        "--cpus-per-task=8",
        "--job-name=eval-table",
        "--account=lab",
        "--nodes=1",
    ):
        assert f"#SBATCH {flag}" in lines, flag
    assert "source .venv/bin/activate" in lines and "submitit.core._submit" in script
    assert str(tmp_path / "logs" / "%j_0_log.out") in script
    if shutil.which("srun") is None:
        with pytest.raises(ConfigError, match="slurm"):
            make_executor(SLURM, tmp_path / "logs")


@pytest.mark.network
@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs a Slurm cluster (sbatch)")
def test_a_real_slurm_submission(tmp_path):  # pragma: no cover - no cluster here
    cells = [Cell(("a",), tmp_path / "a", "1")]
    out = run_cells(
        cells,
        check=toy_check,
        run=toy_run,
        progress=None,
        jobs=Jobs(JobsConfig("slurm", time_min=5, partition=os.environ.get("SLURM_PARTITION")), tmp_path),
    )
    assert out[0].status == "ran" and read_index(tmp_path)["jobs"][0]["state"] == "done"


def test_executor_settings_are_checked_and_flags_override_the_recipe(tmp_path):
    from lazymem.cli import build_parser
    from lazymem.eval.table import EvalTableConfig
    from lazymem.jobs import config_from_args

    with pytest.raises(ConfigError, match=r"JobsConfig.max_parallel: 0 must be an integer >= 1"):
        JobsConfig("local", max_parallel=0)
    with pytest.raises(ConfigError, match=r"EvalTableConfig.executor: unknown"):
        EvalTableConfig(base="b.yaml", sets={"s": {}}, rows={"r": {}}, executor={"kind": "local", "gpus": 1})
    with pytest.raises(ConfigError, match=r"EvalTableConfig.shards=2: shards are jobs"):
        EvalTableConfig(base="b.yaml", sets={"s": {}}, rows={"r": {}}, shards=2)
    args = build_parser().parse_args(["eval-table", "--config", "t.yaml", "--max-parallel", "4", "--partition", "p"])
    cfg = config_from_args(args, {"kind": "slurm", "time_min": 30})
    assert (cfg.kind, cfg.max_parallel, cfg.partition, cfg.time_min) == ("slurm", 4, "p", 30)
    assert config_from_args(build_parser().parse_args(["eval-table", "--config", "t.yaml"]), None).inline
    with pytest.raises(ConfigError, match="no jobs index"):
        jobs_status(tmp_path)
