"""Run a notebook once per grid point with papermill, one run folder per point, with a manifest.

Each point runs into ``papermill_runs/<notebook stem>/<run_id>/`` with

- ``<notebook stem>.ipynb``: the executed notebook (secret parameter values scrubbed),
- ``metrics.json``: written by the notebook's last cell to its ``metrics_path`` parameter,
- ``manifest.json``: parameters (secrets redacted), notebook sha256, git commit, versions,
  times, status, error.

The points go through the sweep engine (``lazymem.sweep``): a point whose manifest says ``"ok"``
for the same notebook content is skipped unless ``force``; any other point with earlier files (a
changed notebook, ``force``, a failed or cut-short run) has them set aside into
``<run_id>/previous-<time>/`` first, never deleted; a failing point is recorded and the others still
run. Grid files, parameters and run ids: ``lazymem.notebooks.params``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.files import sha256_file, write_json
from lazymem.notebooks.params import expand_grid, load_grid, notebook_parameters, project_root, resolve_notebook, run_id
from lazymem.runinfo import now
from lazymem.secrets import REDACTED, is_secret, looks_secret, redact

# Packages whose versions go into every manifest (those missing are recorded as None).
MANIFEST_PACKAGES = (
    "lazymem",
    "papermill",
    "nbformat",
    "nbclient",
    "ipykernel",
    "numpy",
    "pandas",
    "plotly",
    "kaleido",
    "torch",
    "transformers",
    "sentence-transformers",
    "rank-bm25",
    "bm25s",
    "trl",
)
METRICS_PARAM = "metrics_path"
MANIFEST_FILE, METRICS_FILE = "manifest.json", "metrics.json"  # a run folder's files (and the notebook)


@dataclass(frozen=True)
class RunResult:
    """What happened to one grid point."""

    run_id: str  # folder name under papermill_runs/<stem>/
    params: dict  # parameters injected (secrets redacted)
    status: str  # "ok", "failed" or "skipped" (an earlier ok run exists)
    run_dir: str  # the run folder
    metrics: dict | None = None  # metrics.json contents, when written
    error: str | None = None  # "ExceptionName: message" when failed
    duration_s: float = 0.0  # wall time of the execution (0 when skipped)
    notes: tuple[str, ...] = field(default=())  # e.g. why a previous ok run was not reused

    @property
    def ok(self) -> bool:
        """True unless the run failed (a skipped point had an ok run before)."""
        return self.status != "failed"


# --- provenance -------------------------------------------------------------------------------


def git_state(root: str | Path) -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout at ``root``."""

    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


# --- the runner ---------------------------------------------------------------------------------


def _secret_values(obj: Any) -> list[str]:
    """The values ``redact`` hides in a parameter tree (secret names, or values that look like
    credentials, at any depth), as text.

    >>> _secret_values({"api_key": "sk-1", "hf_token": None, "extra": {"client_secret": 7}, "w": 2,
    ...                 "judge_auth_header": "Bearer abcdef123456"})
    ['sk-1', '7', 'Bearer abcdef123456']
    """
    if isinstance(obj, Mapping):
        return [v for k, x in obj.items() for v in ([str(x)] if is_secret(k) and x is not None else _secret_values(x))]
    if isinstance(obj, (list, tuple)):
        return [v for x in obj for v in _secret_values(x)]
    return [obj] if looks_secret(obj) else []


def _scrub_notebook(path: Path, secrets: Sequence[str], dest: Path) -> None:
    """Copy an executed notebook to ``dest`` with every secret value replaced."""
    text = path.read_text(encoding="utf-8")
    for s in secrets:
        if len(s) >= 4:  # shorter values would also replace unrelated text
            text = text.replace(json.dumps(s)[1:-1], REDACTED)
    dest.write_text(text, encoding="utf-8")


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _execute(nb_path: Path, out_nb: Path, params: dict, kernel: str, cwd: Path) -> None:
    import logging

    import papermill as pm

    # papermill warns "Unable to parse line ..." for parameters holding "=" (dataset specs);
    # notebook_parameters already read them, so the warning would only mislead.
    logging.getLogger("papermill.translators").setLevel(logging.ERROR)

    secrets = _secret_values(params)
    if not secrets:
        pm.execute_notebook(
            str(nb_path), str(out_nb), parameters=params, kernel_name=kernel, progress_bar=False, cwd=str(cwd)
        )
        return
    # papermill saves the notebook (with the injected values) while it runs: keep that copy
    # in a private temp file and only the scrubbed one in the run folder.
    fd, tmp = tempfile.mkstemp(suffix=".ipynb", prefix="lazymem-run-")
    os.close(fd)
    try:
        pm.execute_notebook(str(nb_path), tmp, parameters=params, kernel_name=kernel, progress_bar=False, cwd=str(cwd))
    finally:
        if os.path.getsize(tmp):
            _scrub_notebook(Path(tmp), secrets, out_nb)
        os.unlink(tmp)


