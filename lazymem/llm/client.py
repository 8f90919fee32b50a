"""One client interface for every language-model call (processor, answerer, judge, teacher).

``make_client(LLMConfig(...))`` returns an ``LLMClient``: ``generate(prompts, sampling)``
takes plain strings (one user message each) or chat message lists and returns one
``Completion`` per prompt, in order. A prompt that fails (connection lost, server error
after retries, out of memory) comes back as ``Completion(error=...)`` instead of raising,
so a run records it and goes on; only configuration mistakes raise.

Backends:
- ``openai``: any OpenAI-compatible server (OpenAI, a vLLM server, ``transformers serve``)
  through the ``openai`` package, ``concurrency`` requests in flight, retries with
  jittered exponential backoff on connection errors, 408/409/429 and 5xx.
- ``transformers``: the model in this process, left-padded batches of ``batch_size``,
  greedy when temperature is 0; JSON-schema constrained decoding with outlines.
- ``vllm``: ``vllm.LLM`` in this process (CUDA only).
- ``fake``: scripted answers, for tests.

With ``cache_dir`` set, calls go through ``CachedClient``: one sqlite file keyed by the
sha256 of (backend and model identity, prompt, sampling), so a rerun is free and exact.
The API key is read from the environment variable *named* by ``api_key_env`` at call time;
it is never stored in the config, the cache, errors or logs.

>>> to_messages("Hi")
[{'role': 'user', 'content': 'Hi'}]
>>> Sampling(max_tokens=10, stop=["\\n"]).as_dict()["stop"]
['\\n']
>>> FakeBackend(["KEEP"]).generate(["window 1"])[0].text
'KEEP'
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, Union, runtime_checkable

from lazymem.errors import ConfigError, check_fields

log = logging.getLogger(__name__)

BACKENDS = ("openai", "transformers", "vllm", "fake")
# How a JSON schema reaches an OpenAI-compatible server: OpenAI's response_format (OpenAI
# and vLLM honour it; `transformers serve` silently ignores it), vLLM's own extra_body
# field {"structured_outputs": {"json": schema}} (vLLM >= 0.12; guided_json was removed),
# or not at all. Callers validate the output either way.
STRUCTURED_OUTPUTS = ("response_format", "structured_outputs", "none")
DTYPES = ("auto", "float32", "bfloat16", "float16")

Prompt = Union[str, Sequence[Mapping[str, str]]]


def _h(text: str) -> dict:
    return {"help": text}


def to_messages(prompt: Prompt) -> list[dict]:
    """A chat message list for a prompt: a string becomes one user message."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


@dataclass(frozen=True)
class Sampling:
    """Decoding settings of one generate call (OpenAI semantics on every backend)."""

    temperature: float = field(default=0.0, metadata=_h("0 = greedy"))
    top_p: float = field(default=1.0, metadata=_h("nucleus mass in (0, 1]"))
    max_tokens: int = field(default=512, metadata=_h("most new tokens per completion"))
    seed: int | None = field(default=0, metadata=_h("sampling seed (servers may ignore it)"))
    stop: tuple[str, ...] | None = field(default=None, metadata=_h("strings that end a completion; not included in the text"))
    json_schema: dict | None = field(default=None, metadata=_h("request output matching this JSON schema"))

    def __post_init__(self):
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ConfigError(f"Sampling.{name}={getattr(self, name)!r}: {allowed}")

        num = (int, float)
        need(isinstance(self.temperature, num) and not isinstance(self.temperature, bool)
             and math.isfinite(self.temperature) and self.temperature >= 0, "temperature", "must be a number >= 0")
        need(isinstance(self.top_p, num) and 0 < self.top_p <= 1, "top_p", "must be in (0, 1]")
        need(isinstance(self.max_tokens, int) and not isinstance(self.max_tokens, bool) and self.max_tokens >= 1,
             "max_tokens", "must be an integer >= 1")
        need(self.seed is None or (isinstance(self.seed, int) and not isinstance(self.seed, bool)), "seed",
             "must be an integer or None")
        if isinstance(self.stop, (list, str)):  # accept a list (YAML) or one string; store a tuple
            object.__setattr__(self, "stop", (self.stop,) if isinstance(self.stop, str) else tuple(self.stop))
        need(self.stop is None or (all(isinstance(s, str) and s for s in self.stop) and len(self.stop) > 0),
             "stop", "must be None or non-empty strings")
        if self.json_schema is not None:
            need(isinstance(self.json_schema, Mapping), "json_schema", "must be a JSON schema dict or None")
            try:
                json.dumps(self.json_schema)
            except (TypeError, ValueError):
                need(False, "json_schema", "must be JSON-serialisable")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict:
        """Plain JSON-ready values (for cache keys and run manifests)."""
        d = dataclasses.asdict(self)
        d["stop"] = list(self.stop) if self.stop is not None else None
        return d


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

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> "Completion":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def error_completion(exc: BaseException, model: str, latency_s: float = 0.0, secret: str | None = None) -> Completion:
    """A Completion recording `exc`, with `secret` (an API key) masked out of the message."""
    msg = f"{type(exc).__name__}: {exc}"
    if secret:
        msg = msg.replace(secret, "***")
    return Completion(text="", prompt_tokens=None, completion_tokens=None, latency_s=latency_s, error=msg, model=model)


