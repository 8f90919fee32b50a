"""Repository-wide pytest setup: offline by default, GPU and network tests skipped by marker."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU; none here")
    skip_net = pytest.mark.skip(reason="needs the internet beyond package registries; set LAZYMEM_NETWORK=1 to run")
    gpu = None
    for item in items:
        if "gpu" in item.keywords:
            gpu = _has_cuda() if gpu is None else gpu
            if not gpu:
                item.add_marker(skip_gpu)
        if "network" in item.keywords and os.environ.get("LAZYMEM_NETWORK") != "1":
            item.add_marker(skip_net)