def _error_text(e: BaseException) -> str:
    ename = getattr(e, "ename", None)  # papermill's PapermillExecutionError
    if ename:
        return f"{ename}: {getattr(e, 'evalue', '')} (cell {getattr(e, 'exec_count', '?')})"
    return f"{type(e).__name__}: {e}"


def run_grid(
    notebook: str | None,
    grid: str | Path | Mapping | None = None,
    params: Mapping[str, Any] | None = None,
    out_root: str | Path = "papermill_runs",
    force: bool = False,
    kernel: str = "python3",
    progress: bool = True,
    executor: Any = None,
    command: Sequence[str] | None = None,
) -> list[RunResult]:
    """Execute a notebook once per grid point with papermill; returns one RunResult per point.

    Args:
        notebook: a path, a name in notebooks/ ("02_retrieval_windows") or a unique prefix ("02");
            None = the grid file's ``notebook`` key.
        grid: a grid YAML path or an already-loaded mapping (module docstring); None = one run.
        params: parameters fixed for every point (override the grid's base and values).
        out_root: root of the run folders (relative paths are taken from the current directory).
        force: rerun points that already have an ok manifest.
        kernel: Jupyter kernel name (notebooks are saved with "python3").
        progress: show a tqdm bar over the points.
        executor: where points run: None / "inline" (this process), "local" or "slurm" (one job per
            point, lazymem.jobs: a kind or a JobsConfig); jobs' logs and jobs.json in ``<out_root>/<stem>/jobs/``.
        command: the command line ``lazymem jobs`` offers to rerun failed points (default sys.argv).

    Raises:
        ConfigError: a parameter the notebook's ``parameters`` cell does not define
            (papermill would only warn, and a typo would silently run the default).
        FileNotFoundError: the notebook or grid file does not exist.

    Failures of single points do not raise: they are recorded in the manifest and the
    result (``status == "failed"``), and the remaining points still run.
    """
    import lazymem
    from lazymem.jobs import JobsConfig, Task
    from lazymem.sweep import Cell, Jobs, run_cells

    executor = JobsConfig.of(executor, "run_grid: executor")

    spec = load_grid(grid) if isinstance(grid, (str, Path)) else dict(grid or {})
    if notebook is None and not spec.get("notebook"):
        raise ConfigError("no notebook given and the grid names none (its 'notebook' key)")
    nb_path = resolve_notebook(notebook if notebook is not None else spec["notebook"])
    if notebook is not None and spec.get("notebook") and resolve_notebook(spec["notebook"]) != nb_path:
        raise ConfigError(f"the grid is for notebook {spec['notebook']!r}, not {nb_path.stem!r}")
    points = expand_grid(spec, params)
    declared = set(notebook_parameters(nb_path))
    unknown = sorted({k for p in points for k in p} - declared)
    if unknown:
        raise ConfigError(
            f"{nb_path.name}: unknown parameter(s) {unknown}; its parameters cell defines {sorted(declared)}"
        )
    if METRICS_PARAM not in declared:
        raise ConfigError(
            f"{nb_path.name}: the parameters cell must define {METRICS_PARAM!r} (where the last "
            "cell writes its metrics)"
        )
    varying = [k for k in (spec.get("grid") or {}) if k not in (params or {})]
    nb_sha = sha256_file(nb_path)
    root = project_root(nb_path.parent)
    from lazymem.eval import package_versions

    common = {
        "notebook": str(nb_path),
        "notebook_sha256": nb_sha,
        "kernel": kernel,
        "git": git_state(root),
        "lazymem_version": lazymem.__version__,
        "python": sys.version.split()[0],
        "packages": package_versions(MANIFEST_PACKAGES),
    }  # every point's manifest holds these
    out_base = Path(out_root) / nb_path.stem
    out_base.mkdir(parents=True, exist_ok=True)  # a bad out_root (inside a file, unwritable) stops here: OSError
    cells = []
    for point in points:
        rid = run_id(point, varying)
        cells.append(Cell((rid,), out_base / rid, point, results=(MANIFEST_FILE, METRICS_FILE, nb_path.name)))

    def check(cell: Cell) -> list[str] | None:
        old = _read_json(cell.folder / MANIFEST_FILE)
        if not old:  # files without their manifest are of unknown inputs: set aside, never taken for this run's
            return ["no readable manifest"] if any((cell.folder / n).exists() for n in cell.results) else None
        if old.get("status") != "ok":
            return [f"its last run is {old.get('status')}"]  # failures are retried
        if force:
            return ["force=True"]
        return [] if old.get("notebook_sha256") == nb_sha else ["the notebook changed since the ok run"]

    def run(cell: Cell, changes: tuple[str, ...]) -> dict:
        return _run_point(nb_path, cell.folder, cell.key[0], cell.spec, kernel, common)

    jobs = (
        None
        if executor.inline
        else Jobs(
            executor,
            out_base,
            tasks=lambda cell, changes: [
                Task(cell.key, cell.folder, _run_point, (nb_path, cell.folder, cell.key[0], cell.spec, kernel, common))
            ],
            command=tuple(command or (Path(sys.argv[0]).name, *sys.argv[1:])),
        )
    )
    outcomes = run_cells(
        cells,
        check=check,
        run=run,
        load=lambda cell: _read_json(cell.folder / METRICS_FILE) or {},
        catch=True,
        describe=_point_error,
        progress="bar" if progress else None,
        label=nb_path.stem,
        jobs=jobs,
    )
    results = []
    for o in outcomes:
        cell = o.cell
        shown, run_dir = redact(cell.spec), str(cell.folder)
        if o.status == "reused":
            results.append(
                RunResult(
                    cell.key[0],
                    shown,
                    "skipped",
                    run_dir,
                    _read_json(cell.folder / METRICS_FILE),
                    notes=("ok run exists; force=True reruns",),
                )
            )
            continue
        notes = (f"rerun: {'; '.join(o.changes)}",) if o.changes and o.changes[0] != "force=True" else ()
        manifest = _read_json(cell.folder / MANIFEST_FILE) or {}
        results.append(
            RunResult(
                cell.key[0],
                shown,
                "failed" if o.status == "failed" else "ok",
                run_dir,
                o.result if o.status != "failed" else _read_json(cell.folder / METRICS_FILE),
                o.error,
                manifest.get("duration_s") or o.duration_s,
                notes,
            )
        )
    return results


