"""The README is a front door that stays true: its Python quickstart runs, every relative link in
README.md, CHANGELOG.md and docs/ resolves, and it stays short (issue 26, item 6)."""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "CHANGELOG.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
        "docs/results/README.md"]


def _slugs(md: Path) -> set[str]:
    out, fence = set(), False
    for line in md.read_text(encoding="utf-8").splitlines():
        fence ^= line.startswith("```")
        if not fence and line.startswith("#"):
            out.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("name", DOCS)
def test_relative_links_resolve(name):
    src = ROOT / name
    for target in re.findall(r"\]\(([^)\s]+)\)", src.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = Path(os.path.normpath(src.parent / path)) if path else src
        assert full.exists(), f"{name}: link {target!r}: no such file {full}"
        if anchor and full.suffix == ".md":
            assert anchor in _slugs(full), f"{name}: link {target!r}: no heading #{anchor} in {full.name}"


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.slow
def test_readme_quickstart_runs(capsys):
    code = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S).group(1)
    exec(compile(code, "README.md quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert "gold-keep recall 1.0" in out and "electric kettle" in out
