"""Credentials stay off disk: the value rule (looks_secret), cache keys without credentials,
the manifest's command line, and a sentinel run that greps every written byte."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging

import pytest

from lazymem.eval import EvalConfig, evaluate
from lazymem.llm import CachedClient, FakeBackend, LLMConfig
from lazymem.llm.base import Sampling, to_messages
from lazymem.secrets import REDACTED, Masker, looks_secret, redact, redact_command

SYNTH = "synthetic:messages=60,seed=0,histories=1,questions=6"

NORMAL_VALUES = [
    "gpt-4o-mini",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen2.5-7B-Instruct-AWQ",
    "meta-llama/Meta-Llama-3.1-8B-Instruct",
    "TheBloke/Llama-2-13B-chat-GPTQ",
    "Llama-2-13B-chat-GPTQ-Instruct-v2",
    "smollm2-offline",
    "transformers",
    "openai",
    "http://127.0.0.1:8000/v1",
    "https://api.openai.com/v1",
    "/home/user/.cache/lazymem/llm",
    "runs/eval/longmemeval_s_lazymem",
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "api_key_env",
    "response_format",
    "synthetic:messages=60,seed=0,histories=1,questions=6",
    "longmemeval:s",
    "Answer the question briefly.",
    "You are a helpful assistant. Keep only the turns that matter.",
    "Basic statistics",
    "bearer of news",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
    "9fceb02d0ae598e95dc970b74767f19372d61af8",  # git commit
    "550e8400-e29b-41d4-a716-446655440000",
    "gpt4_2655b836",
    "answer_4be1b6b4_2",
    "sklearn",
    "hf_hub",
    "sk-1",
    "sk-learn-compat-layer",
    "hf_transfer",
    "hf_transfer_enabled",
    "cpu",
    "cuda:0",
    "bfloat16",
    "auto",
    "",
    "x" * 40,
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
]
SECRET_VALUES = [
    "sk-proj-abcdefgh12345678",
    "sk-ant-api03-AbCdEfGh",
    "Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig",
    "bearer abcdefgh1234",
    "Basic dXNlcjpwYXNzd29yZA==",
    "hf_AbCdEfGhIjKlMnOpQrStUv12",
    "ghp_abcdefghijklmnop1234",
    "github_pat_11ABCDEFG0abcdefghij",
    "xoxb-1234567890-abcdef",
    "glpat-abcdefghij1234xyz",
    "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "AKIAIOSFODNN7EXAMPLE",
    "Zm9vYmFyYmF6cXV4UXVVeEtleTEyMzQ1Njc4OTA",
    "  sk-proj-abcdefgh12345678  ",
]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    from lazymem.llm import DIR_ENV, qwen3_tokenizer_dir

    monkeypatch.setenv(DIR_ENV, str(qwen3_tokenizer_dir()))
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path / "lazymem_cache"))


# --- the value rule -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", NORMAL_VALUES)
def test_ordinary_config_values_do_not_look_secret(value):
    assert not looks_secret(value)
    assert redact({"v": value, "l": [value]}) == {"v": value, "l": [value]}
    assert Masker([]).dumps({"v": value}) == json.dumps({"v": value}, ensure_ascii=False)


@pytest.mark.parametrize("value", SECRET_VALUES)
def test_credential_looking_values_are_caught_under_any_name(value):
    assert looks_secret(value)
    assert redact({"extra_body": {"x-unknown": value, "n": [value]}}) == {
        "extra_body": {"x-unknown": REDACTED, "n": [REDACTED]}
    }
    assert value.strip() not in Masker([]).dumps({"deep": [{"x": value}]})


def test_non_strings_never_look_secret():
    assert not any(looks_secret(v) for v in (None, 1, 2.5, True, b"sk-abcdefgh1234", ["sk-abcdefgh1234"]))


def test_a_config_without_secrets_is_returned_equal_by_redact():
    cfg = LLMConfig(
        backend="openai",
        model="Qwen/Qwen3-8B",
        base_url="http://127.0.0.1:8000/v1",
        extra_body={"top_k": 20, "repetition_penalty": 1.05},
        chat_template_kwargs={"enable_thinking": False},
    )
    assert redact(cfg.identity()) == cfg.identity()


# --- cache keys ---------------------------------------------------------------------------------


def old_key(identity, prompt, sampling: Sampling) -> str:
    """The key formula before credentials were redacted (caches made then must keep hitting)."""
    request = json.dumps(
        {
            "model": identity,
            "prompt": prompt if isinstance(prompt, str) else to_messages(prompt),
            "sampling": sampling.as_dict(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(request.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "config",
    [
        LLMConfig(
            backend="openai",
            model="Qwen/Qwen3-8B",
            base_url="http://127.0.0.1:8000/v1",
            extra_body={"top_k": 20, "stop": ["</s>"]},
            chat_template_kwargs={"enable_thinking": False},
        ),
        LLMConfig(backend="transformers", model="smollm2-offline"),
        LLMConfig(backend="fake", model="fake"),
    ],
)
def test_a_secret_free_request_keeps_its_old_key(tmp_path, config):
    inner = FakeBackend()
    inner.identity = config.identity()
    c = CachedClient(inner, tmp_path)
    try:
        for prompt, s in [
            ("hello", Sampling()),
            ([{"role": "user", "content": "hi é"}], Sampling(temperature=0.7, seed=3)),
        ]:
            assert c.key(prompt, s) == old_key(config.identity(), prompt, s)
    finally:
        c.close()


def test_two_keys_share_one_entry_and_the_file_holds_neither(tmp_path):
    def client(key: str, calls: list):
        inner = FakeBackend(lambda p, s: calls.append(p) or "ANSWER")
        inner.identity = LLMConfig(
            backend="openai",
            model="m",
            base_url="http://127.0.0.1:1/v1",
            extra_body={
                "api_key": key,
                "headers": {"Authorization": f"Bearer {key}"},
                "x-other": "sk-" + key,
                "top_k": 5,
            },
        ).identity()
        return CachedClient(inner, tmp_path)

    first, second = [], []
    a = client("FIRSTsecretValue123", first)
    out_a = a.generate(["q"])
    a.close()
    b = client("SECONDsecretValue456", second)
    out_b = b.generate(["q"])
    assert a.key("q") == b.key("q") and len(first) == 1 and second == []
    assert out_a[0].text == out_b[0].text == "ANSWER" and out_b[0].cached
    stored = json.loads(b._db.execute("SELECT request FROM calls").fetchone()[0])
    b.close()
    assert stored["model"]["extra_body"] == {
        "api_key": REDACTED,
        "headers": {"Authorization": REDACTED},
        "x-other": REDACTED,
        "top_k": 5,
    }
    for f in tmp_path.iterdir():
        data = f.read_bytes()
        assert b"FIRSTsecretValue123" not in data and b"SECONDsecretValue456" not in data, f


# --- the command line ---------------------------------------------------------------------------


def test_redact_command():
    argv = [
        "lazymem",
        "eval",
        "recipe.yaml",
        "--out",
        "runs/hf_dataset_cache_dir",
        "--set",
        "pipeline.mpm.extra_body.api_key=plainvalue",
        "--set",
        "pipeline.mpm.extra_body.x=sk-abcdefgh12345678",
        "--set=pipeline.answer.extra_body.headers.Authorization=anything",
        "--set",
        "pipeline.retrieval.n=20",
        "--set",
        'pipeline.mpm.extra_body={"h": {"Authorization": "Bearer abcdefgh1234"}}',
        "--api-key",
        "flagvalue",
        "--hf-token=flagvalue2",
        "--limit",
        "5",
        "--set",
        "pipeline.mpm.model=gpt-4o-mini",
    ]
    assert redact_command(argv) == [
        "lazymem",
        "eval",
        "recipe.yaml",
        "--out",
        "runs/hf_dataset_cache_dir",
        "--set",
        f"pipeline.mpm.extra_body.api_key={REDACTED}",
        "--set",
        f"pipeline.mpm.extra_body.x={REDACTED}",
        f"--set=pipeline.answer.extra_body.headers.Authorization={REDACTED}",
        "--set",
        "pipeline.retrieval.n=20",
        "--set",
        f"pipeline.mpm.extra_body={REDACTED}",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--limit",
        "5",
        "--set",
        "pipeline.mpm.model=gpt-4o-mini",
    ]


# --- the sentinel run -----------------------------------------------------------------------------


def test_sentinel_secrets_reach_no_written_byte_and_no_log(tmp_path, monkeypatch, caplog, capsys):
    s_env = "ENVsentinel-0123456789abcdef"  # read from the variable named by api_key_env
    s_named = "NAMEDsentinel42"  # under a secret name, does not look like a key
    s_unknown = "sk-" + "UNKNOWNsentinel0123456789"  # under an unknown name, looks like a key
    s_header = "HDRsentinel0123456789"  # headers Authorization: Bearer ...
    s_header2 = "HDR2sentinel0123456789"  # under a non-secret header name
    s_set = "SETsentinel0123"  # --set with a secret key on the command line
    s_set2 = "sk-" + "SETVALUEsentinel0123456"  # --set with a secret-looking value
    s_flag = "FLAGsentinel0123"  # --api-key flag
    sentinels = [s_env, s_named, s_unknown, s_header, s_header2, s_set, s_set2, s_flag]
    monkeypatch.setenv("LAZYMEM_SENTINEL_KEY", s_env)
    extra = {
        "api_key": s_named,
        "x-unknown": s_unknown,
        "top_k": 5,
        "headers": {"Authorization": f"Bearer {s_header}", "X-Forward": f"Bearer {s_header2}"},
    }
    cache = tmp_path / "cache"
    llm = LLMConfig(
        backend="fake",
        model="fake",
        cache_dir=str(cache),
        api_key_env="LAZYMEM_SENTINEL_KEY",
        extra_body=extra,
        chat_template_kwargs={"enable_thinking": False, "auth": s_named},
    )
    llm_dict = {f.name: getattr(llm, f.name) for f in dataclasses.fields(llm)}
    cfg = EvalConfig.from_dict(
        {
            "dataset": SYNTH,
            "limit": 2,
            "llm_cache_dir": str(cache),
            "pipeline": {
                "retrieval": {"dense_model": None, "n": 3},
                "window": {"w": 1},
                "mpm": llm_dict,
                "answer": llm_dict,
            },
        }
    )
    command = [
        "lazymem",
        "eval",
        "--limit",
        "2",
        "--set",
        f"pipeline.mpm.extra_body.api_key={s_set}",
        "--set",
        f"pipeline.mpm.extra_body.other={s_set2}",
        "--api-key",
        s_flag,
    ]
    caplog.set_level(logging.DEBUG)
    s = evaluate(cfg, tmp_path / "run", progress=False, command=command)
    assert s["counts"]["ok"] == 2
    # The fake backend's identity has no extra_body: send the real LLMConfig identity through the cache too.
    inner = FakeBackend()
    inner.identity = llm.identity()
    cached = CachedClient(inner, cache)
    cached.generate(["a prompt", [{"role": "user", "content": "a chat"}]])
    cached.close()
    logging.getLogger("lazymem").info("LLM identity (redacted): %s", redact(llm.identity()))
    captured = capsys.readouterr()

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"records.jsonl", "summary.json", "manifest.json", CachedClient.FILENAME}
    for p in written:
        data = p.read_bytes()
        for secret in sentinels:
            assert secret.encode() not in data, (p, secret)
    for secret in sentinels:
        assert secret not in captured.out + captured.err and secret not in caplog.text, secret

    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    mpm = m["config"]["pipeline"]["mpm"]
    assert mpm["api_key_env"] == "LAZYMEM_SENTINEL_KEY" and mpm["model"] == "fake"
    assert mpm["extra_body"] == {
        "api_key": REDACTED,
        "x-unknown": REDACTED,
        "top_k": 5,
        "headers": {"Authorization": REDACTED, "X-Forward": REDACTED},
    }
    assert m["runs"][-1]["command"] == [
        "lazymem",
        "eval",
        "--limit",
        "2",
        "--set",
        f"pipeline.mpm.extra_body.api_key={REDACTED}",
        "--set",
        f"pipeline.mpm.extra_body.other={REDACTED}",
        "--api-key",
        REDACTED,
    ]
    assert m["runs"][-1]["status"] == m["status"] == "done"  # the runner's later updates still reach the manifest
