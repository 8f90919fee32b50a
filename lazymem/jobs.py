"""Sweeps as jobs: where a sweep's cells run (``inline``, ``local`` processes, ``slurm``) and what became of them.

``JobsConfig`` is a sweep's executor (eval-table's and the window table's ``executor``, ``lazymem
notebooks run --executor``): ``inline`` runs each cell in the sweep's process, as always; ``local`` each
as a real process here (submitit's LocalExecutor), ``max_parallel`` at a time; ``slurm`` each as a Slurm
job (SlurmExecutor: partition, GPUs, time, memory, CPUs). A job is one cell (or shard) and writes only
its folder; the runs it calls resume, so a killed job's rerun redoes nothing finished. ``run_tasks``
submits and waits; ``<sweep output dir>/jobs/`` holds submitit's files (``logs/<job id>_0_log.out``) and
``jobs.json`` (per task: cell key, folder, job id, executor, submitted / ended, state). ``jobs_status``
reads it back; ``resubmit_command`` is the sweep's command with ``--set only=[...]`` (finished cells are
reused, so rerunning is resubmitting).

>>> JobsConfig.of("local").kind, JobsConfig.of({"kind": "slurm", "partition": "gpu"}).partition
('local', 'gpu')
>>> JobsConfig.of({"kind": "pbs"})
Traceback (most recent call last):
...
lazymem.errors.ConfigError: JobsConfig.kind: 'pbs' is not an executor (inline, local, slurm)
>>> resubmit_command(["lazymem", "eval-table", "--config", "t.yaml", "--set", "only=[a]"], ["b", "c"])
['lazymem', 'eval-table', '--config', 't.yaml', '--set', 'only=[b,c]']
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError, check_fields
from lazymem.files import write_json
from lazymem.runinfo import now
from lazymem.runtime import usable_cores

EXECUTORS = ("inline", "local", "slurm")
STATES = ("queued", "running", "done", "failed")
JOBS_DIR, INDEX_FILE, LOGS_DIR = "jobs", "jobs.json", "logs"  # <sweep output dir>/jobs/{jobs.json,logs/}
MISSING_SUBMITIT = "the local and slurm executors need submitit: pip install -e .[cluster]"


@dataclass(frozen=True)
class JobsConfig:
    """Where a sweep's cells run; the keys of a recipe's ``executor`` (a bare string names the kind)."""

    kind: str = "inline"  # inline (this process), local (processes here), slurm (cluster jobs)
    max_parallel: int = 2  # jobs in flight at once
    partition: str | None = None  # slurm: --partition
    gpus_per_job: int = 0  # slurm: --gpus-per-node; local: CUDA_VISIBLE_DEVICES of the first N GPUs
    time_min: int = 60  # the job's time limit (slurm --time; local: killed after it)
    mem_gb: float | None = None  # slurm: --mem
    cpus_per_job: int | None = None  # slurm: --cpus-per-task; local: cores a job is pinned to (default: an even share)
    setup: tuple[str, ...] = ()  # shell lines before the job starts (module load ..., source venv)
    slurm_extra: Mapping[str, Any] = field(default_factory=dict)  # more sbatch options, e.g. {account: x, qos: y}
    poll_s: float = 1.0  # how often the sweep looks at its jobs

    def __post_init__(self):
        def bad(name: str, why: str):
            raise ConfigError(f"JobsConfig.{name}: {getattr(self, name)!r} {why}")

        if self.kind not in EXECUTORS:
            bad("kind", f"is not an executor ({', '.join(EXECUTORS)})")
        for name, low in (("max_parallel", 1), ("gpus_per_job", 0), ("time_min", 1), ("cpus_per_job", 1)):
            v = getattr(self, name)
            if (v is not None or name != "cpus_per_job") and (type(v) is not int or v < low):
                bad(name, f"must be an integer >= {low}")
        if self.mem_gb is not None and (not isinstance(self.mem_gb, (int, float)) or self.mem_gb <= 0):
            bad("mem_gb", "must be a positive number of GB")
        if self.partition is not None and not (isinstance(self.partition, str) and self.partition):
            bad("partition", "must be a partition name")
        if not isinstance(self.slurm_extra, Mapping):
            bad("slurm_extra", "must be a mapping of sbatch options")
        object.__setattr__(self, "setup", (self.setup,) if isinstance(self.setup, str) else tuple(self.setup))

    @classmethod
    def of(cls, value: Any, where: str = "JobsConfig") -> JobsConfig:
        """A JobsConfig from a recipe value: None (inline), a kind, a mapping of fields, or one already."""
        if value is None or isinstance(value, cls):
            return value or cls()
        if isinstance(value, str):
            return cls(kind=value)
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected an executor kind ({', '.join(EXECUTORS)}) or a mapping of "
                              f"JobsConfig fields, got {type(value).__name__}")
        check_fields(cls, value, where)
        return cls(**value)

    @property
    def inline(self) -> bool:
        return self.kind == "inline"

    def slurm_parameters(self, name: str = "lazymem") -> dict:
        """The SlurmExecutor parameters (``_make_sbatch_string``'s names) of these settings."""
        p = {"job_name": name, "time": self.time_min, "nodes": 1, "ntasks_per_node": 1, "partition": self.partition,
             "gpus_per_node": self.gpus_per_job or None, "cpus_per_task": self.cpus_per_job,
             "mem": None if self.mem_gb is None else f"{int(self.mem_gb * 1024)}MB", "setup": list(self.setup) or None,
             "array_parallelism": self.max_parallel, **dict(self.slurm_extra)}
        return {k: v for k, v in p.items() if v is not None}


def _submitit():
    try:
        import submitit
    except ImportError:
        raise ConfigError(MISSING_SUBMITIT) from None
    return submitit


def sbatch_script(config: JobsConfig, folder: str | os.PathLike, name: str = "lazymem") -> str:
    """The sbatch script submitit writes for a job of ``config`` (its own generation; nothing submitted)."""
    from submitit.slurm.slurm import _make_sbatch_string

    _submitit()
    command = " ".join([sys.executable, "-u -m submitit.core._submit", str(Path(folder).absolute())])
    return _make_sbatch_string(command=command, folder=str(Path(folder).absolute()),
                               **config.slurm_parameters(name))


def make_executor(config: JobsConfig, folder: str | os.PathLike, name: str = "lazymem"):
    """The submitit executor for ``config`` writing its files into ``folder``."""
    submitit = _submitit()
    if config.kind == "local":
        ex = submitit.LocalExecutor(folder=str(folder))
        ex.update_parameters(timeout_min=config.time_min, gpus_per_node=config.gpus_per_job,
                             **({"setup": list(config.setup)} if config.setup else {}))
        return ex
    if config.kind == "slurm":
        try:
            ex = submitit.SlurmExecutor(folder=str(folder))
        except RuntimeError as e:  # no srun here
            raise ConfigError(f"JobsConfig.kind='slurm': {e} (run the sweep on a Slurm login node)") from None
        ex.update_parameters(**config.slurm_parameters(name))
        return ex
    raise ConfigError(f"JobsConfig.kind={config.kind!r}: inline sweeps run no jobs")


@dataclass(frozen=True)
class Task:
    """One job: ``fn(*args)`` run in a job process; ``folder`` is what it writes."""

    key: tuple[str, ...]  # the cell's key
    folder: Path
    fn: Callable
    args: tuple = ()
    name: str = ""  # the part of the cell (a shard, "1-of-3"); "" for a whole cell


class TaskFailed(Exception):
    """A job's task raised; the message is the sweep's description of the error."""


def core_slots(config: JobsConfig, cores: Sequence[int] | None = None) -> list[tuple[int, ...]] | None:
    """The cores each of a local sweep's ``max_parallel`` job slots is pinned to: ``cpus_per_job`` each
    (default: the usable cores divided evenly), disjoint while they fit, wrapping round where they do
    not; None for other executors (Slurm gives each job its own ``cpus_per_task``).

    >>> core_slots(JobsConfig(kind="local", max_parallel=2), range(8))
    [(0, 1, 2, 3), (4, 5, 6, 7)]
    >>> core_slots(JobsConfig(kind="local", max_parallel=3, cpus_per_job=2), range(4))
    [(0, 1), (2, 3), (0, 1)]
    """
    if config.kind != "local":
        return None
    cores = list(usable_cores() if cores is None else cores)
    per = min(len(cores), config.cpus_per_job or max(1, len(cores) // config.max_parallel))
    return [tuple(cores[(i * per + j) % len(cores)] for j in range(per)) for i in range(config.max_parallel)]


def pin_cores(cores: Sequence[int]) -> None:
    """Run this process (and the thread pools it starts: OpenMP, torch, llama.cpp) on ``cores`` only."""
    try:
        os.sched_setaffinity(0, set(cores))
    except (AttributeError, OSError):
        pass  # no affinity call here: the thread counts below still divide the machine
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(len(cores))
    if "torch" in sys.modules:  # imported while the task was unpickled: set its pool now
        sys.modules["torch"].set_num_threads(len(cores))


def run_task(fn: Callable, args: tuple, cwd: str, describe: Callable[[BaseException], str] | None,
             cores: Sequence[int] | None = None) -> Any:
    """What a job process runs: ``fn(*args)`` from the sweep's working directory (on ``cores`` only, where a
    local sweep divides the machine among its jobs), its start and end logged."""
    os.chdir(cwd)
    if cores:
        pin_cores(cores)
    t0 = time.perf_counter()
    print(f"[job] start pid={os.getpid()} host={os.uname().nodename} at {now()}"
          + (f" on cores {','.join(map(str, cores))}" if cores else ""), flush=True)
    try:
        out = fn(*args)
    except Exception as e:
        if describe is None:
            raise
        raise TaskFailed(describe(e)) from e
    print(f"[job] done in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


@dataclass
class Ended:
    """What came back from one task: its result, or the error text."""

    task: Task
    ok: bool
    result: Any = None
    error: str | None = None
    duration_s: float = 0.0
    job_id: str = ""


def _error_of(job, pickle_outcome: tuple | None) -> str:
    """A failed job's error: the task's own description (TaskFailed), else the trace's last line."""
    if pickle_outcome is None:
        return (f"job {job.job_id} ended without a result (killed, out of memory or past its time limit); "
                f"log: {job.paths.stdout}")
    trace = str(pickle_outcome[1]).rstrip()
    marker = f"{TaskFailed.__module__}.{TaskFailed.__name__}: "
    if marker in trace:
        return trace.rsplit(marker, 1)[1].split("\n\nThe above exception")[0].strip()
    return (trace.splitlines() or ["?"])[-1] + f" (job {job.job_id}; log {job.paths.stderr})"


def _outcome(job) -> tuple | None:
    """("success", result) or ("error", trace) from a job's result pickle, None when it has none."""
    import pickle

    try:
        with open(job.paths.result_pickle, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def read_index(out_dir: str | os.PathLike) -> dict:
    """``<out_dir>/jobs/jobs.json`` ({} when there is none)."""
    path = Path(out_dir) / JOBS_DIR / INDEX_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a readable jobs index ({e})") from None


def run_tasks(tasks: Sequence[Task], config: JobsConfig, out_dir: str | os.PathLike, *, label: str = "sweep",
              command: Sequence[str] = (), only_index: int | None = None,
              describe: Callable[[BaseException], str] | None = None, lines: bool = True) -> list[Ended]:
    """Submit every task as a job (at most ``config.max_parallel`` in flight), wait for them all, and
    keep ``<out_dir>/jobs/jobs.json`` current; one Ended per task, in order.

    ``command`` (the sweep's command line) and ``only_index`` (which part of a cell key its ``only``
    names) go into the index for ``resubmit_command``.
    """
    out_dir = Path(out_dir)
    logs = out_dir / JOBS_DIR / LOGS_DIR
    logs.mkdir(parents=True, exist_ok=True)
    executor = make_executor(config, logs, label)
    index = read_index(out_dir)
    entries = {(tuple(e["key"]), e.get("task", "")): e for e in index.get("jobs", [])}
    previous = list(index.get("previous", []))
    index = {"label": label, "command": list(command), "only_index": only_index, "executor": asdict(config),
             "cwd": os.getcwd()}

    def save():
        write_json(out_dir / JOBS_DIR / INDEX_FILE, {**index, "updated": now(), "jobs": list(entries.values()),
                                          "previous": previous[-200:]}, indent=1)

    queue, running, ended = list(enumerate(tasks)), {}, {}
    slots = core_slots(config)  # local: each job on its share of the cores, not every job on all of them
    free = list(range(config.max_parallel))
    while queue or running:
        while queue and len(running) < config.max_parallel:
            i, t = queue.pop(0)
            slot = free.pop(0)
            job = executor.submit(run_task, t.fn, t.args, os.getcwd(), describe, slots[slot] if slots else None)
            old = entries.pop((t.key, t.name), None)
            if old:
                previous.append(old)
            entries[(t.key, t.name)] = {"key": list(t.key), "task": t.name, "folder": str(t.folder),
                                        "job_id": str(job.job_id), "executor": config.kind, "submitted": now(),
                                        "ended": None, "state": "queued" if config.kind == "slurm" else "running",
                                        "log": str(job.paths.stdout), "error": None}
            running[i] = (t, job, time.perf_counter(), slot)
            if lines:
                print(f"[{label}] {' / '.join(t.key)}{' ' + t.name if t.name else ''}: job {job.job_id} "
                      f"({config.kind})", flush=True)
            save()
        time.sleep(config.poll_s if running else 0)
        for i, (t, job, t0, slot) in list(running.items()):
            if not job.done():
                if config.kind == "slurm" and job.state == "RUNNING":
                    entries[(t.key, t.name)]["state"] = "running"
                continue
            del running[i]
            free.append(slot)
            got = _outcome(job)
            ok = got is not None and got[0] == "success"
            ended[i] = Ended(t, ok, got[1] if ok else None, None if ok else _error_of(job, got),
                             round(time.perf_counter() - t0, 3), str(job.job_id))
            entries[(t.key, t.name)].update(ended=now(), state="done" if ok else "failed", error=ended[i].error)
            save()
    return [ended[i] for i in range(len(tasks))]

# --- what became of a sweep's jobs ------------------------------------------------------------------


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # someone else's process
        pass
    return True


def live_state(entry: Mapping, logs: Path) -> tuple[str, str | None]:
    """(state, error) of an index entry: its recorded end, else its result pickle, else the process
    (local) or Slurm's accounting (slurm) says whether it is still queued or running."""
    if entry.get("state") in ("done", "failed"):
        return entry["state"], entry.get("error")
    from types import SimpleNamespace

    submitit = _submitit()
    paths = submitit.core.utils.JobPaths(logs, entry["job_id"])
    job = SimpleNamespace(job_id=entry["job_id"], paths=paths)
    got = _outcome(job)
    if got is not None:
        return ("done", None) if got[0] == "success" else ("failed", _error_of(job, got))
    if entry.get("executor") == "local":
        return ("running", None) if _alive(entry["job_id"]) else ("failed", _error_of(job, None))
    try:
        state = submitit.SlurmJob(logs, entry["job_id"]).state
    except Exception:  # no sacct here: say what the index last knew
        return entry.get("state", "queued"), None
    state = state.split()[0].upper() if state else "UNKNOWN"
    return (("queued", None) if state in ("PENDING", "REQUEUED", "CONFIGURING", "UNKNOWN") else ("running", None)
            if state in ("RUNNING", "COMPLETING") else ("failed", f"slurm state {state}"))


def _count_lines(path: Path) -> int | None:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def _last_line(*paths: str | Path) -> str:
    """The last non-empty line (submitit's own lines left out) of the most recently written of ``paths``."""
    for p in sorted((p for p in map(Path, paths) if p.is_file()), key=lambda p: p.stat().st_mtime, reverse=True):
        text = p.read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
        rows = [x.strip() for x in text.splitlines() if x.strip() and not x.startswith("submitit ")]
        if rows:
            return rows[-1]
    return ""


def jobs_status(out_dir: str | os.PathLike, records: str = "records.jsonl") -> dict:
    """The sweep's jobs as rows (cell, task, job id, state, questions done, the log's last line) and
    the command that resubmits the failed ones (None when none failed)."""
    index = read_index(out_dir)
    if not index:
        raise ConfigError(f"{Path(out_dir) / JOBS_DIR / INDEX_FILE}: no jobs index: was the sweep run with "
                          "--executor local or slurm?")
    logs = Path(out_dir) / JOBS_DIR / LOGS_DIR
    rows = []
    for e in index.get("jobs", []):
        state, error = live_state(e, logs)
        out = Path(e["log"])
        rows.append({"cell": " / ".join(e["key"]), "task": e.get("task", ""), "job_id": e["job_id"], "state": state,
                     "questions": _count_lines(Path(e["folder"]) / records), "submitted": e.get("submitted"),
                     "ended": e.get("ended"), "error": error,
                     "log_tail": _last_line(out, out.with_name(out.name.replace("_log.out", "_log.err")))})
    failed = [e["key"] for e, r in zip(index.get("jobs", []), rows, strict=True) if r["state"] == "failed"]
    k = index.get("only_index")
    again = None
    if failed and index.get("command"):
        again = resubmit_command(index["command"], sorted({key[k] for key in failed}) if k is not None else None)
    return {"label": index.get("label"), "executor": (index.get("executor") or {}).get("kind"), "jobs": rows,
            "counts": {s: sum(r["state"] == s for r in rows) for s in STATES}, "resubmit": again}


def resubmit_command(command: Sequence[str], only: Sequence[str] | None) -> list[str]:
    """The sweep's command with ``--set only=[...]`` naming ``only`` (None: the command as it was; finished
    cells are reused, so rerunning is resubmitting). An earlier ``--set only=`` is replaced."""
    out, skip = [], False
    for i, a in enumerate(command):
        if skip:
            skip = False
            continue
        if only is not None and a == "--set" and i + 1 < len(command) and command[i + 1].startswith("only="):
            skip = True
            continue
        if only is not None and a.startswith("--set=only="):
            continue
        out.append(a)
    return out + (["--set", f"only=[{','.join(only)}]"] if only is not None else [])


def status_text(status: Mapping) -> str:
    """``lazymem jobs``' table: one line per job, then the counts and the resubmission command."""
    import shlex

    rows = status["jobs"]
    cells = [r["cell"] + (f" [{r['task']}]" if r["task"] else "") for r in rows]
    w = max([len("cell"), *map(len, cells)])
    jw = max([len("job"), *(len(r["job_id"]) for r in rows)])
    lines = [f"{'cell':<{w}}  {'job':<{jw}}  state     questions  log"]
    for c, r in zip(cells, rows, strict=True):
        q = "-" if r["questions"] is None else str(r["questions"])
        tail = r["error"] if r["state"] == "failed" and r["error"] else r["log_tail"]
        lines.append(f"{c:<{w}}  {r['job_id']:<{jw}}  {r['state']:<8}  {q:>9}  {tail[:100]}")
    lines.append(", ".join(f"{n} {s}" for s, n in status["counts"].items() if n) or "no jobs")
    if status["resubmit"]:
        lines.append("resubmit the failed ones: " + shlex.join(status["resubmit"]))
    return "\n".join(lines)


# --- the command line ------------------------------------------------------------------------------

FLAGS = {"executor": "kind", "max_parallel": "max_parallel", "partition": "partition",
         "gpus_per_job": "gpus_per_job", "time_min": "time_min", "mem_gb": "mem_gb", "cpus_per_job": "cpus_per_job"}


def config_from_args(args, recipe_value: Any = None, where: str = "executor") -> JobsConfig:
    """The recipe's executor settings with the flags given on the command line on top."""
    base = JobsConfig.of(recipe_value, where)
    given = {f: getattr(args, a) for a, f in FLAGS.items() if getattr(args, a, None) is not None}
    return replace(base, **given) if given else base
