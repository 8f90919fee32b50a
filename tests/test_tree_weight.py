"""The tree carries the product, not the lab: no trainer checkpoint is committed, and no file over 10 MB
lives outside lazymem/assets/ (the shipped adapters). Training outputs under models/ stay only where a
table row or the release reads them (docs/training.md, "What the tree keeps").

The files checked are the ones a commit would hold: tracked files still on disk (a file removed with
plain `rm` is listed by `git ls-files` until the removal is committed) plus untracked files that are not
ignored (what `git add -A` would add).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 10 * 1024 * 1024  # larger files belong in lazymem/assets/ (shipped) or outside git
HEAVY_HOME = "lazymem/assets/"
# what a transformers Trainer writes to resume a run; none of it is a model anyone loads
TRAINER_STATE = re.compile(
    r"(^|/)(optimizer\.pt|scheduler\.pt|rng_state[^/]*\.pth|training_args\.bin)$"
    r"|(^|/)checkpoint-[^/]+/trainer_state\.json$"
)


def is_trainer_state(path: str) -> bool:
    """Whether a repository path is a trainer's resume state.

    >>> [is_trainer_state(p) for p in ("m/train/x/checkpoint-48/optimizer.pt", "m/x/final/training_args.bin",
    ...                                 "m/x/checkpoint-5/rng_state_1.pth", "m/x/checkpoint-5/trainer_state.json",
    ...                                 "m/x/trainer_state.json", "m/x/final/adapter_model.safetensors")]
    [True, True, True, True, False, False]
    """
    return TRAINER_STATE.search(path) is not None


def too_heavy(path: str, size: int) -> bool:
    """Whether a file of ``size`` bytes at ``path`` is over the limit outside lazymem/assets/.

    >>> too_heavy("models/a/final/adapter_model.safetensors", 9_823_216), too_heavy("models/x.bin", 31_000_000)
    (False, True)
    >>> too_heavy("lazymem/assets/lazymem-135m/adapter_model.safetensors", 31_000_000)
    False
    """
    return size > MAX_BYTES and not path.startswith(HEAVY_HOME)


def _git(*args: str) -> list[str]:
    out = subprocess.run(["git", *args, "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def committed_files() -> list[str]:
    """Tracked files still on disk, and untracked files git does not ignore."""
    try:
        tracked, deleted = _git("ls-files", "--cached"), set(_git("ls-files", "--deleted"))
        untracked = _git("ls-files", "--others", "--exclude-standard")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return sorted(p for p in {*tracked, *untracked} - deleted if os.path.lexists(ROOT / p))


@pytest.fixture(scope="module")
def files() -> list[str]:
    return committed_files()


def test_the_tree_has_files_to_check(files):
    assert "pyproject.toml" in files and any(p.startswith(HEAVY_HOME) for p in files)


def test_no_trainer_checkpoint_is_committed(files):
    found = [p for p in files if is_trainer_state(p)]
    assert not found, f"trainer resume state in the tree (delete it; checkpoints stay local): {found}"


def test_no_file_over_10_mb_outside_the_shipped_assets(files):
    # a link counts as itself (a few bytes), not as the file it points to
    found = {p: os.lstat(ROOT / p).st_size for p in files if too_heavy(p, os.lstat(ROOT / p).st_size)}
    assert not found, f"files over {MAX_BYTES / 2**20:.0f} MB outside {HEAVY_HOME}: {found}"


def test_every_committed_link_resolves_inside_the_tree(files):
    """A training output that names the shipped weights links to them; a link must land on a file here."""
    links = [p for p in files if (ROOT / p).is_symlink()]
    bad = [p for p in links if not (ROOT / p).is_file() or not (ROOT / p).resolve().is_relative_to(ROOT)]
    assert not bad, f"links that resolve to no file in the tree: {bad}"
