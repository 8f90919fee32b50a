"""Package-level promises: a light import, a working CLI entry point, and the import picture of the house."""

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path

HEAVY = ("torch", "transformers", "sentence_transformers", "pandas", "FlagEmbedding", "vllm", "bm25s", "rank_bm25")


def test_import_loads_no_heavy_library():
    code = (
        "import sys, pkgutil, importlib, lazymem\n"
        "mods = [m.name for m in pkgutil.walk_packages(lazymem.__path__, 'lazymem.')]\n"
        "for m in mods: importlib.import_module(m)\n"
        f"print([h for h in {HEAVY!r} if h in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing lazymem modules pulled in {out.strip()}"


def test_cli_entry_point_runs():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lazymem.cli",
            "data",
            "summary",
            "synthetic:messages=80,seed=3,histories=1,questions=6",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    s = json.loads(out)
    assert s["questions"] == 6 and 60 <= s["messages"] <= 100


def test_cli_error_is_clear_and_nonzero(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"question_id": "a", "question_type": "multi-session", "quest')
    r = subprocess.run(
        [sys.executable, "-m", "lazymem.cli", "data", "summary", str(bad)], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert "broken.json" in r.stderr and "Traceback" not in r.stderr


# --- the house: which part may import which (docs/ARCHITECTURE.md) -------------------------------

PKG = Path(__file__).resolve().parents[1] / "lazymem"
GROUND = {
    "__init__",
    "answers",
    "errors",
    "fields",
    "records",
    "prompts",
    "paths",
    "text",
    "secrets",
    "stats",
    "runtime",
    "runinfo",
    "files",
    "yamlio",
    "sweep",
    "jobs",
    "jobs_status",
}
_STAGES = {"ground", "data", "retrieve", "llm", "construct"}
# part -> parts it may import (besides itself). Imports only go down; siblings never import each other.
ALLOWED = {
    "ground": set(),
    "data": {"ground"},
    "retrieve": {"ground"},
    "llm": {"ground"},
    "construct": {"ground", "retrieve"},
    "pipeline": {"ground", "retrieve", "llm", "construct"},
    "eval": _STAGES | {"pipeline"},
    "train": _STAGES | {"pipeline"},
    "viz": {"ground"},
    "bench": _STAGES | {"pipeline", "eval", "viz"},
    "notebooks": _STAGES | {"pipeline", "eval", "train", "viz"},
    "demo": _STAGES | {"pipeline", "eval", "train", "viz"},
    "cli": _STAGES | {"pipeline", "eval", "train", "viz", "bench", "notebooks", "demo"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _part(module: str) -> str:
    head = module.split(".")[1] if "." in module else "__init__"
    return "ground" if head in GROUND else head


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """lazymem modules a file imports anywhere (module level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # "from pkg import submodule" imports the submodule; "from pkg import name" the package
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names
            ]
        for n in names:
            if n.startswith("lazymem"):
                while n not in modules and "." in n:
                    n = n.rsplit(".", 1)[0]
                found.add(n)
    return found


def test_imports_only_go_down():
    modules = _modules()
    bad = []
    for name, path in modules.items():
        part = _part(name)
        assert part in ALLOWED, f"{name}: part {part!r} has no place in ALLOWED (docs/ARCHITECTURE.md)"
        for target in _imports(path, modules):
            tpart = _part(target)
            if tpart != part and tpart not in ALLOWED[part]:
                bad.append(f"{name} -> {target} ({part} may not import {tpart})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    for name in modules:  # a package's own modules import siblings, never the package itself
        pkg = name.rsplit(".", 1)[0]
        assert pkg == "lazymem" or pkg not in graph[name], f"{name} imports its own package {pkg} (a cycle)"
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(m) :] + [m]))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_module_size_is_a_note_not_a_rule():
    """Modules over 400 lines get a warning, never a failure: size follows responsibility.

    Template text (distractor chat, every prompt verbatim in one place) is not logic and is left out.
    """
    templates = {"lazymem.data.synthetic.chatter", "lazymem.prompts"}
    long = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in _modules().items()}
    over = {n: k for n, k in sorted(long.items()) if k > 400 and n not in templates}
    if over:
        warnings.warn(
            f"modules over 400 lines (a note: split where a module holds two jobs): {over}", UserWarning, stacklevel=1
        )
    assert templates <= set(long), f"set aside as templates but not modules: {templates - set(long)}"


def test_tests_read_only_files_git_keeps():
    """A repository path a test names must not be one .gitignore keeps out: CI runs on a fresh clone, where
    such a file (a LoCoMo cell's records, a local training run) does not exist."""
    import re
    import shutil

    import pytest

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    pattern = re.compile(
        r"[\"']((?:docs|models|configs|figures|papermill_runs|runs|notebooks|lazymem/assets)/"
        r"[\w./@-]+\.\w+)[\"']"
    )
    named = {m.group(1) for p in (root / "tests").glob("*.py") for m in pattern.finditer(p.read_text("utf-8"))}
    named = sorted(n for n in named if "*" not in n)  # globs aside
    assert named, "the pattern finds no repository paths in the tests"
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *named], cwd=root, capture_output=True, text=True
    ).stdout.split()
    assert not ignored, f"tests read files that .gitignore keeps out of a fresh clone: {ignored}"
