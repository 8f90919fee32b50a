"""The client interface every language-model call goes through: config, sampling, completions.

``make_client(LLMConfig(...))`` (in ``lazymem.llm.factory``) returns an ``LLMClient``:
``generate(prompts, sampling)`` takes plain strings (one user message each) or chat message
lists and returns one ``Completion`` per prompt, in order. A prompt that fails (connection
lost, server error after retries, out of memory) comes back as ``Completion(error=...)``
instead of raising, so a run records it and goes on; only configuration mistakes raise.

The API key is read from the environment variable *named* by ``LLMConfig.api_key_env`` at
call time; it is never stored in the config, the cache, errors or logs.

>>> to_messages("Hi")
[{'role': 'user', 'content': 'Hi'}]
>>> Sampling(max_tokens=10, stop=["\\n"]).as_dict()["stop"]
['\\n']
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from lazymem.errors import ConfigError, check_fields
from lazymem.fields import h, require

BACKENDS = ("openai", "transformers", "llamacpp", "vllm", "fake")
CONTENT_ADAPTER_BACKENDS = ("llamacpp", "transformers")  # the engines that run extra_body.content_adapter
# How a JSON schema reaches an OpenAI-compatible server: OpenAI's response_format (OpenAI
# and vLLM honour it; `transformers serve` silently ignores it), vLLM's own extra_body
# field {"structured_outputs": {"json": schema}} (vLLM >= 0.12; guided_json was removed),
# or not at all. Callers validate the output either way.
STRUCTURED_OUTPUTS = ("response_format", "structured_outputs", "none")
# How LLMConfig.thinking_budget caps a thinking model's reasoning (see LLMConfig's docstring).
THINKING_BUDGET_MODES = ("two_phase", "server")
DTYPES = ("auto", "float32", "bfloat16", "float16")

Prompt = str | Sequence[Mapping[str, str]]


def to_messages(prompt: Prompt) -> list[dict]:
    """A chat message list for a prompt: a string becomes one user message."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


