"""Notebook paths and parameters, grid files and run ids for the papermill runner.

A grid file is YAML with optional sections:

    # configs/grids/02_radii.yaml
    notebook: 02_retrieval_windows   # optional: the notebook it is for (checked, or used when none is given)
    base:            # parameters every run gets (override the notebook's defaults)
      n: 50
    grid:            # each key lists values; runs are the cartesian product, in key order
      w: [0, 1, 2, 3]

``params`` given in code (or ``-p name=value`` on the command line) override ``base``
and fix a parameter for every point. ``run_id`` is the varying parameters, readable, plus
a hash of all parameters (secrets hashed as "<redacted>"): ``w=2-89130767``.

>>> expand_grid({"base": {"n": 50}, "grid": {"w": [0, 1]}})
[{'n': 50, 'w': 0}, {'n': 50, 'w': 1}]
>>> run_id({"n": 50, "w": 2}, varying=["w"])
'w=2-89130767'
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.secrets import is_secret, redact


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
    pkg_parent = Path(__file__).resolve().parents[2]  # lazymem/notebooks/params.py -> checkout
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
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for t in targets:
            if isinstance(t, ast.Name) and node.value is not None:
                try:
                    out[t.id] = ast.literal_eval(node.value)
                except ValueError:
                    out[t.id] = ast.get_source_segment(cells[0].source, node.value)
    return out


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` from the command line, the value read as YAML (2 -> int, true -> bool).

    >>> parse_param("w=2"), parse_param("dataset=synthetic:messages=40"), parse_param("radii=[0, 1]")
    (('w', 2), ('dataset', 'synthetic:messages=40'), ('radii', [0, 1]))
    >>> parse_param("dense_model=None"), parse_param("png=False")
    (('dense_model', None), ('png', False))
    """
    from lazymem.yamlio import load_yaml

    name, sep, raw = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise ConfigError(f"parameter {text!r}: expected NAME=VALUE with NAME a Python identifier")
    if raw.strip() == "None":  # Python's spelling, as in the notebooks' parameter cells (YAML says null)
        return name.strip(), None
    try:
        value = load_yaml(raw, f"parameter {name.strip()}") if raw.strip() else ""
    except ConfigError:  # not YAML: the text as it is
        value = raw
    return name.strip(), value


def load_grid(path: str | Path) -> dict:
    """Read and check a grid YAML file (see the module docstring for the format)."""
    from lazymem.yamlio import read_mapping

    spec = read_mapping(path, what="grid", allow_empty=True)
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
