"""Tracked text speaks of the product (versions, dates, commits, configs, commands), never of the
work that made it: no "stop 49", "issue 25", "the next session resumes", "fresh clone of 3aa15aa".

"Session" is also the data's own word (LongMemEval and LoCoMo conversations are split into
sessions: session_1, oracle_session, multi-session, gold sessions): the patterns below name the
work-process uses only, so the data's vocabulary never matches.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ipynb", ".sh", ".json", ".jsonl"}
# (.json/.jsonl: result summaries, manifests and snapshots carry notes a reader sees)
TEXT_NAMES = {"Makefile"}
MAX_BYTES = 2_000_000  # larger tracked files are data or executed notebooks' payloads, not prose

# each pattern is one work-process phrase; matched case-insensitively, on one line at a time
PATTERNS = [
    r"\bstops?[ -]#?\d+(?:\s*-\s*\d+)?\b",  # "stop 49", "stops 46-48", "stop-43 decoding"
    r"\bissues? #?\d+\b",  # "issue 25" (another project's issue is a link: .../issues/N)
    r"\b(?:this|next|previous|earlier|last) stop\b",
    r"\b(?:earlier|previous|later|these|those|several) stops\b",  # (not "that stops": a verb)
    r"\b(?:this|that|next|previous|earlier|helper) session\b",  # ("one session", "last session": data words)
    r"\bsessions? (?:ago|later)\b",
    r"\bone session after another\b",
    r"\bover (?:\d+|several) sessions\b",  # a run "over 2 sessions" (the data's are "over two sessions")
    r"\boutlives a session\b",
    r"\bfresh[- ]clones? (?:of|runs?)\b",  # "fresh clone of 3aa15aa", "the fresh-clone run"
    r"\bsecond read\b",
    r"\bthe (?:CEO|reviewer)\b",
]
RX = re.compile("|".join(f"(?:{p})" for p in PATTERNS), re.I)

# data vocabulary that a pattern above would otherwise catch: (path glob, phrase) pairs, kept narrow
ALLOWED: list[tuple[str, str]] = []


def tracked_text_files() -> list[Path]:
    """Tracked files that hold prose or code (no binaries, weights, data or oversized payloads)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for rel in out.decode().split("\0"):
        path = ROOT / rel
        if not rel or not path.is_file() or (path.suffix not in TEXT_SUFFIXES and path.name not in TEXT_NAMES):
            continue
        if path.stat().st_size > MAX_BYTES or rel.startswith("tests/fixtures/") or path == Path(__file__).resolve():
            continue  # (this file names the phrases it looks for)
        files.append(path)
    return files


def hits(path: Path) -> list[tuple[int, str]]:
    """(line number, phrase) for each work-process phrase in one file.

    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "x.md"
    >>> _ = p.write_text("the default since stop 49\\nthe gold sessions of multi-session questions\\n")
    >>> hits(p)
    [(1, 'stop 49')]
    """
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    allowed = [phrase.lower() for glob, phrase in ALLOWED if Path(rel).match(glob)]
    found = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        for m in RX.finditer(line):
            if not any(a in line.lower() for a in allowed):
                found.append((n, m.group(0)))
    return found


def place(rel: str) -> str:
    """The part of the tree a file belongs to, for the per-place counts."""
    if rel == "README.md" or rel == "CHANGELOG.md":
        return rel
    if rel.startswith("lazymem/assets/") or (rel.startswith("models/") and rel.endswith("README.md")):
        return "cards"
    for prefix, name in [
        ("docs/", "docs"),
        ("configs/", "configs"),
        ("lazymem/", "package"),
        ("tests/", "tests"),
        ("notebooks/", "notebooks"),
        ("models/", "models"),
    ]:
        if rel.startswith(prefix):
            return name
    return "other"


def all_hits() -> list[tuple[str, int, str]]:
    return [(p.relative_to(ROOT).as_posix(), n, phrase) for p in tracked_text_files() for n, phrase in hits(p)]


def test_tracked_text_speaks_of_the_product():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = all_hits()
    assert not found, f"{len(found)} work-process phrases:\n" + "\n".join(f"{f}:{n}: {p}" for f, n, p in found)


def test_patterns_leave_the_data_vocabulary_alone():
    data = [
        "session_1",
        "oracle_session",
        "gold sessions",
        "multi-session",
        "single-session-user",
        "session summaries",
        "multi-hop over two sessions",
        "the sessions before the question",
        "stop tokens",
        "a stop sequence",
        "GitHub issues/25",
    ]
    assert [s for s in data if RX.search(s)] == []
    work = [
        "stop 49",
        "Stops 46-48",
        "the stop-43 decoding",
        "issue 25's floor",
        "the next session resumes",
        "fresh clone of 3aa15aa",
        "one session after another",
        "this stop",
        "over 2 sessions",
    ]
    assert [s for s in work if not RX.search(s)] == []


if __name__ == "__main__":  # per-place counts: python tests/test_product_words.py [--list]
    import collections
    import sys

    found = all_hits()
    counts = collections.Counter(place(f) for f, _, _ in found)
    for name in [
        "README.md",
        "CHANGELOG.md",
        "docs",
        "configs",
        "package",
        "cards",
        "models",
        "tests",
        "notebooks",
        "other",
    ]:
        print(f"{name:14s}{counts[name]:5d}")
    print(f"{'total':14s}{len(found):5d}")
    if "--list" in sys.argv:
        print("\n".join(f"{f}:{n}: {p}" for f, n, p in found))