@dataclass(frozen=True)
class Sampling:
    """Decoding settings of one generate call (OpenAI semantics on every backend)."""

    temperature: float = field(default=0.0, metadata=h("0 = greedy"))
    top_p: float = field(default=1.0, metadata=h("nucleus mass in (0, 1]"))
    max_tokens: int = field(default=512, metadata=h("most new tokens per completion"))
    seed: int | None = field(default=0, metadata=h("sampling seed (servers may ignore it)"))
    stop: tuple[str, ...] | None = field(
        default=None, metadata=h("strings that end a completion; not included in the text")
    )
    json_schema: dict | None = field(default=None, metadata=h("request output matching this JSON schema"))
    logit_bias: dict | None = field(
        default=None,
        metadata=h(
            "additive logit bias by token TEXT (its first token), e.g. {' KEEP': 2.2}: a decision prior "
            "correction; transformers and vLLM engines (an OpenAI server needs token ids: not supported)"
        ),
    )
    grounded: tuple[str, ...] | None = field(
        default=None,
        metadata=h(
            "grounded decoding: one text per decision (a window's messages, in order); item i's compressed_content "
            "can only be a verbatim span of text i (lazymem.llm.grounding); backends transformers and llamacpp"
        ),
    )
    trace_keep_bias: tuple[float, ...] | None = field(
        default=None,
        metadata=h(
            "one number per line of a <think> decision trace: added to ' KEEP''s logit where line i's op is written "
            "(after its '->'), on top of logit_bias (a per-message KEEP prior, e.g. pipeline.keep_prior); backends "
            "transformers and llamacpp"
        ),
    )
    trace_independent: bool = field(
        default=False,
        metadata=h(
            "decide each <think> trace line's op without the ops before it: at line i's '->' the op is KEEP when "
            "' KEEP''s logit (logit_bias and trace_keep_bias added) is at least ' DROP''s, and the model is made to "
            "write DROP, so every line is read with the earlier ops DROP; the array then follows the recorded "
            "decisions (lazymem.llm.trace.IndependentOps). Needs a decision schema whose array follows its trace "
            "(pipeline.structured_trace); backends transformers and llamacpp"
        ),
    )

    def __post_init__(self):
        num = (int, float)
        require(
            isinstance(self.temperature, num)
            and not isinstance(self.temperature, bool)
            and math.isfinite(self.temperature)
            and self.temperature >= 0,
            "Sampling",
            "temperature",
            self.temperature,
            "must be a number >= 0",
        )
        require(
            isinstance(self.top_p, num) and 0 < self.top_p <= 1, "Sampling", "top_p", self.top_p, "must be in (0, 1]"
        )
        require(
            isinstance(self.max_tokens, int) and not isinstance(self.max_tokens, bool) and self.max_tokens >= 1,
            "Sampling",
            "max_tokens",
            self.max_tokens,
            "must be an integer >= 1",
        )
        require(
            self.seed is None or (isinstance(self.seed, int) and not isinstance(self.seed, bool)),
            "Sampling",
            "seed",
            self.seed,
            "must be an integer or None",
        )
        if isinstance(self.stop, (list, str)):  # accept a list (YAML) or one string; store a tuple
            object.__setattr__(self, "stop", (self.stop,) if isinstance(self.stop, str) else tuple(self.stop))
        require(
            self.stop is None or (all(isinstance(s, str) and s for s in self.stop) and len(self.stop) > 0),
            "Sampling",
            "stop",
            self.stop,
            "must be None or non-empty strings",
        )
        if self.json_schema is not None:
            require(
                isinstance(self.json_schema, Mapping),
                "Sampling",
                "json_schema",
                self.json_schema,
                "must be a JSON schema dict or None",
            )
            try:
                json.dumps(self.json_schema)
            except (TypeError, ValueError):
                require(False, "Sampling", "json_schema", self.json_schema, "must be JSON-serialisable")

        if self.logit_bias is not None:
            require(
                isinstance(self.logit_bias, Mapping)
                and len(self.logit_bias) > 0
                and all(
                    isinstance(k, str)
                    and k
                    and isinstance(v, (int, float))
                    and not isinstance(v, bool)
                    and math.isfinite(v)
                    for k, v in self.logit_bias.items()
                ),
                "Sampling",
                "logit_bias",
                self.logit_bias,
                "must be None or a non-empty {token text: finite number} mapping",
            )
        if isinstance(self.grounded, list):
            object.__setattr__(self, "grounded", tuple(self.grounded))
        require(
            self.grounded is None
            or (isinstance(self.grounded, tuple) and all(isinstance(t, str) for t in self.grounded)),
            "Sampling",
            "grounded",
            self.grounded,
            "must be None or a list of message texts",
        )
        if isinstance(self.trace_keep_bias, list):
            object.__setattr__(self, "trace_keep_bias", tuple(self.trace_keep_bias))
        require(
            self.trace_keep_bias is None
            or (
                isinstance(self.trace_keep_bias, tuple)
                and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in self.trace_keep_bias
                )
            ),
            "Sampling",
            "trace_keep_bias",
            self.trace_keep_bias,
            "must be None or a list of finite numbers",
        )
        require(
            isinstance(self.trace_independent, bool),
            "Sampling",
            "trace_independent",
            self.trace_independent,
            "must be true or false",
        )

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict:
        """Plain JSON-ready values (for cache keys and run manifests)."""
        d = dataclasses.asdict(self)
        d["stop"] = list(self.stop) if self.stop is not None else None
        if self.logit_bias is None:
            del d["logit_bias"]  # keys (and caches) from before the field existed stay valid
        if self.grounded is None:
            del d["grounded"]  # likewise
        else:
            d["grounded"] = list(self.grounded)
        if self.trace_keep_bias is None:
            del d["trace_keep_bias"]  # likewise
        else:
            d["trace_keep_bias"] = list(self.trace_keep_bias)
        if not self.trace_independent:
            del d["trace_independent"]  # likewise
        return d


def bias_token_ids(tokenizer: Any, logit_bias: Mapping[str, float]) -> dict[int, float]:
    """{token id: bias} for a Sampling.logit_bias: each text's FIRST token (a word's leading-space form
    is a different token from its bare form, so write ' KEEP' for the trace's ``-> KEEP``).

    >>> class Tok:
    ...     def encode(self, text, add_special_tokens=False):
    ...         return [len(text), 0]
    >>> bias_token_ids(Tok(), {" KEEP": 2.0})
    {5: 2.0}
    """
    out: dict[int, float] = {}
    for text, bias in logit_bias.items():
        ids = tokenizer.encode(text, add_special_tokens=False)
        if not ids:
            raise ConfigError(f"Sampling.logit_bias: {text!r} encodes to no token")
        out[int(ids[0])] = out.get(int(ids[0]), 0.0) + float(bias)
    return out


