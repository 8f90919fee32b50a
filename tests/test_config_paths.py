"""Every path a config names, in a value or in a comment, exists: a config that points at a moved or
deleted file (a recipe, a data config, an adapter, a results file) is a command that fails for a user.

Paths are the project's own (configs/, docs/, scripts/, notebooks/, lazymem/, models/, tests/) and the
shared data (../shared/data/...). Outputs a command writes (runs/, papermill_runs/) are not checked;
a path with a placeholder (``<set>``, ``{name}``) or a glob must match at least one file.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATH = re.compile(
    r"(?<![\w./-])((?:\.\./shared/data|configs|docs|scripts|notebooks|lazymem|models|tests)"
    r"/[A-Za-z0-9_./*<>{}#-]*[A-Za-z0-9_*>}])"
)
CONFIGS = sorted(p for p in (ROOT / "configs").rglob("*") if p.suffix in (".yaml", ".yml"))


def named_paths(text: str) -> list[str]:
    """The repository paths a config's text names (a dataset spec's ``#subset`` cut off).

    >>> named_paths("base: configs/eval/x.yaml  # see docs/results/t/table.md, runs/out and lazymem.cli")
    ['configs/eval/x.yaml', 'docs/results/t/table.md']
    >>> named_paths('dataset: "../shared/data/locomo/locomo10.json#paper"')
    ['../shared/data/locomo/locomo10.json']
    >>> named_paths("{adapter: models/a/final}  # lazymem bench x --out docs/results/x.json; configs/<row>.yaml")
    ['models/a/final', 'configs/<row>.yaml']
    """
    out = []
    for m in PATH.finditer(text):
        if re.search(r"--out[= ]\s*$", text[: m.start()]):
            continue  # where a command writes, not a file it reads
        p = m.group(1).split("#", 1)[0].rstrip(".")
        while p and p[-1] in "}>" and p.count(p[-1]) > p.count("{" if p[-1] == "}" else "<"):
            p = p[:-1]  # a YAML flow mapping's closing brace, not a placeholder's
        if p.count("/") >= 1 and not p.endswith("/"):
            out.append(p)
    return out


def exists(path: str) -> bool:
    if path.startswith("../shared/") and not (ROOT.parent / "shared").exists():
        return True  # the shared data is not beside this checkout: nothing to check it against
    pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", path)
    if "*" in pattern:
        return bool(glob.glob(str(ROOT / pattern)))
    target = ROOT / path
    return target.exists() or target.with_suffix("").is_dir()  # a module named as a path


@pytest.mark.parametrize("config", CONFIGS, ids=[str(p.relative_to(ROOT)) for p in CONFIGS])
def test_every_path_a_config_names_exists(config):
    missing = [
        (n + 1, p)
        for n, line in enumerate(config.read_text(encoding="utf-8").splitlines())
        for p in named_paths(line)
        if not exists(p)
    ]
    assert not missing, f"{config.relative_to(ROOT)} names paths that do not exist: " + ", ".join(
        f"line {n}: {p}" for n, p in missing
    )