@dataclass(frozen=True)
class LLMConfig:
    """Which model answers and how to reach it; the same keys as a recipe's ``llm:`` section."""

    backend: str = field(default="transformers", metadata=_h(f"one of {BACKENDS}"))
    model: str = field(
        default="smollm2-offline",
        metadata=_h("hub id or local dir; transformers also takes 'smollm2-offline'; for openai the server's model name"))
    base_url: str | None = field(default=None, metadata=_h("openai: server URL ending in /v1; None = api.openai.com"))
    api_key_env: str = field(
        default="OPENAI_API_KEY", metadata=_h("NAME of the environment variable holding the API key (never the key)"))
    concurrency: int = field(default=64, metadata=_h("openai: requests in flight at once"))
    timeout: float = field(default=180.0, metadata=_h("openai: seconds per request attempt"))
    max_retries: int = field(default=3, metadata=_h("openai: retries after the first attempt (0 = none)"))
    retry_wait: float = field(default=1.0, metadata=_h("openai: first backoff wait in seconds (doubles, jittered, <= 60)"))
    batch_size: int = field(default=8, metadata=_h("transformers: prompts per generate batch"))
    device: str = field(default="cpu", metadata=_h("transformers: torch device"))
    num_threads: int | None = field(default=None, metadata=_h("transformers: torch CPU threads while generating; None = torch's setting"))
    dtype: str = field(default="auto", metadata=_h(f"one of {DTYPES}; auto = float32 on CPU, the checkpoint's on GPU"))
    cache_dir: str | None = field(default=None, metadata=_h("directory of the call cache (sqlite); None = no cache"))
    extra_body: dict | None = field(
        default=None,
        metadata=_h("backend-specific sampling extras (top_k, repetition_penalty, ...): openai extra_body, "
                    "vllm SamplingParams kwargs, transformers generate kwargs"))
    chat_template_kwargs: dict | None = field(
        default=None, metadata=_h("passed to the chat template, e.g. {'enable_thinking': false} for Qwen3"))
    structured_output: str = field(
        default="response_format", metadata=_h(f"openai: how a json_schema is sent, one of {STRUCTURED_OUTPUTS}"))

    def __post_init__(self):
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        def need(ok: bool, name: str, allowed: str, show: bool = True):
            if not ok:
                shown = f"={getattr(self, name)!r}" if show else ""
                raise ConfigError(f"LLMConfig.{name}{shown}: {allowed}")

        need(self.backend in BACKENDS, "backend", f"must be one of {BACKENDS}")
        need(isinstance(self.model, str) and self.model.strip() != "", "model", "must be a model name or path")
        need(self.base_url is None or (isinstance(self.base_url, str) and re.match(r"https?://", self.base_url)),
             "base_url", "must be None or an http(s):// URL")
        # The value is never echoed: a key pasted here by mistake must not reach a log.
        need(isinstance(self.api_key_env, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", self.api_key_env)
             is not None and not self.api_key_env.lower().startswith("sk"),
             "api_key_env", "must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not the key itself",
             show=False)
        need(is_int(self.concurrency) and self.concurrency >= 1, "concurrency", "must be an integer >= 1")
        need(isinstance(self.timeout, (int, float)) and not isinstance(self.timeout, bool) and self.timeout > 0,
             "timeout", "must be a number of seconds > 0")
        need(is_int(self.max_retries) and self.max_retries >= 0, "max_retries", "must be an integer >= 0")
        need(isinstance(self.retry_wait, (int, float)) and self.retry_wait >= 0, "retry_wait", "must be >= 0")
        need(is_int(self.batch_size) and self.batch_size >= 1, "batch_size", "must be an integer >= 1")
        need(isinstance(self.device, str) and self.device != "", "device", "must be a torch device such as 'cpu'")
        need(self.num_threads is None or (is_int(self.num_threads) and self.num_threads >= 1), "num_threads",
             "must be None or an integer >= 1")
        need(self.dtype in DTYPES, "dtype", f"must be one of {DTYPES}")
        need(self.cache_dir is None or isinstance(self.cache_dir, str), "cache_dir", "must be a path string or None")
        for name in ("extra_body", "chat_template_kwargs"):
            need(getattr(self, name) is None or isinstance(getattr(self, name), Mapping), name, "must be a mapping or None")
        need(self.structured_output in STRUCTURED_OUTPUTS, "structured_output", f"must be one of {STRUCTURED_OUTPUTS}")

    @classmethod
    def from_dict(cls, values: Mapping) -> "LLMConfig":
        """Build from a mapping (a YAML section); unknown keys raise ConfigError naming them."""
        check_fields(cls, values, "LLMConfig")
        return cls(**values)

    def identity(self) -> dict:
        """What decides the output besides prompt and sampling (the cache key's model part)."""
        return {"backend": self.backend, "model": self.model, "extra_body": self.extra_body,
                "chat_template_kwargs": self.chat_template_kwargs,
                "structured_output": self.structured_output if self.backend == "openai" else None}


@runtime_checkable
class LLMClient(Protocol):
    """What every stage calls: one Completion per prompt, in order, errors captured per prompt."""

    model_id: str
    identity: dict

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        ...


def run_sync(coro):
    """Run a coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


# --- OpenAI-compatible servers ---------------------------------------------------------------

def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server (OpenAI, vLLM, ``transformers serve``)."""

    def __init__(self, config: LLMConfig):
        try:
            import openai  # noqa: F401
            import tenacity  # noqa: F401
        except ImportError as e:
            raise RuntimeError(f"backend='openai' needs the openai and tenacity packages ({e}): "
                               "pip install openai==3.57.0 tenacity==9.2.1") from e
        self.config = config
        self.model_id = config.model
        self.identity = config.identity()

    def _api_key(self) -> str:
        key = os.environ.get(self.config.api_key_env)
        if key:
            return key
        if self.config.base_url is None:
            raise ConfigError(f"backend='openai' without base_url talks to api.openai.com and needs an API key "
                              f"in the environment variable {self.config.api_key_env}")
        return "EMPTY"  # local servers (vLLM, transformers serve) accept any key unless started with one

    def _request(self, prompt: Prompt, s: Sampling) -> dict:
        c = self.config
        kwargs: dict[str, Any] = {"model": c.model, "messages": to_messages(prompt), "temperature": s.temperature,
                                  "top_p": s.top_p, "max_tokens": s.max_tokens}
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.stop:
            kwargs["stop"] = list(s.stop)
        extra = dict(c.extra_body or {})
        if c.chat_template_kwargs:
            extra["chat_template_kwargs"] = dict(c.chat_template_kwargs)
        if s.json_schema is not None and c.structured_output == "response_format":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "output", "schema": s.json_schema}}
        elif s.json_schema is not None and c.structured_output == "structured_outputs":
            extra["structured_outputs"] = {"json": s.json_schema}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    async def _one(self, client, sem: asyncio.Semaphore, prompt: Prompt, s: Sampling, key: str) -> Completion:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        c = self.config
        request = self._request(prompt, s)

        def note_retry(state):
            log.warning("%s: retry %d after %s", c.model, state.attempt_number,
                        type(state.outcome.exception()).__name__)

        async with sem:
            t0 = time.perf_counter()
            try:
                async for attempt in AsyncRetrying(
                        stop=stop_after_attempt(c.max_retries + 1), reraise=True,
                        wait=wait_random_exponential(multiplier=c.retry_wait, max=60),
                        retry=retry_if_exception(_retryable), before_sleep=note_retry):
                    with attempt:
                        resp = await client.chat.completions.create(**request)
            except Exception as e:  # recorded per prompt; the run goes on
                return error_completion(e, c.model, time.perf_counter() - t0, secret=key)
            choice = resp.choices[0]
            usage = resp.usage
            return Completion(
                text=choice.message.content or "",
                prompt_tokens=getattr(usage, "prompt_tokens", None), completion_tokens=getattr(usage, "completion_tokens", None),
                latency_s=time.perf_counter() - t0, model=resp.model or c.model, finish_reason=choice.finish_reason)

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        """generate() for callers already inside an event loop."""
        from openai import AsyncOpenAI

        key = self._api_key()
        # max_retries=0: tenacity retries (with jitter, and logging that never shows the key)
        client = AsyncOpenAI(base_url=self.config.base_url, api_key=key, timeout=self.config.timeout, max_retries=0)
        sem = asyncio.Semaphore(self.config.concurrency)
        try:
            return list(await asyncio.gather(*(self._one(client, sem, p, sampling, key) for p in prompts)))
        finally:
            await client.close()

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        return run_sync(self.agenerate(prompts, sampling)) if prompts else []