@dataclass(frozen=True)
class Completion:
    """The answer to one prompt, or the error that stopped it."""

    text: str  # "" when error is set
    prompt_tokens: int | None  # as counted by the backend's tokenizer; None when unknown
    completion_tokens: int | None
    latency_s: float  # wall time of the request (of the whole batch for in-process batches)
    cached: bool = False  # True when read back from the CachedClient store
    error: str | None = None  # "ExceptionType: message" of a failed prompt
    model: str = ""
    finish_reason: str | None = None  # "stop", "length" (hit max_tokens) or None when unknown
    # The reasoning trace a server returned beside the text (DeepSeek's and older vLLM's
    # message.reasoning_content, vLLM's message.reasoning, the think phase of a thinking budget);
    # None when it sent none (a trace left inline in the text as <think>...</think> stays there).
    reasoning: str | None = None
    # Of prompt_tokens, those the engine served from a prefix cache (llama.cpp's KV prefix reuse, an
    # OpenAI-compatible server's usage.prompt_tokens_details.cached_tokens); None when it does not say.
    cached_prompt_tokens: int | None = None
    # A call the engine ran as several requests (a trace pass then an array pass, a think phase then the
    # answer): one mapping each (lazymem.llm.usage.engine_pass); None for one request.
    passes: tuple[Mapping[str, Any], ...] | None = None
    # The prompt (in Qwen3's chat format) and the output counted with the Qwen3 tokenizer, for comparison
    # across systems (lazymem.llm.usage.with_qwen3); None when not counted.
    qwen3_prompt_tokens: int | None = None
    qwen3_completion_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for name in _LATER_FIELDS:
            if d[name] is None:
                del d[name]  # stored entries stay as they were before the field existed
        if d.get("passes") is not None:
            d["passes"] = [dict(p) for p in d["passes"]]
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> Completion:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        if values.get("passes") is not None:
            values["passes"] = tuple(dict(p) for p in values["passes"])
        return cls(**values)


_LATER_FIELDS = ("reasoning", "cached_prompt_tokens", "passes", "qwen3_prompt_tokens", "qwen3_completion_tokens")


def error_completion(exc: BaseException, model: str, latency_s: float = 0.0, secret: str | None = None) -> Completion:
    """A Completion recording `exc`, with `secret` (an API key) masked out of the message."""
    msg = f"{type(exc).__name__}: {exc}"
    if secret:
        msg = msg.replace(secret, "***")
    return Completion(text="", prompt_tokens=None, completion_tokens=None, latency_s=latency_s, error=msg, model=model)


