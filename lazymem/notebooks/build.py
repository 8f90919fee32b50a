"""Build notebooks/NN_*.ipynb from their sources, notebooks/src/NN_*.py (jupytext percent format).

    lazymem notebooks build                 # every notebook: write, execute, keep checked outputs
    lazymem notebooks build 02 09_ablations  # some (a name or a unique prefix)
    lazymem notebooks build --no-execute    # write the cells only (outputs cleared)

A source is an ordinary Python file: ``# %% [markdown]`` cells are comments, a code cell's tags
go on its marker (``# %% tags=["parameters"]``), and it is linted like the package. The
``.ipynb`` is generated from it and never edited by hand (tests/test_notebook_sources.py
checks that its cells equal the source's). Outputs are committed only for the cells marked
``# NBVAL_CHECK_OUTPUT``: the builder executes each notebook (from notebooks/, kernel python3,
offline) and copies those cells' outputs into the written file, so ``pytest --nbval-lax
notebooks/`` has something to compare and a notebook's diff stays readable.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError, int_in
from lazymem.notebooks.params import project_root

CHECK = "# NBVAL_CHECK_OUTPUT"  # the first line of a cell whose outputs are stored and compared by nbval
SOURCE_GLOB = "[0-9][0-9]_*.py"  # notebooks/src/NN_name.py
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def source_dir(root: str | Path | None = None) -> Path:
    """notebooks/src of the checkout (``project_root``)."""
    return project_root(root) / "notebooks" / "src"


def source_names(root: str | Path | None = None) -> list[str]:
    """The notebooks that have a source, in order ("00_quickstart", "01_data", ...)."""
    return sorted(p.stem for p in source_dir(root).glob(SOURCE_GLOB))


def resolve_names(names: Sequence[str] | None, root: str | Path | None = None) -> list[str]:
    """Source names from names or unique prefixes ("02" -> "02_retrieval_windows"); None = all.

    >>> resolve_names(["02", "09_ablations"])
    ['02_retrieval_windows', '09_ablations']
    """
    known = source_names(root)
    if not names:
        return known
    out = []
    for name in names:
        stem = Path(name).stem if name.endswith((".py", ".ipynb")) else name
        matches = [k for k in known if k == stem] or [k for k in known if k.startswith(stem)]
        if len(matches) != 1:
            what = "is ambiguous" if matches else "matches no source"
            raise ConfigError(f"notebook {name!r} {what} in {source_dir(root)} (known: {', '.join(known) or 'none'})")
        out.append(matches[0])
    return out


def read_source(path: str | Path) -> Any:
    """The notebook a source describes: jupytext's cells (source and tags only), stable cell ids
    ("09-03" = notebook 09, cell 3: regenerated files stay diff-free) and the python3 kernel."""
    import jupytext
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    path = Path(path)
    try:
        parsed = jupytext.read(path, fmt="py:percent")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the notebook source ({e})") from None
    cells = []
    for i, c in enumerate(parsed.cells):
        if c.cell_type not in ("code", "markdown"):
            raise ConfigError(f"{path}: cell {i} is a {c.cell_type} cell; only code and markdown are built")
        cell = (new_code_cell if c.cell_type == "code" else new_markdown_cell)(c.source)
        if c.metadata.get("tags"):
            cell.metadata["tags"] = list(c.metadata["tags"])
        cell["id"] = f"{path.stem[:2]}-{i:02d}"
        cells.append(cell)
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def is_checked(source: str) -> bool:
    """Whether a code cell's outputs are compared by nbval (a line ``# NBVAL_CHECK_OUTPUT``, as nbval reads it).

    >>> is_checked("# NBVAL_CHECK_OUTPUT\\nprint(1)"), is_checked("print('# NBVAL_CHECK_OUTPUT')")
    (True, False)
    """
    return any(line.strip() == CHECK for line in source.splitlines())


def coalesce_streams(outputs: list) -> list:
    """Consecutive stream outputs of one stream merged (the kernel may flush a print in pieces),
    so the stored outputs do not depend on flush timing.

    >>> coalesce_streams([{"output_type": "stream", "name": "stdout", "text": "a"},
    ...                   {"output_type": "stream", "name": "stdout", "text": "b\\n"}])
    [{'output_type': 'stream', 'name': 'stdout', 'text': 'ab\\n'}]
    """
    out: list = []
    for o in outputs:
        prev = out[-1] if out else None
        if prev and o["output_type"] == prev["output_type"] == "stream" and o["name"] == prev["name"]:
            prev["text"] += o["text"]
        else:
            out.append(copy.copy(o))  # a copy: merging never changes the caller's outputs
    return out


def checked_outputs(notebook: Any, workdir: str | Path, timeout: int = 600) -> dict[str, tuple[list, int | None]]:
    """Execute a copy of ``notebook`` in ``workdir`` with kernel python3; the checked cells'
    (outputs, execution count) by cell id."""
    from nbclient import NotebookClient

    run = copy.deepcopy(notebook)
    NotebookClient(
        run, timeout=timeout, kernel_name=KERNELSPEC["name"], resources={"metadata": {"path": str(workdir)}}
    ).execute()
    return {
        c["id"]: (coalesce_streams(c.get("outputs", [])), c.get("execution_count"))
        for c in run.cells
        if c.cell_type == "code" and is_checked(c.source)
    }


def build(
    names: Sequence[str] | None = None,
    execute: bool = True,
    timeout: int = 600,
    root: str | Path | None = None,
    log: Any = print,
) -> list[Path]:
    """Write notebooks/<name>.ipynb for each source (None = all); with ``execute``, run each one
    (one at a time, offline) and store only the checked cells' outputs. Returns the paths written."""
    import nbformat

    names = resolve_names(names, root)
    for k, v in OFFLINE_ENV.items():  # the kernel inherits them
        os.environ.setdefault(k, v)
    nb_dir = project_root(root) / "notebooks"
    written = []
    for name in names:
        notebook = read_source(source_dir(root) / f"{name}.py")
        nbformat.validate(notebook)
        path = nb_dir / f"{name}.ipynb"
        t0 = time.perf_counter()
        if execute:
            outputs = checked_outputs(notebook, nb_dir, timeout)
            for cell in notebook.cells:
                if cell["id"] in outputs:  # nbval treats stored outputs without an execution count as an error
                    cell["outputs"], cell["execution_count"] = outputs[cell["id"]]
        nbformat.write(notebook, path)
        written.append(path)
        if log:
            done = (
                f"executed in {time.perf_counter() - t0:.1f} s, {len(outputs)} checked cell(s) stored"
                if execute
                else "not executed"
            )
            log(f"wrote {path.relative_to(nb_dir.parent)} ({done})")
    return written


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The builder's command-line arguments (``lazymem notebooks build``, ``lazymem notebooks build``)."""
    parser.add_argument("names", nargs="*", help="notebooks to build: name or unique prefix (default: all)")
    parser.add_argument("--no-execute", action="store_true", help="write the cells only, no stored outputs")
    parser.add_argument(
        "--timeout", type=int_in(1, 86_400), default=600, help="seconds per cell when executing (1..86400)"
    )
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Build what ``args`` (from ``add_arguments``) names."""
    build(args.names, execute=not args.no_execute, timeout=args.timeout)
    return 0
