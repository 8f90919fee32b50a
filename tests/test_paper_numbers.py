"""lazymem.eval.paper transcribes the paper's tables: re-read them from its LaTeX source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lazymem.eval.paper import ALL_AT_50, REPORTED

SEED = Path(__file__).resolve().parents[2] / "shared" / "seed" / "000_f05d87ef766985fc.txt"


def _rows(label: str) -> list[list[str]]:
    if not SEED.exists():
        pytest.skip(f"the paper's source is not at {SEED} (../shared/seed)")
    tex = SEED.read_text()
    body = tex[tex.index(f"\\label{{{label}}}") :]
    body = body[: body.index("\\end{tabular}")].replace("\n", " ")
    body = re.sub(r"\\makecell\[l\]\{([^}]*)\}", lambda m: m.group(1).replace("\\\\", " "), body)
    rows = []
    for raw in body.split("\\\\"):
        raw = re.sub(r"\\(textcolor\{blue\}|textbf|underline|textsc|makecell\[l\])\{", "{", raw)
        raw = re.sub(r"\\(midrule|toprule|bottomrule|cmidrule\(lr\)\{[^}]*\})", "", raw)
        raw = raw.replace("{", "").replace("}", "").replace("\\\\", " ")
        cells = [c.strip() for c in raw.split("&")]
        if len(cells) >= 4 and not cells[0].startswith("\\multi"):
            rows.append(cells)
    return rows


def _system(name: str, mpm: str) -> str:
    name = re.sub(r"\s+", " ", name).strip()
    if name == "LazyMem":
        return "LazyMem-4B" if "4B" in mpm else "LazyMem (Qwen3-32B)"
    return name


def _num(x: str):
    x = x.replace(",", "").strip()
    return None if x in ("--", "N/A") else float(x)


def test_reported_accuracy_matches_the_papers_main_table():
    got = {}
    for cells in _rows("tab:main_accuracy"):
        if len(cells) == 14 and re.fullmatch(r"[0-9.]+|--", cells[8]):
            got[_system(cells[0].split("multicolumn")[-1], cells[1])] = (_num(cells[8]), _num(cells[13]))
    assert len(got) == 13
    for system, (lme, loco) in got.items():
        assert REPORTED["longmemeval"][system]["lj"] == lme, system
        assert (REPORTED["locomo"].get(system) or {}).get("lj") == loco, system


def test_reported_tokens_match_the_papers_token_table():
    got = {}
    for cells in _rows("tab:answer_context_memory_tokens"):
        if len(cells) == 4 and re.fullmatch(r"[0-9,]+|N/A|--", cells[2]):
            got[_system(cells[0], cells[1])] = (_num(cells[2]), _num(cells[3]))
    assert len(got) == 13
    for system, (lme, loco) in got.items():
        assert REPORTED["longmemeval"][system]["tokens"] == lme, system
        assert (REPORTED["locomo"].get(system) or {}).get("tokens") == loco, system


def test_all_at_50_matches_the_papers_window_radius_table():
    got = {"longmemeval": {}, "locomo": {}}
    for cells in _rows("tab:window_radius"):
        if len(cells) == 5 and cells[0].isdigit():
            got["longmemeval"][int(cells[0])] = float(cells[2])
            got["locomo"][int(cells[0])] = float(cells[4])
    assert got == ALL_AT_50 and len(got["locomo"]) == 4