@dataclass(frozen=True)
class LLMConfig:
    """Which model answers and how to reach it; the same keys as a recipe's ``llm:`` section.

    **Thinking budget** (``thinking_budget``: at most this many tokens of reasoning, then the
    answer; the paper's reward judge: Qwen3-32B, 1,024 output tokens, 512 of them thinking). A
    thinking model left unbounded under ``max_tokens`` is cut off mid-thought and never answers.
    ``thinking_budget_mode`` says how the cap is applied (backend 'openai'):

    - ``"two_phase"`` (the default; Qwen3's documented way): request 1 lets the model think with
      ``max_tokens = min(budget, Sampling.max_tokens)`` and stop ``"</think>"``; request 2 sends the
      prompt plus an assistant message ``"<think>\\n{trace}\\n</think>\\n\\n"`` (the trace as
      written, cut or not) with ``continue_final_message: true, add_generation_prompt: false``,
      so the model writes only the answer, with ``max_tokens`` = what request 1 left. Needs a
      server that continues a final assistant message (vLLM, SGLang); any reasoning parser is
      fine. The Completion's text is the answer, its ``reasoning`` the trace. Exact on every
      such server, at the price of a second request (a prefix cache makes its prefill cheap).
    - ``"server"``: one request carrying vLLM's ``thinking_token_budget`` sampling parameter;
      the server forces the end of reasoning at the budget. Needs vLLM started with
      ``--reasoning-parser`` (and ``--reasoning-config`` where the parser does not name the
      think tokens) in a version that has the parameter; an older vLLM or another server
      ignores it, and the cut-off replies then show as the judge's ``truncated`` failures.

    ``chat_template_kwargs: {enable_thinking: true}`` turns Qwen3's thinking on (its default).
    """

    backend: str = field(
        default="transformers",
        metadata=h(
            f"one of {BACKENDS}, or 'auto': llamacpp where llama-cpp-python is installed and the model is a GGUF "
            "('smollm2-offline' or a .gguf file), else transformers"
        ),
    )
    model: str = field(
        default="smollm2-offline",
        metadata=h(
            "hub id or local dir; transformers also takes 'smollm2-offline'; for openai the server's model name"
        ),
    )
    base_url: str | None = field(default=None, metadata=h("openai: server URL ending in /v1; None = api.openai.com"))
    api_key_env: str = field(
        default="OPENAI_API_KEY", metadata=h("NAME of the environment variable holding the API key (never the key)")
    )
    concurrency: int = field(default=64, metadata=h("openai: requests in flight at once"))
    timeout: float = field(default=180.0, metadata=h("openai: seconds per request attempt"))
    max_retries: int = field(default=3, metadata=h("openai: retries after the first attempt (0 = none)"))
    retry_wait: float = field(
        default=1.0, metadata=h("openai: first backoff wait in seconds (doubles, jittered, <= 60)")
    )
    batch_size: int = field(default=8, metadata=h("transformers: prompts per generate batch"))
    device: str = field(default="cpu", metadata=h("transformers: torch device"))
    adapter: str | None = field(
        default=None,
        metadata=h(
            "transformers: a PEFT adapter directory loaded on top of `model` (merged at load); "
            "'lazymem-135m' = the shipped LazyMem-135M adapter (model: smollm2-offline)"
        ),
    )
    num_threads: int | None = field(
        default=None, metadata=h("transformers: torch CPU threads while generating; None = torch's setting")
    )
    dtype: str = field(default="auto", metadata=h(f"one of {DTYPES}; auto = float32 on CPU, the checkpoint's on GPU"))
    cache_dir: str | None = field(default=None, metadata=h("directory of the call cache (sqlite); None = no cache"))
    extra_body: dict | None = field(
        default=None,
        metadata=h(
            "backend-specific sampling extras (top_k, repetition_penalty, ...): openai extra_body, "
            "vllm SamplingParams kwargs, transformers generate kwargs; llamacpp: quant, n_ctx; "
            "llamacpp and transformers: content_adapter (a second adapter writes a trace-following "
            "decoding's array pass)"
        ),
    )
    chat_template_kwargs: dict | None = field(
        default=None, metadata=h("passed to the chat template, e.g. {'enable_thinking': false} for Qwen3")
    )
    structured_output: str = field(
        default="response_format", metadata=h(f"openai: how a json_schema is sent, one of {STRUCTURED_OUTPUTS}")
    )
    thinking_budget: int | None = field(
        default=None,
        metadata=h(
            "openai: most reasoning tokens before the answer must start (the paper's judge: 512); None = no cap"
        ),
    )
    thinking_budget_mode: str = field(
        default="two_phase",
        metadata=h(f"openai: how thinking_budget is applied, one of {THINKING_BUDGET_MODES} (see the class docstring)"),
    )

    def __post_init__(self):
        if self.backend == "auto":  # the fastest engine installed here for this model, fixed at load
            object.__setattr__(self, "backend", cpu_backend(self.model))
        if self.adapter is not None and (not isinstance(self.adapter, str) or not self.adapter.strip()):
            raise ConfigError(f"LLMConfig.adapter={self.adapter!r}: must be an adapter directory or None")
        if self.adapter is not None and self.backend not in ("transformers", "llamacpp", "fake"):
            raise ConfigError(
                "LLMConfig.adapter is for backends 'transformers' and "
                f"'llamacpp' (got {self.backend!r}); "
                "serve an adapter with vLLM's --lora-modules and name it as the model instead"
            )

        if "content_adapter" in (self.extra_body or {}):
            content = self.extra_body["content_adapter"]
            if self.backend not in CONTENT_ADAPTER_BACKENDS:
                raise ConfigError(
                    f"LLMConfig.extra_body.content_adapter is an option of the in-process engines "
                    f"('llamacpp', 'transformers'; got backend {self.backend!r}): the array pass "
                    "written by a second adapter on the same base"
                )
            if not isinstance(content, str) or not content.strip():
                raise ConfigError(
                    f"LLMConfig.extra_body.content_adapter={content!r}: must be an adapter directory "
                    "(or a shipped name such as 'lazymem-135m')"
                )

        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        require(self.backend in BACKENDS, "LLMConfig", "backend", self.backend, f"must be one of {BACKENDS}")
        require(
            isinstance(self.model, str) and self.model.strip() != "",
            "LLMConfig",
            "model",
            self.model,
            "must be a model name or path",
        )
        require(
            self.base_url is None or (isinstance(self.base_url, str) and re.match(r"https?://", self.base_url)),
            "LLMConfig",
            "base_url",
            self.base_url,
            "must be None or an http(s):// URL",
        )
        # The value is never echoed: a key pasted here by mistake must not reach a log.
        if not (
            isinstance(self.api_key_env, str)
            and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", self.api_key_env) is not None
            and not self.api_key_env.lower().startswith("sk")
        ):
            raise ConfigError(
                "LLMConfig.api_key_env: must be the NAME of an environment "
                "variable (e.g. OPENAI_API_KEY), "
                "not the key itself"
            )
        require(
            is_int(self.concurrency) and self.concurrency >= 1,
            "LLMConfig",
            "concurrency",
            self.concurrency,
            "must be an integer >= 1",
        )
        require(
            isinstance(self.timeout, (int, float)) and not isinstance(self.timeout, bool) and self.timeout > 0,
            "LLMConfig",
            "timeout",
            self.timeout,
            "must be a number of seconds > 0",
        )
        require(
            is_int(self.max_retries) and self.max_retries >= 0,
            "LLMConfig",
            "max_retries",
            self.max_retries,
            "must be an integer >= 0",
        )
        require(
            isinstance(self.retry_wait, (int, float)) and self.retry_wait >= 0,
            "LLMConfig",
            "retry_wait",
            self.retry_wait,
            "must be >= 0",
        )
        require(
            is_int(self.batch_size) and self.batch_size >= 1,
            "LLMConfig",
            "batch_size",
            self.batch_size,
            "must be an integer >= 1",
        )
        require(
            isinstance(self.device, str) and self.device != "",
            "LLMConfig",
            "device",
            self.device,
            "must be a torch device such as 'cpu'",
        )
        require(
            self.num_threads is None or (is_int(self.num_threads) and self.num_threads >= 1),
            "LLMConfig",
            "num_threads",
            self.num_threads,
            "must be None or an integer >= 1",
        )
        require(self.dtype in DTYPES, "LLMConfig", "dtype", self.dtype, f"must be one of {DTYPES}")
        require(
            self.cache_dir is None or isinstance(self.cache_dir, str),
            "LLMConfig",
            "cache_dir",
            self.cache_dir,
            "must be a path string or None",
        )
        for name in ("extra_body", "chat_template_kwargs"):
            require(
                getattr(self, name) is None or isinstance(getattr(self, name), Mapping),
                "LLMConfig",
                name,
                getattr(self, name),
                "must be a mapping or None",
            )
        require(
            self.structured_output in STRUCTURED_OUTPUTS,
            "LLMConfig",
            "structured_output",
            self.structured_output,
            f"must be one of {STRUCTURED_OUTPUTS}",
        )
        require(
            self.thinking_budget is None or (is_int(self.thinking_budget) and self.thinking_budget >= 1),
            "LLMConfig",
            "thinking_budget",
            self.thinking_budget,
            "must be None or an integer >= 1 (tokens)",
        )
        require(
            self.thinking_budget is None or self.backend in ("openai", "fake"),
            "LLMConfig",
            "thinking_budget",
            self.thinking_budget,
            f"is applied by backend 'openai' only (got backend {self.backend!r}); set it to null",
        )
        require(
            self.thinking_budget_mode in THINKING_BUDGET_MODES,
            "LLMConfig",
            "thinking_budget_mode",
            self.thinking_budget_mode,
            f"must be one of {THINKING_BUDGET_MODES}",
        )

    @classmethod
    def from_dict(cls, values: Mapping) -> LLMConfig:
        """Build from a mapping (a YAML section); unknown keys raise ConfigError naming them."""
        check_fields(cls, values, "LLMConfig")
        return cls(**values)

    @classmethod
    def local_or_server(cls, model: str, base_url: str = "", **kw) -> LLMConfig:
        """`model` on the OpenAI-compatible server at `base_url`, or in this process when it is empty.

        Other settings pass through as keyword arguments.

        >>> c = LLMConfig.local_or_server("Qwen/Qwen3-8B", "http://127.0.0.1:8000/v1", concurrency=8)
        >>> (c.backend, c.model, c.base_url, c.concurrency)
        ('openai', 'Qwen/Qwen3-8B', 'http://127.0.0.1:8000/v1', 8)
        >>> c = LLMConfig.local_or_server("smollm2-offline", batch_size=4)
        >>> (c.backend, c.model, c.base_url, c.batch_size)
        ('transformers', 'smollm2-offline', None, 4)
        """
        if base_url:
            return cls(backend="openai", base_url=base_url, model=model, **kw)
        return cls(backend="transformers", model=model, **kw)

    def identity(self) -> dict:
        """What decides the output besides prompt and sampling (the cache key's model part)."""
        extra = self.extra_body
        if extra and extra.get("content_adapter"):  # its weights' hash, not only its path, as for ``adapter``
            extra = {**extra, "content_adapter": _adapter_identity(extra["content_adapter"])}
        out = {
            "backend": self.backend,
            "model": self.model,
            "extra_body": extra,
            "chat_template_kwargs": self.chat_template_kwargs,
            "structured_output": self.structured_output if self.backend == "openai" else None,
        }
        if self.adapter is not None:  # only when set, so caches made before adapters existed stay valid
            out["adapter"] = _adapter_identity(self.adapter)
        if self.thinking_budget is not None:  # likewise
            out["thinking_budget"] = [self.thinking_budget, self.thinking_budget_mode]
        return out


