"""Process-level runtime helpers shared by the stages: torch thread limits, the cores this process may use.

Nothing heavy is imported at module import time; torch is imported only when a limit
is actually set.

>>> with torch_threads(None):  # None leaves torch's setting alone (and does not import torch)
...     print("unchanged")
unchanged
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


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


def check_device(device: str, where: str = "device") -> None:
    """ConfigError when ``device`` names an accelerator this machine does not have (torch imported here)."""
    from lazymem.errors import ConfigError

    kind = str(device).split(":")[0]
    if kind == "cpu":
        return
    import torch

    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"{where}={device!r}: no CUDA GPU is available here (torch sees none); use 'cpu'")
        index = str(device).partition(":")[2]
        if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
            raise ConfigError(f"{where}={device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif kind == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ConfigError(f"{where}={device!r}: no Apple MPS device is available here; use 'cpu'")
    else:
        raise ConfigError(f"{where}={device!r}: unknown device; use 'cpu', 'cuda', 'cuda:N' or 'mps'")


def usable_cores() -> list[int]:
    """The CPU cores this process may run on (its affinity mask: taskset, a cgroup's cpuset, Slurm), else all."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call here (macOS)
        return list(range(os.cpu_count() or 1))
