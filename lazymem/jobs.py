"""Sweeps as jobs: where a sweep's cells run (``inline``, ``local`` processes, ``slurm``) and what became of them.

``JobsConfig`` is a sweep's executor (eval-table's and the window table's ``executor``, ``lazymem
notebooks run --executor``): ``inline`` runs each cell in the sweep's process, as always; ``local`` each
as a real process here (submitit's LocalExecutor), ``max_parallel`` at a time; ``slurm`` each as a Slurm
job (SlurmExecutor: partition, GPUs, time, memory, CPUs). A job is one cell (or shard) and writes only
its folder; the runs it calls resume, so a killed job's rerun redoes nothing finished. ``run_tasks``
submits and waits; ``<sweep output dir>/jobs/`` holds submitit's files (``logs/<job id>_0_log.out``) and
``jobs.json`` (per task: cell key, folder, job id, executor, submitted / ended, state);
``lazymem.jobs_status`` reads it back (``lazymem jobs``).

>>> JobsConfig.of("local").kind, JobsConfig.of({"kind": "slurm", "partition": "gpu"}).partition
('local', 'gpu')
>>> JobsConfig.of({"kind": "pbs"})
Traceback (most recent call last):
...
lazymem.errors.ConfigError: JobsConfig.kind: 'pbs' is not an executor (inline, local, slurm)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError, LoadError, check_fields
from lazymem.files import write_json
from lazymem.runinfo import now
from lazymem.runtime import usable_cores
from lazymem.secrets import redact_command

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
            raise ConfigError(
                f"{where}: expected an executor kind ({', '.join(EXECUTORS)}) or a mapping of "
                f"JobsConfig fields, got {type(value).__name__}"
            )
        check_fields(cls, value, where)
        return cls(**value)

    @property
    def inline(self) -> bool:
        return self.kind == "inline"

    def slurm_parameters(self, name: str = "lazymem") -> dict:
        """The SlurmExecutor parameters (``_make_sbatch_string``'s names) of these settings."""
        p = {
            "job_name": name,
            "time": self.time_min,
            "nodes": 1,
            "ntasks_per_node": 1,
            "partition": self.partition,
            "gpus_per_node": self.gpus_per_job or None,
            "cpus_per_task": self.cpus_per_job,
            "mem": None if self.mem_gb is None else f"{int(self.mem_gb * 1024)}MB",
            "setup": list(self.setup) or None,
            "array_parallelism": self.max_parallel,
            **dict(self.slurm_extra),
        }
        return {k: v for k, v in p.items() if v is not None}


def load_submitit():
    """The submitit module; a ConfigError saying how to install it when it is missing."""
    try:
        import submitit
    except ImportError:
        raise ConfigError(MISSING_SUBMITIT) from None
    return submitit


def sbatch_script(config: JobsConfig, folder: str | os.PathLike, name: str = "lazymem") -> str:
    """The sbatch script submitit writes for a job of ``config`` (its own generation; nothing submitted)."""
    from submitit.slurm.slurm import _make_sbatch_string

    load_submitit()
    command = " ".join([sys.executable, "-u -m submitit.core._submit", str(Path(folder).absolute())])
    return _make_sbatch_string(command=command, folder=str(Path(folder).absolute()), **config.slurm_parameters(name))


def make_executor(config: JobsConfig, folder: str | os.PathLike, name: str = "lazymem"):
    """The submitit executor for ``config`` writing its files into ``folder``."""
    submitit = load_submitit()
    if config.kind == "local":
        ex = submitit.LocalExecutor(folder=str(folder))
        ex.update_parameters(
            timeout_min=config.time_min,
            gpus_per_node=config.gpus_per_job,
            **({"setup": list(config.setup)} if config.setup else {}),
        )
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


def run_task(
    fn: Callable,
    args: tuple,
    cwd: str,
    describe: Callable[[BaseException], str] | None,
    cores: Sequence[int] | None = None,
) -> Any:
    """What a job process runs: ``fn(*args)`` from the sweep's working directory (on ``cores`` only, where a
    local sweep divides the machine among its jobs), its start and end logged."""
    os.chdir(cwd)
    if cores:
        pin_cores(cores)
    t0 = time.perf_counter()
    print(
        f"[job] start pid={os.getpid()} host={os.uname().nodename} at {now()}"
        + (f" on cores {','.join(map(str, cores))}" if cores else ""),
        flush=True,
    )
    try:
        out = fn(*args)
    except Exception as e:
        if describe is None:
            raise
        raise TaskFailed(describe(e)) from e
    print(f"[job] done in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def seal_task(fn: Callable, args: tuple, describe: Callable | None, folder: Path) -> Path:
    """Pickle a task into a new file of `folder` readable by its owner only (0600, in a 0700 folder): the job
    reads it from there, so its config's secrets (an API key, a URL password) are never in submitit's
    pickles or logs; ``run_tasks`` deletes the folder when its jobs have ended."""
    try:
        import cloudpickle as pickler  # submitit's own pickler: closures and lambdas too
    except ImportError:  # pragma: no cover - submitit depends on it
        import pickle as pickler

    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(suffix=".pkl", dir=folder)  # created 0600
    with os.fdopen(fd, "wb") as f:
        pickler.dump((fn, args, describe), f)
    return Path(path)


def run_sealed(path: str, cwd: str, cores: Sequence[int] | None = None) -> Any:
    """What a job process runs: the task ``seal_task`` wrote to `path`, through ``run_task``."""
    import pickle

    with open(path, "rb") as f:
        fn, args, describe = pickle.load(f)
    return run_task(fn, args, cwd, describe, cores)


@dataclass
class Ended:
    """What came back from one task: its result, or the error text."""

    task: Task
    ok: bool
    result: Any = None
    error: str | None = None
    duration_s: float = 0.0
    job_id: str = ""


def job_error(job, pickle_outcome: tuple | None) -> str:
    """A failed job's error: the task's own description (TaskFailed), else the trace's last line."""
    if pickle_outcome is None:
        return (
            f"job {job.job_id} ended without a result (killed, out of memory or past its time limit); "
            f"log: {job.paths.stdout}"
        )
    trace = str(pickle_outcome[1]).rstrip()
    marker = f"{TaskFailed.__module__}.{TaskFailed.__name__}: "
    if marker in trace:
        return trace.rsplit(marker, 1)[1].split("\n\nThe above exception")[0].strip()
    return (trace.splitlines() or ["?"])[-1] + f" (job {job.job_id}; log {job.paths.stderr})"


def job_outcome(job) -> tuple | None:
    """("success", result) or ("error", trace) from a job's result pickle, None when it has none."""
    import pickle

    try:
        with open(job.paths.result_pickle, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


INDEX_FIX = "it is not a jobs index lazymem wrote (edited or damaged): restore it, or delete it and rerun the sweep"
# the fields of a job entry: (name, expected types, what they hold); None allowed where marked
_ENTRY_FIELDS = (
    ("job_id", (str,), False),
    ("task", (str,), False),
    ("folder", (str,), False),
    ("executor", (str,), False),
    ("log", (str,), False),
    ("state", (str,), False),
    ("submitted", (str,), True),
    ("ended", (str,), True),
    ("error", (str,), True),
)


def check_index(index: Any, path: str | os.PathLike) -> dict:
    """`index` (a jobs.json's content) when it has the shape ``run_tasks`` writes, else a LoadError naming the
    file, the job entry and the field: an object whose ``jobs`` (and ``previous``) are lists of entries with a
    ``key`` (a list of strings), string ``task``, ``folder``, ``job_id``, ``executor``, ``log`` and ``state``;
    ``command`` a list of strings; ``only_index`` null or an index into every job's key.

    >>> check_index({"jobs": [{"key": ["a"], "job_id": 3}]}, "jobs.json")
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: jobs.json: jobs[0], field jobs[0].job_id: a number, expected a string; it is \
not a jobs index lazymem wrote (edited or damaged): restore it, or delete it and rerun the sweep
    """
    from lazymem.errors import json_kind

    p = str(path)

    def bad(record: str | None, field: str | None, value: Any, expected: str) -> LoadError:
        return LoadError(p, record, field, f"{json_kind(value)}, expected {expected}; {INDEX_FIX}")

    if not isinstance(index, dict):
        raise bad(None, None, index, "an object (a sweep's jobs index)")
    for name in ("jobs", "previous"):
        if not isinstance(index.get(name, []), list):
            raise bad(None, name, index[name], "a list of job entries")
    command = index.get("command", [])
    if command is not None and not (isinstance(command, list) and all(isinstance(a, str) for a in command)):
        raise bad(None, "command", command, "a list of strings (the sweep's command line)")
    if index.get("executor") is not None and not isinstance(index["executor"], dict):
        raise bad(None, "executor", index["executor"], "an object (the executor's settings)")
    if index.get("label") is not None and not isinstance(index["label"], str):
        raise bad(None, "label", index["label"], "a string")
    for name in ("jobs", "previous"):
        for i, e in enumerate(index.get(name) or ()):
            _check_entry(e, f"{name}[{i}]", bad)
    k = index.get("only_index")
    if k is not None:
        if type(k) is not int:
            raise bad(None, "only_index", k, "null or an integer (which part of a cell key `only` names)")
        for i, e in enumerate(index.get("jobs") or ()):
            if not 0 <= k < len(e["key"]):
                raise LoadError(
                    p, f"jobs[{i}]", "only_index", f"{k} is not an index into its key {e['key']}; {INDEX_FIX}"
                )
    return index


def _check_entry(e: Any, where: str, bad) -> None:
    """Raise `bad(...)` unless `e` is a job entry as ``run_tasks`` writes it."""
    if not isinstance(e, dict):
        raise bad(where, where, e, "an object (a job: key, task, folder, job_id, log, state)")
    key = e.get("key")
    if not (isinstance(key, list) and key and all(isinstance(k, str) for k in key)):
        raise bad(where, f"{where}.key", key, "a non-empty list of strings (the cell's key)")
    for name, types, nullable in _ENTRY_FIELDS:
        v = e.get(name)
        if v is None and (nullable or name == "task"):
            continue
        if not isinstance(v, types):
            raise bad(where, f"{where}.{name}", v, "a string" + (" or null" if nullable else ""))


def read_index(out_dir: str | os.PathLike) -> dict:
    """``<out_dir>/jobs/jobs.json`` ({} when there is none), checked by ``check_index`` (a LoadError naming
    the file, the job entry and the field when it is not JSON or not of the shape ``run_tasks`` writes)."""
    path = Path(out_dir) / JOBS_DIR / INDEX_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as e:
        raise LoadError(str(path), None, None, f"not UTF-8 text ({e.reason}); {INDEX_FIX}") from None
    try:
        index = json.loads(text)
    except ValueError as e:
        raise LoadError(str(path), None, None, f"not valid JSON ({e}); {INDEX_FIX}") from None
    return check_index(index, path)


def run_tasks(
    tasks: Sequence[Task],
    config: JobsConfig,
    out_dir: str | os.PathLike,
    *,
    label: str = "sweep",
    command: Sequence[str] = (),
    only_index: int | None = None,
    describe: Callable[[BaseException], str] | None = None,
    lines: bool = True,
) -> list[Ended]:
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
    entries = {(tuple(e["key"]), e.get("task") or ""): e for e in index.get("jobs") or []}
    previous = list(index.get("previous") or [])
    index = {
        "label": label,
        "command": redact_command(command),  # a key given with --set, a URL password: never on disk
        "only_index": only_index,
        "executor": asdict(config),
        "cwd": os.getcwd(),
    }

    def save():
        write_json(
            out_dir / JOBS_DIR / INDEX_FILE,
            {**index, "updated": now(), "jobs": list(entries.values()), "previous": previous[-200:]},
            indent=1,
        )

    private = Path(tempfile.mkdtemp(prefix=".tasks-", dir=out_dir / JOBS_DIR))  # 0700: the sealed tasks
    try:
        return _run_jobs(tasks, config, executor, private, (entries, previous, save), describe, label, lines)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _run_jobs(tasks, config, executor, private, index, describe, label, lines) -> list[Ended]:
    """``run_tasks``' loop: keep at most ``max_parallel`` jobs in flight until every task has ended;
    ``index`` is (entries, previous, save) of the jobs index."""
    entries, previous, save = index
    queue, running, ended = list(enumerate(tasks)), {}, {}
    slots = core_slots(config)  # local: each job on its share of the cores, not every job on all of them
    free = list(range(config.max_parallel))
    while queue or running:
        while queue and len(running) < config.max_parallel:
            i, t = queue.pop(0)
            slot = free.pop(0)
            sealed = str(seal_task(t.fn, t.args, describe, private))
            job = executor.submit(run_sealed, sealed, os.getcwd(), slots[slot] if slots else None)
            old = entries.pop((t.key, t.name), None)
            if old:
                previous.append(old)
            entries[(t.key, t.name)] = {
                "key": list(t.key),
                "task": t.name,
                "folder": str(t.folder),
                "job_id": str(job.job_id),
                "executor": config.kind,
                "submitted": now(),
                "ended": None,
                "state": "queued" if config.kind == "slurm" else "running",
                "log": str(job.paths.stdout),
                "error": None,
            }
            running[i] = (t, job, time.perf_counter(), slot)
            if lines:
                print(
                    f"[{label}] {' / '.join(t.key)}{' ' + t.name if t.name else ''}: job {job.job_id} ({config.kind})",
                    flush=True,
                )
            save()
        time.sleep(config.poll_s if running else 0)
        for i, (t, job, t0, slot) in list(running.items()):
            if not job.done():
                if config.kind == "slurm" and job.state == "RUNNING":
                    entries[(t.key, t.name)]["state"] = "running"
                continue
            del running[i]
            free.append(slot)
            got = job_outcome(job)
            ok = got is not None and got[0] == "success"
            ended[i] = Ended(
                t,
                ok,
                got[1] if ok else None,
                None if ok else job_error(job, got),
                round(time.perf_counter() - t0, 3),
                str(job.job_id),
            )
            entries[(t.key, t.name)].update(ended=now(), state="done" if ok else "failed", error=ended[i].error)
            save()
    return [ended[i] for i in range(len(tasks))]


# --- the command line ------------------------------------------------------------------------------

FLAGS = {
    "executor": "kind",
    "max_parallel": "max_parallel",
    "partition": "partition",
    "gpus_per_job": "gpus_per_job",
    "time_min": "time_min",
    "mem_gb": "mem_gb",
    "cpus_per_job": "cpus_per_job",
}


def config_from_args(args, recipe_value: Any = None, where: str = "executor") -> JobsConfig:
    """The recipe's executor settings with the flags given on the command line on top."""
    base = JobsConfig.of(recipe_value, where)
    given = {f: getattr(args, a) for a, f in FLAGS.items() if getattr(args, a, None) is not None}
    return replace(base, **given) if given else base
