"""Chat completions from any OpenAI-compatible server: OpenAI and other hosted APIs, vLLM, ``transformers serve``.

Requests go through the ``openai`` package (imported on first use), ``concurrency`` in
flight at once, retried with jittered exponential backoff (tenacity) on connection errors,
408/409/429 and 5xx. The API key is read at call time from the environment variable named
by ``LLMConfig.api_key_env`` and masked out of every recorded error.

A reasoning trace the server returns beside the text (``message.reasoning_content``: DeepSeek,
older vLLM; ``message.reasoning``: vLLM with a reasoning parser) is kept in
``Completion.reasoning``. ``LLMConfig.thinking_budget`` caps a thinking model's reasoning, by two
requests or by vLLM's ``thinking_token_budget`` (see ``LLMConfig``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from lazymem.errors import ConfigError
from lazymem.llm.base import Completion, LLMConfig, Prompt, Sampling, error_completion, run_sync, to_messages
from lazymem.llm.usage import engine_pass, response_usage

log = logging.getLogger("lazymem.llm")


REASONING_FIELDS = ("reasoning_content", "reasoning")  # where servers put a separate trace
THINK_END = "</think>"


def reasoning_of(message: Any) -> str | None:
    """A chat message's separate reasoning trace, or None.

    >>> from types import SimpleNamespace as NS
    >>> reasoning_of(NS(content="[]", reasoning_content="Two messages.")), reasoning_of(NS(content="x"))
    ('Two messages.', None)
    """
    for name in REASONING_FIELDS:
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _think_trace(text: str) -> str:
    """The reasoning of a think phase written inline: without its <think> / </think> tags.

    >>> _think_trace("<think>\\nstep 1\\nstep 2")
    'step 1\\nstep 2'
    """
    text = text.strip()
    text = text[len("<think>") :] if text.startswith("<think>") else text
    return text.split(THINK_END, 1)[0].strip()


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
            raise RuntimeError(
                f"backend='openai' needs the openai and tenacity packages ({e}): "
                "pip install openai==3.57.0 tenacity==9.2.1"
            ) from e
        self.config = config
        self.model_id = config.model
        self.identity = config.identity()

    def _api_key(self) -> str:
        key = os.environ.get(self.config.api_key_env)
        if key:
            return key
        if self.config.base_url is None:
            raise ConfigError(
                f"backend='openai' without base_url talks to api.openai.com and needs an API key "
                f"in the environment variable {self.config.api_key_env}"
            )
        return "EMPTY"  # local servers (vLLM, transformers serve) accept any key unless started with one

    def _request(self, prompt: Prompt, s: Sampling) -> dict:
        c = self.config
        if s.logit_bias:
            raise ConfigError(
                f"Sampling.logit_bias {dict(s.logit_bias)!r} with backend='openai' ({c.model}): an "
                "OpenAI-compatible server takes token ids, not texts; use backend 'transformers' or "
                "'vllm', or put the server's own ids in extra_body.logit_bias"
            )
        kwargs: dict[str, Any] = {
            "model": c.model,
            "messages": to_messages(prompt),
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
        }
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.stop:
            kwargs["stop"] = list(s.stop)
        extra = dict(c.extra_body or {})
        if c.chat_template_kwargs:
            extra["chat_template_kwargs"] = dict(c.chat_template_kwargs)
        if s.json_schema is not None and c.structured_output == "response_format":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": s.json_schema},
            }
        elif s.json_schema is not None and c.structured_output == "structured_outputs":
            extra["structured_outputs"] = {"json": s.json_schema}
        if c.thinking_budget is not None and c.thinking_budget_mode == "server":
            extra["thinking_token_budget"] = c.thinking_budget  # vLLM's sampling parameter
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    async def _create(self, client, request: dict):
        """One chat completion, retried (tenacity) on connection errors, 408/409/429 and 5xx."""
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        c = self.config

        def note_retry(state):
            log.warning(
                "%s: retry %d after %s", c.model, state.attempt_number, type(state.outcome.exception()).__name__
            )

        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(c.max_retries + 1),
            reraise=True,
            wait=wait_random_exponential(multiplier=c.retry_wait, max=60),
            retry=retry_if_exception(_retryable),
            before_sleep=note_retry,
        ):
            with attempt:
                return await client.chat.completions.create(**request)

    def _completion(self, resp, t0: float) -> Completion:
        choice = resp.choices[0]
        n_prompt, n_cached, n_out = response_usage(resp.usage)
        return Completion(
            text=choice.message.content or "",
            reasoning=reasoning_of(choice.message),
            prompt_tokens=n_prompt,
            completion_tokens=n_out,
            cached_prompt_tokens=n_cached,
            latency_s=time.perf_counter() - t0,
            model=resp.model or self.config.model,
            finish_reason=choice.finish_reason,
        )

    async def _two_phase(self, client, prompt: Prompt, s: Sampling, t0: float) -> Completion:
        """Think with at most ``thinking_budget`` tokens, then answer after the (possibly cut)
        trace with the tokens left (LLMConfig's docstring, "two_phase")."""
        budget = self.config.thinking_budget
        think = self._completion(
            await self._create(
                client,
                self._request(prompt, dataclasses.replace(s, max_tokens=budget, stop=(THINK_END,), json_schema=None)),
            ),
            t0,
        )
        inline = think.text.lstrip().startswith("<think>")
        if think.reasoning is None and not inline and think.finish_reason == "stop":
            return think  # the model answered without thinking (thinking off): that is the answer
        trace = _think_trace(think.reasoning or think.text)  # a reasoning parser's field, or the inline trace
        used = think.completion_tokens if think.completion_tokens is not None else budget
        request = self._request(
            to_messages(prompt) + [{"role": "assistant", "content": f"<think>\n{trace}\n{THINK_END}\n\n"}],
            dataclasses.replace(s, max_tokens=max(1, s.max_tokens - used)),
        )
        request["extra_body"] = {
            **request.get("extra_body", {}),
            "continue_final_message": True,
            "add_generation_prompt": False,
        }
        answer = self._completion(await self._create(client, request), t0)
        # After the closed trace everything is the answer, even where a reasoning parser that saw
        # no </think> in the new tokens labelled it reasoning.
        text = answer.text or answer.reasoning or ""
        tokens = (
            None
            if answer.completion_tokens is None or think.completion_tokens is None
            else think.completion_tokens + answer.completion_tokens
        )
        passes = (
            engine_pass(
                "think", think.prompt_tokens, think.cached_prompt_tokens, think.completion_tokens, think.latency_s
            ),
            engine_pass(
                "answer",
                answer.prompt_tokens,
                answer.cached_prompt_tokens,
                answer.completion_tokens,
                answer.latency_s - think.latency_s,
                reread=f"<think>\n{trace}\n{THINK_END}\n\n",  # the assistant message it continues
            ),
        )
        return dataclasses.replace(
            answer,
            text=text,
            reasoning=trace,
            completion_tokens=tokens,
            prompt_tokens=think.prompt_tokens,
            cached_prompt_tokens=None,
            passes=passes,
        )

    async def _one(self, client, sem: asyncio.Semaphore, prompt: Prompt, s: Sampling, key: str) -> Completion:
        c = self.config
        request = self._request(prompt, s)  # outside the try: a configuration mistake raises
        async with sem:
            t0 = time.perf_counter()
            try:
                if c.thinking_budget is not None and c.thinking_budget_mode == "two_phase":
                    return await self._two_phase(client, prompt, s, t0)
                return self._completion(await self._create(client, request), t0)
            except Exception as e:  # recorded per prompt; the run goes on
                return error_completion(e, c.model, time.perf_counter() - t0, secret=key)

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        """generate() for callers already inside an event loop."""
        from openai import AsyncOpenAI

        if sampling.grounded is not None:
            raise ConfigError(
                "backend 'openai': grounded decoding (each KEEP's content a span of its message) needs "
                "token-level control an OpenAI-compatible server does not give; use backend "
                "'transformers' or 'llamacpp', or pipeline.grounded: false"
            )
        if sampling.trace_keep_bias is not None:
            raise ConfigError(
                "backend 'openai': Sampling.trace_keep_bias (a per-message KEEP prior, "
                "pipeline.keep_prior) needs a logit bias that changes line by line, which an "
                "OpenAI-compatible server does not take; use backend 'transformers' or "
                "'llamacpp', or pipeline.keep_prior: 0"
            )

        key = self._api_key()
        budget = self.config.thinking_budget
        if budget is not None and self.config.thinking_budget_mode == "two_phase" and budget >= sampling.max_tokens:
            raise ConfigError(
                f"LLMConfig.thinking_budget={budget} leaves none of Sampling.max_tokens="
                f"{sampling.max_tokens} for the answer; lower it or raise max_tokens"
            )
        # max_retries=0: tenacity retries (with jitter, and logging that never shows the key)
        client = AsyncOpenAI(base_url=self.config.base_url, api_key=key, timeout=self.config.timeout, max_retries=0)
        sem = asyncio.Semaphore(self.config.concurrency)
        try:
            return list(await asyncio.gather(*(self._one(client, sem, p, sampling, key) for p in prompts)))
        finally:
            await client.close()

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        return run_sync(self.agenerate(prompts, sampling)) if prompts else []
