"""Shared by the run tests: a tiny synthetic data set, the fake backend's pipeline, a private cache."""

import pytest

SYNTH = "synthetic:messages=60,seed=1,histories=1,questions=6"
FAKE = {"backend": "fake", "model": "fake"}
PIPELINE = {
    "method": "rag",
    "retrieval": {"dense_model": None, "n": 3},
    "window": {"w": 1},
    "mpm": FAKE,
    "answer": FAKE,
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Each test its own LAZYMEM_CACHE (LLM and embedding caches), the real Qwen3 tokenizer kept."""
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))
