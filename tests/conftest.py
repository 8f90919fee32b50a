"""Shared test fixtures. Tests never reach the Hugging Face hub (HF_HUB_OFFLINE=1)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Set before anything imports huggingface_hub, which reads it once at import time.
os.environ["HF_HUB_OFFLINE"] = "1"

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only shared data directory (../shared/data from the repo root)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (LoCoMo / LongMemEval samples; see DATA.md)")
    return SHARED_DATA

