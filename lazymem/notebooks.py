"""Run notebooks in batch with papermill, one run folder per parameter point; notebook helpers.

A grid file is YAML with optional sections:

    # configs/grid_02_radii.yaml
    notebook: 02_retrieval_windows   # optional: the notebook it is for (checked, or used when none is given)
    base:            # parameters every run gets (override the notebook's defaults)
      n: 50
    grid:            # each key lists values; runs are the cartesian product, in key order
      w: [0, 1, 2, 3]

``params`` given in code (or ``-p name=value`` on the command line) override ``base``
and fix a parameter for every point. Each point runs into
``papermill_runs/<notebook stem>/<run_id>/`` with

- ``<notebook stem>.ipynb``: the executed notebook (secret-looking parameters redacted),
- ``metrics.json``: written by the notebook's last cell to its ``metrics_path`` parameter,
- ``manifest.json``: parameters, notebook sha256, git commit, versions, times, status, error.

``run_id`` is the varying parameters, readable, plus a hash of all parameters:
``w=2-89130767``. A point whose manifest says ``"ok"`` for the same notebook content is
skipped unless ``force``.

>>> expand_grid({"base": {"n": 50}, "grid": {"w": [0, 1]}})
[{'n': 50, 'w': 0}, {'n': 50, 'w': 1}]
>>> run_id({"n": 50, "w": 2}, varying=["w"])
'w=2-89130767'
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from lazymem.errors import ConfigError

SECRET_WORDS = ("key", "token", "secret", "password")
REDACTED = "<redacted>"
# Packages whose versions go into every manifest (those missing are recorded as None).
MANIFEST_PACKAGES = ("lazymem", "papermill", "nbformat", "nbclient", "ipykernel", "numpy", "pandas", "plotly",
                     "kaleido", "torch", "transformers", "sentence-transformers", "rank-bm25", "bm25s", "trl")
METRICS_PARAM = "metrics_path"


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


# --- paths and parameters ---------------------------------------------------------------------

def project_root(start: str | Path | None = None) -> Path:
    """The lazymem checkout: the first folder upward from ``start`` (cwd) with a pyproject.toml
    naming lazymem, else the folder above the installed package, else ``start``.

    Notebooks chdir here so that relative paths (figures/, ../shared/data) mean the same
    in Jupyter (cwd = notebooks/), papermill and nbval.
    """
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        pp = d / "pyproject.toml"
        if pp.is_file() and 'name = "lazymem"' in pp.read_text(encoding="utf-8", errors="replace"):
            return d
    pkg_parent = Path(__file__).resolve().parent.parent
    return pkg_parent if (pkg_parent / "pyproject.toml").is_file() else here


def resolve_notebook(notebook: str | Path, root: str | Path | None = None) -> Path:
    """A notebook path from a path, a name ("02_retrieval_windows") or a unique prefix ("02").

    >>> resolve_notebook("02_retrieval_windows").name
    '02_retrieval_windows.ipynb'
    """
    p = Path(notebook)
    if p.suffix == ".ipynb" and p.is_file():
        return p.resolve()
    nb_dir = project_root(root) / "notebooks"
    exact = nb_dir / f"{p.stem if p.suffix == '.ipynb' else p.name}.ipynb"
    if exact.is_file():
        return exact
    matches = sorted(nb_dir.glob(f"{p.name}*.ipynb"))
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(m.stem for m in sorted(nb_dir.glob("*.ipynb"))) or "none"
    what = "is ambiguous" if matches else "matches no notebook"
    raise FileNotFoundError(f"notebook {str(notebook)!r} {what} in {nb_dir} (known: {known})")


def notebook_parameters(path: str | Path) -> dict[str, Any]:
    """Names and default values of the cell tagged ``parameters`` (values that are not
    literals come back as their source text).

    Parsed with ``ast``: papermill's own inspector skips any line with two "=", such as
    ``dataset = "synthetic:messages=400,seed=0"``.
    """
    import ast

    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", ())]
    if not cells:
        raise ConfigError(f"{Path(path).name}: no code cell is tagged 'parameters'")
    out: dict[str, Any] = {}
    for node in ast.parse(cells[0].source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name) and node.value is not None:
                try:
                    out[t.id] = ast.literal_eval(node.value)
                except ValueError:
                    out[t.id] = ast.get_source_segment(cells[0].source, node.value)
    return out


def is_secret(name: str) -> bool:
    """Whether a parameter name looks like a credential (never written to disk).

    >>> is_secret("openai_api_key"), is_secret("judge_token"), is_secret("w")
    (True, True, False)
    """
    low = name.lower()
    return any(word in low for word in SECRET_WORDS)


def redact(params: Mapping[str, Any]) -> dict:
    """Parameters with secret-looking values replaced by "<redacted>".

    >>> redact({"api_key": "sk-1", "w": 2})
    {'api_key': '<redacted>', 'w': 2}
    """
    return {k: (REDACTED if is_secret(k) else v) for k, v in params.items()}


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` from the command line, the value read as YAML (2 -> int, true -> bool).

    >>> parse_param("w=2"), parse_param("dataset=synthetic:messages=40"), parse_param("radii=[0, 1]")
    (('w', 2), ('dataset', 'synthetic:messages=40'), ('radii', [0, 1]))
    >>> parse_param("dense_model=None"), parse_param("png=False")
    (('dense_model', None), ('png', False))
    """
    import yaml

    name, sep, raw = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise ConfigError(f"parameter {text!r}: expected NAME=VALUE with NAME a Python identifier")
    if raw.strip() == "None":  # Python's spelling, as in the notebooks' parameter cells (YAML says null)
        return name.strip(), None
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return name.strip(), value


