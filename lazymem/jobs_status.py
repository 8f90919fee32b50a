"""What became of a sweep's jobs: ``<sweep output dir>/jobs/jobs.json`` read back (``lazymem jobs``).

``jobs_status`` gives one row per job (cell, task, job id, state, questions done, the log's last line): a job's
recorded end, else its result pickle, else the live process (local) or Slurm's accounting says its state.
``resubmit_command`` is the sweep's command with ``--set only=[...]`` naming the failed cells (finished cells
are reused, so rerunning is resubmitting); ``status_text`` is the table ``lazymem jobs`` prints.

>>> resubmit_command(["lazymem", "eval-table", "--config", "t.yaml", "--set", "only=[a]"], ["b", "c"])
['lazymem', 'eval-table', '--config', 't.yaml', '--set', 'only=[b,c]']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lazymem.errors import ConfigError
from lazymem.jobs import INDEX_FILE, JOBS_DIR, LOGS_DIR, STATES, job_error, job_outcome, load_submitit, read_index


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

    submitit = load_submitit()
    paths = submitit.core.utils.JobPaths(logs, entry["job_id"])
    job = SimpleNamespace(job_id=entry["job_id"], paths=paths)
    got = job_outcome(job)
    if got is not None:
        return ("done", None) if got[0] == "success" else ("failed", job_error(job, got))
    if entry.get("executor") == "local":
        return ("running", None) if _alive(entry["job_id"]) else ("failed", job_error(job, None))
    try:
        state = submitit.SlurmJob(logs, entry["job_id"]).state
    except Exception:  # no sacct here: say what the index last knew
        return entry.get("state", "queued"), None
    state = state.split()[0].upper() if state else "UNKNOWN"
    return (
        ("queued", None)
        if state in ("PENDING", "REQUEUED", "CONFIGURING", "UNKNOWN")
        else ("running", None)
        if state in ("RUNNING", "COMPLETING")
        else ("failed", f"slurm state {state}")
    )


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
        raise ConfigError(
            f"{Path(out_dir) / JOBS_DIR / INDEX_FILE}: no jobs index: was the sweep run with --executor local or slurm?"
        )
    logs = Path(out_dir) / JOBS_DIR / LOGS_DIR
    rows = []
    for e in index.get("jobs") or []:
        state, error = live_state(e, logs)
        out = Path(e["log"])
        rows.append(
            {
                "cell": " / ".join(e["key"]),
                "task": e.get("task") or "",
                "job_id": e["job_id"],
                "state": state,
                "questions": _count_lines(Path(e["folder"]) / records),
                "submitted": e.get("submitted"),
                "ended": e.get("ended"),
                "error": error,
                "log_tail": _last_line(out, out.with_name(out.name.replace("_log.out", "_log.err"))),
            }
        )
    failed = [e["key"] for e, r in zip(index.get("jobs") or [], rows, strict=True) if r["state"] == "failed"]
    k = index.get("only_index")
    again = None
    if failed and index.get("command"):
        again = resubmit_command(index["command"], sorted({key[k] for key in failed}) if k is not None else None)
    return {
        "label": index.get("label"),
        "executor": (index.get("executor") or {}).get("kind"),
        "jobs": rows,
        "counts": {s: sum(r["state"] == s for r in rows) for s in STATES},
        "resubmit": again,
    }


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