class PointFailed(Exception):
    """A grid point's notebook failed or wrote no metrics (its manifest says why)."""


def _point_error(e: BaseException) -> str:
    from lazymem.sweep import error_text

    return str(e) if isinstance(e, PointFailed) else error_text(e)


def _run_point(nb_path: Path, run_dir: Path, rid: str, point: dict, kernel: str, common: Mapping) -> dict:
    """Execute one point into ``run_dir`` with its manifest; returns its metrics, PointFailed when it fails."""
    run_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = (run_dir / METRICS_FILE).resolve()
    manifest = {
        "run_id": rid,
        "notebook": common["notebook"],
        "notebook_sha256": common["notebook_sha256"],
        "params": redact(point),
        **{k: common[k] for k in ("kernel", "git", "lazymem_version", "python", "packages")},
        "start": now(),
        "end": None,
        "duration_s": None,
        "status": "running",
        "error": None,
        "output_notebook": str(run_dir / nb_path.name),
        "metrics_path": str(metrics_path),
    }
    write_json(run_dir / MANIFEST_FILE, manifest, indent=2)
    t0 = time.perf_counter()
    error = None
    try:
        _execute(nb_path, run_dir / nb_path.name, {**point, METRICS_PARAM: str(metrics_path)}, kernel, nb_path.parent)
    except Exception as e:  # a failing point must not stop the grid; it is recorded below
        error = _error_text(e)
        manifest["traceback"] = traceback.format_exc(limit=3)[-4000:]
    duration = round(time.perf_counter() - t0, 3)
    metrics = _read_json(metrics_path)
    if error is None and metrics is None:
        error = f"the notebook wrote no metrics to {METRICS_PARAM}"
    manifest.update(end=now(), duration_s=duration, status="failed" if error else "ok", error=error)
    write_json(run_dir / MANIFEST_FILE, manifest, indent=2)
    if error:
        raise PointFailed(error)
    return metrics


def results_table(results: Sequence[RunResult]) -> str:
    """One line per run: status, id, duration, error (for the CLI).

    >>> print(results_table([RunResult("w=0-ab", {"w": 0}, "ok", "d", duration_s=1.5)]))
    ok       w=0-ab  1.5 s
    """
    width = max((len(r.run_id) for r in results), default=0)
    lines = []
    for r in results:
        line = f"{r.status:<8} {r.run_id:<{width}}  {r.duration_s:.1f} s"
        if r.error:
            line += f"  {r.error}"
        lines.append(line)
    return "\n".join(lines)
