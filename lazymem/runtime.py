"""Process-level runtime helpers shared by the stages: torch thread limits.

Nothing heavy is imported at module import time; torch is imported only when a limit
is actually set.

>>> with torch_threads(None):  # None leaves torch's setting alone (and does not import torch)
...     print("unchanged")
unchanged
"""
from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run a block with torch using `n` intra-op CPU threads, restoring the previous setting.

    None (or 0) leaves torch's setting alone; so does an `n` equal to the current setting.

    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
