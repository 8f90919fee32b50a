"""What every run record says about the code that made it: UTC time, git commit, package versions.

One home for the evaluation manifests (``lazymem.eval.provenance``), training data cards
(``lazymem.train.datacard``) and notebook runs (``lazymem.notebooks.runner``).

>>> len(now()) == len("2024-01-01T00:00:00+00:00")
True
>>> package_versions(["surely-not-installed-xyz"])
{'surely-not-installed-xyz': None}
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_commit(path: str | os.PathLike | None = None) -> str:
    """``git rev-parse HEAD`` of the checkout holding `path` (default: this package), else "unknown"."""
    import subprocess

    where = Path(path) if path else Path(__file__).resolve().parent
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


def package_versions(names: Sequence[str]) -> dict[str, str | None]:
    """Installed version of each distribution (None when not installed), read without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            out[n] = None
    return out