# --- in-process transformers -----------------------------------------------------------------

@contextlib.contextmanager
def _torch_threads(n: int | None):
    """Temporarily use `n` torch CPU threads (None: leave the setting alone)."""
    import torch

    prev = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


class TransformersBackend:
    """A causal LM in this process: chat template, left-padded batches, optional JSON constraint."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.model_id = config.model
        self.identity = config.identity()
        self._model = self._tokenizer = None
        self._outlines = None  # outlines_core Vocabulary wrapper, built on the first json_schema call
        self._indexes: dict[str, Any] = {}  # schema JSON -> outlines_core Index (reusable across calls)
        self._lock = threading.Lock()  # one generate at a time per model

    def load(self):
        """Load tokenizer and model (on first use); returns (model, tokenizer)."""
        if self._model is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from lazymem.llm.models import resolve_model

            path = resolve_model(self.config.model)
            tok = AutoTokenizer.from_pretrained(path, padding_side="left")
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            dtype = self.config.dtype
            if dtype == "auto":
                dtype = "float32" if self.config.device == "cpu" else "auto"
            model = AutoModelForCausalLM.from_pretrained(
                path, dtype=dtype if dtype == "auto" else getattr(torch, dtype))
            model.to(self.config.device).eval()
            self._model, self._tokenizer = model, tok
        return self._model, self._tokenizer

    def render(self, prompt: Prompt) -> str:
        """The prompt text the model sees (chat template with the generation prompt)."""
        _, tok = self.load()
        if tok.chat_template is None:
            if isinstance(prompt, str):  # a base model without a template reads the text as is
                return prompt
            raise ConfigError(f"model {self.config.model!r} has no chat template; pass plain strings")
        return tok.apply_chat_template(to_messages(prompt), tokenize=False, add_generation_prompt=True,
                                       **(self.config.chat_template_kwargs or {}))

    def _json_processor(self, schema: Mapping):
        """A fresh outlines logits processor for `schema` (its Index is built once and reused)."""
        try:
            from outlines.backends.outlines_core import OutlinesCoreBackend, OutlinesCoreLogitsProcessor
            from outlines.models.transformers import from_transformers
            from outlines_core import Index
            from outlines_core.json_schema import build_regex_from_schema
        except ImportError as e:
            raise RuntimeError(
                f"json_schema with backend='transformers' needs outlines ({e}): pip install outlines==1.3.3") from e
        model, tok = self.load()
        if self._outlines is None:
            self._outlines = OutlinesCoreBackend(from_transformers(model, tok))
        # The grammar keeps the schema's own property order (the paper's items start with "op",
        # so KEEP/DROP is chosen before the content is written); the sorted dump is only the key.
        key = json.dumps(schema, sort_keys=True)
        if key not in self._indexes:
            self._indexes[key] = Index(build_regex_from_schema(json.dumps(schema)), self._outlines.vocabulary)
        return OutlinesCoreLogitsProcessor(self._indexes[key], "torch")

    def _generate_batch(self, texts: list[str], s: Sampling) -> list[Completion]:
        import torch

        model, tok = self.load()
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_tokens, "do_sample": not s.greedy,
                                  "pad_token_id": tok.pad_token_id}
        if not s.greedy:
            kwargs.update(temperature=s.temperature, top_p=s.top_p, top_k=0)  # OpenAI semantics: no top-k
        if s.stop:
            kwargs.update(stop_strings=list(s.stop), tokenizer=tok)
        if s.json_schema is not None:
            kwargs["logits_processor"] = [self._json_processor(s.json_schema)]
        kwargs.update(self.config.extra_body or {})
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else []) | {tok.eos_token_id}
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        latency = time.perf_counter() - t0
        width = enc["input_ids"].shape[1]
        results = []
        for row, n_prompt in zip(out[:, width:].tolist(), enc["attention_mask"].sum(dim=1).tolist()):
            end = next((i + 1 for i, t in enumerate(row) if t in eos), None)
            ids = row[:end] if end is not None else row
            text = tok.decode(ids, skip_special_tokens=True)
            cut = min((i for i in (text.find(x) for x in s.stop or ()) if i >= 0), default=-1)
            if cut >= 0:  # HF keeps the stop string; OpenAI servers do not
                text = text[:cut]
            finish = "stop" if end is not None or cut >= 0 else "length"
            results.append(Completion(text=text, prompt_tokens=int(n_prompt), completion_tokens=len(ids),
                                      latency_s=latency, model=self.model_id, finish_reason=finish))
        return results

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        if not prompts:
            return []
        import torch

        with self._lock, _torch_threads(self.config.num_threads):
            texts = [self.render(p) for p in prompts]
            _, tok = self.load()
            # Similar lengths share a batch, so little compute goes to padding; greedy
            # outputs do not depend on the grouping (left padding is masked).
            lengths = [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]
            order = sorted(range(len(texts)), key=lambda i: lengths[i])
            if sampling.json_schema is not None:
                self._json_processor(sampling.json_schema)  # a missing library or bad schema raises here
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            out: list[Completion | None] = [None] * len(texts)
            bs = self.config.batch_size
            for start in range(0, len(order), bs):
                idx = order[start:start + bs]
                try:
                    done = self._generate_batch([texts[i] for i in idx], sampling)
                except Exception as e:  # e.g. CUDA out of memory: record it per prompt, go on
                    log.exception("%s: batch of %d prompts failed", self.model_id, len(idx))
                    done = [error_completion(e, self.model_id) for _ in idx]
                for i, c in zip(idx, done):
                    out[i] = c
            return out  # type: ignore[return-value]


# --- in-process vLLM ---------------------------------------------------------------------------

class VLLMBackend:
    """``vllm.LLM`` in this process (continuous batching on one CUDA GPU)."""

    def __init__(self, config: LLMConfig):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "backend='vllm' runs vLLM in this process and needs a CUDA GPU; none is visible. Use "
                "backend='openai' with base_url of a vLLM server (`vllm serve MODEL`, .../v1), or backend='transformers'.")
        try:
            from vllm import LLM
        except ImportError as e:
            raise RuntimeError(f"backend='vllm' needs vllm ({e}): pip install 'lazymem[gpu]' (vllm==0.31.0)") from e
        from lazymem.llm.models import resolve_model

        self.config = config
        self.model_id = config.model
        self.identity = config.identity()
        self.llm = LLM(model=resolve_model(config.model), dtype=config.dtype, seed=0)

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        if not prompts:
            return []
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        s = sampling
        params = SamplingParams(
            temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=s.seed,
            stop=list(s.stop) if s.stop else None,
            structured_outputs=StructuredOutputsParams(json=s.json_schema) if s.json_schema is not None else None,
            **(self.config.extra_body or {}))
        t0 = time.perf_counter()
        try:
            outs = self.llm.chat([to_messages(p) for p in prompts], params, use_tqdm=False,
                                 chat_template_kwargs=self.config.chat_template_kwargs)
        except Exception as e:  # the whole batch failed (e.g. a prompt longer than the context)
            log.error("%s: vLLM batch failed: %s", self.model_id, e)
            return [error_completion(e, self.model_id, time.perf_counter() - t0) for _ in prompts]
        latency = time.perf_counter() - t0
        return [Completion(text=o.outputs[0].text, prompt_tokens=len(o.prompt_token_ids or ()),
                           completion_tokens=len(o.outputs[0].token_ids), latency_s=latency, model=self.model_id,
                           finish_reason=o.outputs[0].finish_reason) for o in outs]


# --- scripted fake -----------------------------------------------------------------------------

Script = Union[Sequence[Union[str, BaseException]], Mapping[str, Union[str, BaseException]],
               Callable[[Prompt, Sampling], Union[str, BaseException]], None]


def _prompt_text(prompt: Prompt) -> str:
    """The string a fake script is keyed on: the prompt, or a chat's last user message."""
    if isinstance(prompt, str):
        return prompt
    users = [m["content"] for m in prompt if m.get("role") == "user"]
    return users[-1] if users else ""


