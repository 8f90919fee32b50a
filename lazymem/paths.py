"""Where lazymem keeps what it downloads, converts or caches (models, tokenizers, LLM calls, embeddings).

>>> import os; os.environ["LAZYMEM_CACHE"] = "/tmp/lm"; str(cache_root())
'/tmp/lm'
>>> del os.environ["LAZYMEM_CACHE"]
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "LAZYMEM_CACHE"


def cache_root() -> Path:
    """``$LAZYMEM_CACHE`` when set, else ~/.cache/lazymem (models, tokenizers, LLM calls)."""
    root = os.environ.get(CACHE_ENV)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "lazymem"
