"""The README is a front door that stays true: its Python quickstart runs, every relative link in
README.md, CHANGELOG.md and docs/ resolves, it stays short, and its headline results table is the
committed run summaries, number for number."""

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    "README.md",
    "CHANGELOG.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
    "docs/results/README.md",
]


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


# the headline table's rows: (data set cell, system cell) -> the committed run folder whose summary it shows
HEADLINE = {
    ("LoCoMo, 36 questions (n=10, w=1, L=4)", "RAG Top50"): "main_table/locomo_paper/rag_top50",
    ("LoCoMo, 36 questions (n=10, w=1, L=4)", "extractive"): "main_table/locomo_paper/extractive",
    ("LoCoMo, 36 questions (n=10, w=1, L=4)", "LazyMem-135M v1"): "main_table/locomo_paper/lazymem_135m_v1",
    (
        "LoCoMo, 36 questions (n=10, w=1, L=4)",
        "LazyMem-135M v2 + writer",
    ): "main_table/locomo_paper/lazymem_135m_v2_v6_content",
    ("LoCoMo, 36 questions (the paper's n=10, w=2, L=8, s=7)", "extractive"): "paper_shape/locomo_paper/extractive",
    (
        "LoCoMo, 36 questions (the paper's n=10, w=2, L=8, s=7)",
        "LazyMem-135M v1",
    ): "paper_shape/locomo_paper/lazymem_135m_v1",
    (
        "LoCoMo, 36 questions (the paper's n=10, w=2, L=8, s=7)",
        "LazyMem-135M v2 + writer",
    ): "paper_shape/locomo_paper/lazymem_135m_v2_v6_content",
    (
        "LongMemEval_S real haystacks, 2 questions (n=10, w=1, L=4)",
        "extractive",
    ): "longmemeval_s_real/main_shape/extractive",
    (
        "LongMemEval_S real haystacks, 2 questions (n=10, w=1, L=4)",
        "LazyMem-135M v2 + writer",
    ): "longmemeval_s_real/main_shape/lazymem_135m_v2_v6_content",
    (
        "LongMemEval_S real haystacks, 2 questions (n=10, w=2, L=8, s=7)",
        "extractive",
    ): "longmemeval_s_real/paper_shape/extractive",
    (
        "LongMemEval_S real haystacks, 2 questions (n=10, w=2, L=8, s=7)",
        "LazyMem-135M v2 + writer",
    ): "longmemeval_s_real/paper_shape/lazymem_135m_v2_v6_content",
}


def _headline_rows() -> dict[tuple[str, str], list[str]]:
    """The README's Results table: (data set, system) -> its four number cells, markup stripped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    rows, block = {}, ""
    for line in section.splitlines():
        cells = [c.strip().replace("**", "") for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 6 or cells[0].startswith(("data set", "---")):
            continue
        block = cells[0] or block
        rows[(block, cells[1])] = cells[2:]
    return rows


def _expected(summary: dict) -> list[str]:
    """The four cells a run summary gives: evidence recall, gold-keep, memory tokens, processing s."""
    c = summary.get("construction")
    if c is None:
        keep = "-"
    elif c["n_questions"] < 10:  # a handful of questions: say how many gold messages, not a rate
        keep = f"{c['n_gold_kept']} of {c['n_gold']}"
    else:
        keep = f"{c['gold_keep_recall']:.3f}"
    return [
        f"{summary['memory_measures']['evidence_recall']['mean']:.3f}",
        keep,
        f"{round(summary['memory_tokens']['mean']):,}",
        f"{summary['latency_s']['processing']['mean']:.1f}",
    ]


def test_readme_headline_table_is_the_committed_summaries():
    rows = _headline_rows()
    assert set(rows) == set(HEADLINE), f"README rows {sorted(rows)} != the mapped rows {sorted(HEADLINE)}"
    for key, folder in HEADLINE.items():
        summary = json.loads((ROOT / "docs/results" / folder / "summary.json").read_text(encoding="utf-8"))
        assert rows[key] == _expected(summary), f"README row {key}: {rows[key]} != {folder}: {_expected(summary)}"


def test_readme_names_the_command_behind_each_headline_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for table in {folder.split("/")[0] for folder in HEADLINE.values()}:
        assert f"(docs/results/{table}/table.md)" in text, table
    for config in ["main_table_locomo", "paper_shape_locomo", "longmemeval_s_real"]:
        assert f"lazymem eval-table --config configs/tables/{config}.yaml" in text, config
        assert (ROOT / "configs/tables" / f"{config}.yaml").exists(), config


def test_readme_keeps_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo   # " in text and "make test   # " in text