class FakeBackend:
    """Scripted completions for tests; records every call in ``calls``.

    ``responses`` is a list consumed in order (an exhausted list gives an error
    completion), a dict from prompt text (a chat's last user message) to answer, a callable
    ``(prompt, sampling) -> answer``, or None to echo the prompt text. An exception in
    place of an answer becomes ``Completion(error=...)``.
    """

    def __init__(self, responses: Script = None, model: str = "fake"):
        self.responses = list(responses) if isinstance(responses, (list, tuple)) else responses
        self.model_id = model
        self.identity = {"backend": "fake", "model": model}
        self.calls: list[tuple[Prompt, Sampling]] = []
        self._next = 0
        self._lock = threading.Lock()

    def _answer(self, prompt: Prompt, s: Sampling):
        r = self.responses
        if r is None:
            return _prompt_text(prompt)
        if callable(r):
            return r(prompt, s)
        if isinstance(r, Mapping):
            key = _prompt_text(prompt)
            return r[key] if key in r else KeyError(f"no scripted answer for prompt {key[:60]!r}")
        with self._lock:
            i, self._next = self._next, self._next + 1
        return r[i] if i < len(r) else IndexError(f"script exhausted after {len(r)} answers")

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        out = []
        for p in prompts:
            self.calls.append((p, sampling))
            a = self._answer(p, sampling)
            if isinstance(a, BaseException):
                out.append(error_completion(a, self.model_id))
                continue
            n = len(a.split())
            out.append(Completion(text=a, prompt_tokens=len(_prompt_text(p).split()), completion_tokens=n,
                                  latency_s=0.0, model=self.model_id,
                                  finish_reason="length" if n > sampling.max_tokens else "stop"))
        return out

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        return self.generate(prompts, sampling)