def load_grid(path: str | Path) -> dict:
    """Read and check a grid YAML file (see the module docstring for the format)."""
    import yaml

    with open(path, encoding="utf-8") as f:
        spec = yaml.safe_load(f) or {}
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: a grid file is a mapping with 'base' and/or 'grid', got {type(spec).__name__}")
    unknown = sorted(set(spec) - {"base", "grid", "notebook", "description"})
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {unknown}; allowed: base, grid, notebook, description")
    for section in ("base", "grid"):
        if not isinstance(spec.get(section) or {}, dict):
            raise ConfigError(f"{path}: '{section}' must be a mapping of parameter names")
    return spec


def expand_grid(spec: Mapping | None, params: Mapping[str, Any] | None = None) -> list[dict]:
    """Parameter dicts for every grid point: base, then the point's values, then ``params``.

    A grid value that is not a list counts as a one-value list. No grid gives one point.

    >>> expand_grid({"grid": {"a": [1, 2], "b": ["x", "y"]}}, {"c": 0})
    [{'a': 1, 'b': 'x', 'c': 0}, {'a': 1, 'b': 'y', 'c': 0}, {'a': 2, 'b': 'x', 'c': 0}, {'a': 2, 'b': 'y', 'c': 0}]
    """
    spec = spec or {}
    base = dict(spec.get("base") or {})
    grid = {k: (v if isinstance(v, list) else [v]) for k, v in (spec.get("grid") or {}).items()}
    for k, values in grid.items():
        if not values:
            raise ConfigError(f"grid parameter {k!r} has no values")
    fixed = dict(params or {})
    points = []
    for combo in itertools.product(*grid.values()):
        point = {**base, **dict(zip(grid, combo))}
        point.update(fixed)
        points.append(point)
    return points


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))


def run_id(params: Mapping[str, Any], varying: Sequence[str] = ()) -> str:
    """Readable id of a grid point: the varying parameters, then 8 hex of a hash of all.

    Secret parameters are hashed as "<redacted>", so changing a key reuses a run.

    >>> run_id({"w": 2}), run_id({"dataset": "a/b c.json"}, ["dataset"])
    ('default-41f7abad', 'dataset=a_b_c.json-48c23ca8')
    """
    digest = hashlib.sha256(_canonical(redact(params)).encode()).hexdigest()[:8]
    shown = [k for k in varying if k in params and not is_secret(k)]
    readable = "-".join(f"{k}={params[k]}" for k in shown) if shown else "default"
    readable = re.sub(r"[^A-Za-z0-9._=+-]+", "_", readable)[:80].strip("_") or "default"
    return f"{readable}-{digest}"


# --- provenance -------------------------------------------------------------------------------

def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- notebook-side helpers ----------------------------------------------------------------------

