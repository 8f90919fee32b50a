"""Shared test fixtures. Tests never reach the Hugging Face hub (HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from servers import LocalServer

# Set before anything imports huggingface_hub, which reads it once at import time.
os.environ["HF_HUB_OFFLINE"] = "1"

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only shared data directory (../shared/data from the repo root)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (LoCoMo / LongMemEval samples; see DATA.md)")
    return SHARED_DATA


# --- a real OpenAI-compatible server (transformers serve) on a tiny random Qwen3 ----------------


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from lazymem.llm import TokenizerMissing, tiny_test_model

    try:
        return str(tiny_test_model(tmp_path_factory.mktemp("tiny-qwen3")))
    except TokenizerMissing as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def served(tiny_model, tmp_path_factory):
    if not Path(sys.executable).with_name("transformers").exists():
        pytest.skip("the transformers CLI is missing")
    pytest.importorskip("fastapi", reason="transformers serve needs transformers[serving]")
    server = LocalServer(tiny_model, tmp_path_factory.mktemp("hf-hub-cache"))
    yield server
    server.stop()
