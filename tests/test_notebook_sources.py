"""notebooks/src/*.py are the notebooks' sources: every .ipynb has one, equals it cell by cell, and it lints.

No notebook runs here (tests/test_notebooks_runner.py executes a tiny one through the builder;
nbval runs the real ones).
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from lazymem.errors import ConfigError
from lazymem.notebooks import build as nbbuild

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
SRC_DIR = NB_DIR / "src"
NOTEBOOKS = sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
SOURCES = sorted(p.stem for p in SRC_DIR.glob("*.py"))


def cells(notebook) -> list[tuple]:
    return [(c["id"], c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in notebook.cells]


def test_every_notebook_has_a_source_and_every_source_a_notebook():
    assert len(NOTEBOOKS) >= 11 and NOTEBOOKS[0] == "00_quickstart"
    assert SOURCES == NOTEBOOKS, "notebooks/*.ipynb and notebooks/src/*.py name different notebooks"
    assert nbbuild.source_names() == SOURCES


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_cells_equal_its_source(name):
    """Nobody edits an .ipynb by hand: its cells are jupytext's reading of the source, ids and tags included."""
    committed = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
    built = nbbuild.read_source(SRC_DIR / f"{name}.py")
    assert cells(committed) == cells(built), (
        f"notebooks/{name}.ipynb differs from notebooks/src/{name}.py: run `lazymem notebooks build {name}`"
    )
    assert committed.metadata == built.metadata
    raw = jupytext.reads((SRC_DIR / f"{name}.py").read_text(encoding="utf-8"), fmt="py:percent")
    assert [c.source for c in raw.cells] == [c.source for c in committed.cells]
    for cell in committed.cells:
        if cell.cell_type == "code" and not nbbuild.is_checked(cell.source):
            assert not cell.outputs and cell.execution_count is None, f"{cell['id']}: only checked cells keep outputs"
    checked = [c for c in committed.cells if c.cell_type == "code" and nbbuild.is_checked(c.source)]
    assert checked and all(c.outputs and c.execution_count for c in checked), "build with execution to store them"


@pytest.mark.parametrize("name", SOURCES)
def test_source_is_in_jupytext_canonical_percent_form(name):
    """The text jupytext writes back from the source is the source: no header, no stray metadata."""
    text = (SRC_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert text.startswith("# %% [markdown]\n# # ") and "{{" not in text  # no f-string escaping
    assert jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="py:percent") == text


def test_sources_pass_ruff():
    if importlib.util.find_spec("ruff") is not None:
        cmd = [sys.executable, "-m", "ruff"]
    elif shutil.which("ruff"):
        cmd = [shutil.which("ruff")]
    else:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    done = subprocess.run([*cmd, "check", "--no-cache", "notebooks/src"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# --- the builder, without executing ---------------------------------------------------------------


def fake_checkout(tmp_path: Path, sources: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "lazymem"\n')
    (tmp_path / "notebooks" / "src").mkdir(parents=True)
    for name, text in sources.items():
        (tmp_path / "notebooks" / "src" / f"{name}.py").write_text(text)
    return tmp_path


SOURCE = """# %% [markdown]
# # 01 · Tiny

# %% tags=["parameters"]
w = 2  # radius

# %%
# NBVAL_CHECK_OUTPUT
print({"w": w})
"""


def test_build_without_executing_writes_the_sources_cells(tmp_path):
    root = fake_checkout(tmp_path, {"01_tiny": SOURCE, "02_other": "# %%\nx = 1\n"})
    (root / "notebooks" / "src" / "notes.py").write_text("# not a notebook: no NN_ prefix\n")
    assert nbbuild.source_names(root) == ["01_tiny", "02_other"]
    logged = []
    (path,) = nbbuild.build(["01"], execute=False, root=root, log=logged.append)
    assert path == root / "notebooks" / "01_tiny.ipynb" and logged == ["wrote notebooks/01_tiny.ipynb (not executed)"]
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert cells(notebook) == [
        ("01-00", "markdown", "# 01 · Tiny", []),
        ("01-01", "code", "w = 2  # radius", ["parameters"]),
        ("01-02", "code", '# NBVAL_CHECK_OUTPUT\nprint({"w": w})', []),
    ]
    assert notebook.metadata.kernelspec.name == "python3" and notebook.cells[2].outputs == []
    assert len(nbbuild.build(None, execute=False, root=root, log=None)) == 2


def test_build_names_and_sources_fail_clearly(tmp_path):
    root = fake_checkout(
        tmp_path, {"01_a": "# %%\nx = 1\n", "01_b": "# %%\nx = 2\n", "03_raw": "# %% [raw]\nraw text\n"}
    )
    with pytest.raises(ConfigError, match="'01' is ambiguous.*known: 01_a, 01_b, 03_raw"):
        nbbuild.resolve_names(["01"], root)
    with pytest.raises(ConfigError, match="'07' matches no source"):
        nbbuild.resolve_names(["07"], root)
    assert nbbuild.resolve_names(["01_b.py", "03_raw.ipynb"], root) == ["01_b", "03_raw"]
    with pytest.raises(ConfigError, match=r"03_raw.py: cell 0 is a raw cell"):
        nbbuild.build(["03"], execute=False, root=root)
    with pytest.raises(ConfigError, match="cannot read the notebook source"):
        nbbuild.read_source(root / "notebooks" / "src" / "09_missing.py")


def test_main_reports_a_bad_name_as_exit_2(capsys):
    from lazymem.cli import main as cli_main

    assert cli_main(["notebooks", "build", "no-such-notebook", "--no-execute"]) == 2
    assert "matches no source" in capsys.readouterr().err