@runtime_checkable
class LLMClient(Protocol):
    """What every stage calls: one Completion per prompt, in order, errors captured per prompt."""

    model_id: str
    identity: dict

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]: ...


def generate_each(client: LLMClient, prompts: Sequence[Prompt], samplings: Sequence[Sampling]) -> list[Completion]:
    """One completion per (prompt, sampling): the client's own ``generate_each`` where it has one (llama.cpp
    decodes them in one batch), else one ``generate`` call a prompt."""
    if not prompts:
        return []
    each = getattr(client, "generate_each", None)
    if each is not None:
        return each(list(prompts), list(samplings))
    return [client.generate([p], s)[0] for p, s in zip(prompts, samplings, strict=True)]


def cpu_backend(model: str) -> str:
    """The fastest installed in-process engine for ``model``: 'llamacpp' for a GGUF model where
    llama-cpp-python is installed (several times faster on CPU), else 'transformers'.

    >>> cpu_backend("Qwen/Qwen3-4B")
    'transformers'
    """
    import importlib.util

    from lazymem.llm.models import SMOLLM2_ALIAS

    gguf = model == SMOLLM2_ALIAS or str(model).endswith(".gguf")
    return "llamacpp" if gguf and importlib.util.find_spec("llama_cpp") is not None else "transformers"


def run_sync(coro):
    """Run a coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _adapter_identity(path: str) -> str:
    """An adapter's cache identity: its path and the sha256 of its weights (a retrained adapter
    at the same path must not hit the old one's cached outputs)."""
    import hashlib
    from pathlib import Path

    from lazymem.llm.models import resolve_adapter

    p = Path(resolve_adapter(path))
    h = hashlib.sha256()
    for f in sorted(p.glob("adapter_model.*")) + sorted(p.glob("adapter_config.json")):
        h.update(f.read_bytes())
    return f"{p.resolve()}#{h.hexdigest()[:16]}"