# --- disk cache --------------------------------------------------------------------------------

class CachedClient:
    """Wraps a client with a sqlite store of successful completions (errors are never stored).

    The key is the sha256 of (the inner client's identity, the prompt, the sampling
    settings). A stored answer comes back identical except ``cached=True``. With
    temperature > 0 a prompt still maps to one stored sample per seed: vary the seed (or
    use no cache) to draw several.
    """

    FILENAME = "llm_calls.sqlite"

    def __init__(self, inner: LLMClient, cache_dir: str | os.PathLike):
        self.inner = inner
        self.model_id = inner.model_id
        self.identity = inner.identity
        self.path = Path(cache_dir) / self.FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers in other processes do not block writers
            self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                             "request TEXT NOT NULL, completion TEXT NOT NULL, created REAL NOT NULL)")
            self._db.commit()

    def _request(self, prompt: Prompt, sampling: Sampling) -> str:
        return json.dumps({"model": self.identity, "prompt": prompt if isinstance(prompt, str) else to_messages(prompt),
                           "sampling": sampling.as_dict()}, sort_keys=True, ensure_ascii=False)

    @staticmethod
    def key_of(request: str) -> str:
        return hashlib.sha256(request.encode("utf-8")).hexdigest()

    def key(self, prompt: Prompt, sampling: Sampling = Sampling()) -> str:
        """The cache key of one call."""
        return self.key_of(self._request(prompt, sampling))

    def _lookup(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # stay under sqlite's parameter limit
                chunk = keys[start:start + 500]
                rows = self._db.execute(f"SELECT key, completion FROM calls WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
                found.update((k, Completion.from_dict(json.loads(c))) for k, c in rows)
        return found

    def _store(self, items: list[tuple[str, str, Completion]]) -> None:
        rows = [(k, c.model or self.model_id, req, json.dumps(c.to_dict(), ensure_ascii=False), time.time())
                for k, req, c in items if c.error is None]
        if rows:
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?)", rows)
                self._db.commit()

    def _split(self, prompts: Sequence[Prompt], sampling: Sampling):
        requests = [self._request(p, sampling) for p in prompts]
        keys = [self.key_of(r) for r in requests]
        hits = self._lookup(sorted(set(keys)))
        misses = [i for i, k in enumerate(keys) if k not in hits]
        return requests, keys, hits, misses

    def _merge(self, requests, keys, hits, misses, fresh: list[Completion]) -> list[Completion]:
        self._store([(keys[i], requests[i], c) for i, c in zip(misses, fresh)])
        out: list[Completion] = [dataclasses.replace(hits[k], cached=True) if k in hits else None for k in keys]  # type: ignore[misc]
        for i, c in zip(misses, fresh):
            out[i] = c
        return out

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        requests, keys, hits, misses = self._split(prompts, sampling)
        fresh = self.inner.generate([prompts[i] for i in misses], sampling) if misses else []
        return self._merge(requests, keys, hits, misses, fresh)

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        requests, keys, hits, misses = self._split(prompts, sampling)
        todo = [prompts[i] for i in misses]
        if not todo:
            fresh = []
        elif hasattr(self.inner, "agenerate"):
            fresh = await self.inner.agenerate(todo, sampling)
        else:
            fresh = await asyncio.to_thread(self.inner.generate, todo, sampling)
        return self._merge(requests, keys, hits, misses, fresh)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def make_client(config: LLMConfig, responses: Script = None) -> LLMClient:
    """The client for `config`, wrapped in CachedClient when ``config.cache_dir`` is set.

    `responses` scripts the fake backend (see FakeBackend); other backends take none.
    """
    if responses is not None and config.backend != "fake":
        raise ConfigError("make_client: responses= scripts only backend='fake'")
    if config.backend == "fake":
        inner: LLMClient = FakeBackend(responses, model=config.model)
    else:
        inner = {"openai": OpenAIBackend, "transformers": TransformersBackend, "vllm": VLLMBackend}[config.backend](config)
    # Only identifying fields: extra_body may carry credentials a user pasted there.
    log.info("LLM client: backend=%s model=%s base_url=%s", config.backend, config.model, config.base_url)
    return CachedClient(inner, config.cache_dir) if config.cache_dir else inner