def record_metrics(metrics: Mapping[str, Any], path: str | Path | None) -> str | None:
    """Write a notebook's metrics as JSON to ``path`` (the ``metrics_path`` parameter); no-op
    when it is empty. Returns the path written, or None."""
    if not path:
        return None
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(metrics, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return str(p)


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return "-" if v is None else str(v)


def metrics_table(metrics: Mapping[str, Any], digits: int = 3) -> str:
    """A small, stable text table of (flattened) metrics, for the notebooks' last cell.

    Floats are rounded so the printed table is identical across runs (nbval compares it).

    >>> print(metrics_table({"all_at_k": {"0": 0.5, "1": 0.75}, "n_questions": 12}))
    all_at_k.0   0.500
    all_at_k.1   0.750
    n_questions  12
    """
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            flat[prefix] = value

    walk("", metrics)
    width = max((len(k) for k in flat), default=0)
    return "\n".join(f"{k:<{width}}  {_fmt(v, digits)}" for k, v in flat.items())


# --- the window explorer's data -------------------------------------------------------------------

EXTRACTIVE_METHODS = {"extractive": "verbatim", "extractive-key-span": "key_span"}
WINDOW_RECORDS_FILE = "windows.jsonl"  # a run's per-window records, one JSON object per line


def explorer_methods(runs_root: str | Path = "runs") -> list[str]:
    """Methods the explorer can show: the training-free extractive processors, then every
    run folder under ``runs_root`` holding a ``windows.jsonl`` (as ``run:<folder>``)."""
    runs = sorted(p.parent for p in Path(runs_root).glob(f"**/{WINDOW_RECORDS_FILE}"))
    return [*EXTRACTIVE_METHODS, *(f"run:{p}" for p in runs)]


def load_window_records(run_dir: str | Path, question_id: str) -> list[dict]:
    """One question's records from a run's ``windows.jsonl``.

    Each line: ``{"question_id", "positions", "hits", "gold", "verdict": {"ok", "reason"},
    "decisions": [{"pos", "op", "content"}]}``, optionally with the question's
    ``memory``, ``answer`` and ``judge``; lines are kept in file order (window order).
    """
    out = []
    with open(Path(run_dir) / WINDOW_RECORDS_FILE, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                if rec.get("question_id") == question_id:
                    out.append(rec)
    return out


def explore_question(dataset: Any, question_id: str = "", method: str = "extractive", retriever: Any = None,
                     window: Any = None, threshold: float = 0.25) -> dict:
    """Everything the window explorer shows for one question, as plain records.

    ``method`` "extractive"/"extractive-key-span" retrieves the pool, builds the windows and
    runs the training-free ExtractiveProcessor; "run:<folder>" reads a run's windows.jsonl.
    An empty ``question_id`` picks the first question with gold evidence.

    Returns:
        ``{"question", "history", "records", "memory", "answer", "judge", "stats"}``.
    """
    from lazymem.construct import ExtractiveConfig, ExtractiveProcessor, construct_memory
    from lazymem.retrieve import Retriever
    from lazymem.viz import window_records
    from lazymem.retrieve import WindowConfig, build_windows

    if question_id:
        question = dataset.question(question_id)
    else:
        question = next((q for q in dataset.questions if q.evidence), dataset.questions[0])
    history = dataset.history(question)
    view = {"question": question, "history": history, "memory": None, "answer": None, "judge": None, "stats": None}
    if method.startswith("run:"):
        recs = load_window_records(method[4:], question.id)
        extra = next((r for r in recs if "memory" in r or "answer" in r), {})
        view.update(records=window_records(recs), memory=extra.get("memory"), answer=extra.get("answer"),
                    judge=extra.get("judge"))
        return view
    if method not in EXTRACTIVE_METHODS:
        raise ConfigError(f"explorer method {method!r}: use one of {list(EXTRACTIVE_METHODS)} or 'run:<folder>'")
    retriever = retriever or Retriever()
    pool = retriever.retrieve(history, question.text)
    windows = build_windows(history, pool.positions, window or WindowConfig(), gold=question.evidence)
    processor = ExtractiveProcessor(ExtractiveConfig(threshold=threshold, mode=EXTRACTIVE_METHODS[method]))
    c = construct_memory(processor, question.text, question.query_time, windows, history, question.evidence)
    view.update(records=window_records(windows, gate=c.verdicts), memory=c.memory, stats=c.stats)
    return view


def question_options(dataset: Any, width: int = 70) -> list[tuple[str, str]]:
    """``(label, question id)`` pairs for a dropdown: id, type abbreviation and text."""
    out = []
    for q in dataset.questions:
        label = f"{q.id} [{q.abbrev}] {q.text}"
        out.append((label if len(label) <= width else label[: width - 3] + "...", q.id))
    return out


def explorer_metrics(view: Mapping[str, Any]) -> dict:
    """Counts of one explorer view, from its records (so runs and live processors compare).

    >>> explorer_metrics({"question": None, "records": [{"positions": [1, 2], "gold": [2], "verdict": {"ok": True},
    ...     "decisions": [{"pos": 1, "op": "DROP", "content": ""}, {"pos": 2, "op": "KEEP", "content": "x"}]}]})
    {'question': None, 'windows': 1, 'gate_ok': 1, 'messages': 2, 'kept': 1, 'gold_in_windows': 1, 'gold_kept': 1}
    """
    records = view["records"]
    kept = {d["pos"] for r in records if (r.get("verdict") or {}).get("ok", True)
            for d in r.get("decisions") or () if d["op"] == "KEEP"}
    gold = {p for r in records for p in r.get("gold") or ()}
    q = view.get("question")
    return {
        "question": getattr(q, "id", q),
        "windows": len(records),
        "gate_ok": sum(1 for r in records if (r.get("verdict") or {}).get("ok", False)),
        "messages": len({p for r in records for p in r["positions"]}),
        "kept": len(kept),
        "gold_in_windows": len(gold),
        "gold_kept": len(gold & kept),
    }


# --- the runner ---------------------------------------------------------------------------------

def _scrub_notebook(path: Path, secrets: Mapping[str, Any], dest: Path) -> None:
    """Copy an executed notebook to ``dest`` with every secret value replaced."""
    text = path.read_text(encoding="utf-8")
    for value in secrets.values():
        s = str(value)
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

    secrets = {k: v for k, v in params.items() if is_secret(k)}
    if not secrets:
        pm.execute_notebook(str(nb_path), str(out_nb), parameters=params, kernel_name=kernel,
                            progress_bar=False, cwd=str(cwd))
        return
    # papermill saves the notebook (with the injected values) while it runs: keep that copy
    # in a private temp file and only the scrubbed one in the run folder.
    fd, tmp = tempfile.mkstemp(suffix=".ipynb", prefix="lazymem-run-")
    os.close(fd)
    try:
        pm.execute_notebook(str(nb_path), tmp, parameters=params, kernel_name=kernel, progress_bar=False,
                            cwd=str(cwd))
    finally:
        if os.path.getsize(tmp):
            _scrub_notebook(Path(tmp), secrets, out_nb)
        os.unlink(tmp)


def _error_text(e: BaseException) -> str:
    ename = getattr(e, "ename", None)  # papermill's PapermillExecutionError
    if ename:
        return f"{ename}: {getattr(e, 'evalue', '')} (cell {getattr(e, 'exec_count', '?')})"
    return f"{type(e).__name__}: {e}"


def run_grid(notebook: str | None, grid: str | Path | Mapping | None = None, params: Mapping[str, Any] | None = None,
             out_root: str | Path = "papermill_runs", force: bool = False, kernel: str = "python3",
             progress: bool = True) -> list[RunResult]:
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

    Raises:
        ConfigError: a parameter the notebook's ``parameters`` cell does not define
            (papermill would only warn, and a typo would silently run the default).
        FileNotFoundError: the notebook or grid file does not exist.

    Failures of single points do not raise: they are recorded in the manifest and the
    result (``status == "failed"``), and the remaining points still run.
    """
    from tqdm.auto import tqdm

    import lazymem

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
        raise ConfigError(f"{nb_path.name}: unknown parameter(s) {unknown}; its parameters cell defines "
                          f"{sorted(declared)}")
    if METRICS_PARAM not in declared:
        raise ConfigError(f"{nb_path.name}: the parameters cell must define {METRICS_PARAM!r} (where the last "
                          "cell writes its metrics)")
    varying = [k for k in (spec.get("grid") or {}) if k not in (params or {})]
    nb_sha = sha256_file(nb_path)
    root = project_root(nb_path.parent)
    git = git_state(root)
    from lazymem.eval import package_versions

    versions = package_versions(MANIFEST_PACKAGES)
    out_base = Path(out_root) / nb_path.stem
    results: list[RunResult] = []
    bar = tqdm(points, desc=f"{nb_path.stem}", unit="run", disable=not progress)
    for point in bar:
        rid = run_id(point, varying)
        bar.set_postfix_str(rid)
        run_dir = out_base / rid
        manifest_path = run_dir / "manifest.json"
        metrics_path = (run_dir / "metrics.json").resolve()
        shown = redact(point)
        notes: list[str] = []
        old = _read_json(manifest_path)
        if old and old.get("status") == "ok" and not force:
            if old.get("notebook_sha256") == nb_sha:
                results.append(RunResult(rid, shown, "skipped", str(run_dir), _read_json(metrics_path),
                                         notes=("ok run exists; force=True reruns",)))
                continue
            notes.append("rerun: the notebook changed since the ok run")
        run_dir.mkdir(parents=True, exist_ok=True)
        metrics_path.unlink(missing_ok=True)  # a stale file must not pass for this run's metrics
        manifest = {
            "run_id": rid, "notebook": str(nb_path), "notebook_sha256": nb_sha, "params": shown,
            "kernel": kernel, "git": git, "lazymem_version": lazymem.__version__, "python": sys.version.split()[0],
            "packages": versions, "start": _now(), "end": None, "duration_s": None, "status": "running",
            "error": None, "output_notebook": str(run_dir / nb_path.name), "metrics_path": str(metrics_path),
        }
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        error = None
        try:
            _execute(nb_path, run_dir / nb_path.name, {**point, METRICS_PARAM: str(metrics_path)}, kernel,
                     nb_path.parent)
        except Exception as e:  # a failing point must not stop the grid; it is recorded below
            error = _error_text(e)
            manifest["traceback"] = traceback.format_exc(limit=3)[-4000:]
        duration = round(time.perf_counter() - t0, 3)
        metrics = _read_json(metrics_path)
        if error is None and metrics is None:
            error = f"the notebook wrote no metrics to {METRICS_PARAM}"
        status = "failed" if error else "ok"
        manifest.update(end=_now(), duration_s=duration, status=status, error=error)
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        results.append(RunResult(rid, shown, status, str(run_dir), metrics, error, duration, tuple(notes)))
    bar.close()
    return results


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


def eval_overview(summaries: Mapping[str, Mapping]) -> tuple[list[dict], list[dict]]:
    """Flatten evaluation summaries (method -> summary.json) for the evaluation notebook.

    Returns ``(by_type_rows, method_rows)``: per (method, type) the score (judge accuracy
    when a judge ran, else LoCoMo F1, else the answer-F1 proxy) and per method the headline
    numbers (score, Gate Fmt., gold-keep recall, memory tokens, latency medians).
    """
    by_type, per_method = [], []
    for method, s in summaries.items():
        if s.get("accuracy"):
            score, groups, kind = s["accuracy"]["overall"], s["accuracy"]["by_type"], "judge accuracy"
        elif s.get("locomo_f1"):
            score, groups, kind = s["locomo_f1"]["overall"], s["locomo_f1"]["by_category"], "LoCoMo F1"
        elif s.get("proxy"):
            score, groups, kind = s["proxy"]["answer_f1"], s["proxy"]["answer_f1_by_type"], "answer F1 (proxy)"
        else:
            score, groups, kind = None, {}, "none"
        for t, g in groups.items():
            by_type.append({"method": method, "type": t, "score": g["mean"], "n": g["n"]})
        c, lat = s.get("construction") or {}, s.get("latency_s") or {}
        per_method.append({
            "method": method, "score": score, "score_kind": kind, "questions_ok": s["counts"]["ok"],
            "errors": s["counts"]["error"], "gate_fmt": c.get("gate_fmt"), "gold_keep_recall": c.get("gold_keep_recall"),
            "memory_tokens": (s.get("memory_tokens") or {}).get("mean"),
            **{f"{stage}_median_s": (lat.get(stage) or {}).get("median") for stage in ("retrieval", "processing", "answer")},
        })
    return by_type, per_method
