"""What a model call cost: its engine's token counts, the passes it ran, and the same call in Qwen3 tokens.

Every backend fills ``Completion.prompt_tokens`` / ``completion_tokens`` with its own tokenizer's
counts (the engine's usage numbers) and, where the engine says, ``cached_prompt_tokens``: the prompt
tokens served from a prefix cache (llama.cpp's KV prefix reuse, an OpenAI-compatible server's
``usage.prompt_tokens_details.cached_tokens``). A call the engine ran as several requests (llama.cpp's
trace pass then array pass, possibly by the content writer; the transformers content pass; a thinking
budget's think phase then answer) lists them in ``Completion.passes`` (``engine_pass``): each pass reads
the call's prompt plus what earlier passes wrote, so the tokens a call reads are the sum over its passes
(``prompt_tokens_read``), while ``prompt_tokens`` stays the prompt's own length.

For comparison across systems whose models tokenize differently, ``with_qwen3`` adds the same call
counted with the Qwen3 tokenizer (``lazymem.llm.tokens``, as memory tokens are): the prompt as Qwen3's
chat format writes it (``chatml``: ``<|im_start|>role\\ncontent<|im_end|>\\n`` per message, then the
generation prompt), once per pass with the text earlier passes wrote, and the output (reasoning
included). Without the tokenizer these counts stay None, never 0.

>>> chatml([{"role": "user", "content": "Hi"}])
'<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'
>>> p = engine_pass("trace", 100, 0, 20, 0.5)
>>> c = Completion("x", 100, 30, 1.0, passes=(p, engine_pass("array", 120, 118, 10, 0.2, reread="ab")))
>>> prompt_tokens_read(c), cached_prompt_tokens(c)
(220, 118)
>>> sorted(call_usage(c)), call_usage(c)["passes"][1]
(['cached_prompt_tokens', 'passes'], {'name': 'array', 'prompt_tokens': 120, 'cached_prompt_tokens': 118, \
'completion_tokens': 10, 'seconds': 0.2})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.llm.base import Completion, Prompt, to_messages

PASS_KEYS = ("name", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "seconds")
REREAD = "reread"  # a pass's text after the call's prompt (what earlier passes wrote); kept out of records


def engine_pass(
    name: str,
    prompt_tokens: int | None,
    cached_prompt_tokens: int | None,
    completion_tokens: int | None,
    seconds: float | None,
    reread: str = "",
) -> dict:
    """One request of a call that ran as several: its name ("trace", "array", "content", "think", "answer"),
    its engine counts and seconds; ``reread``: the text its prompt holds after the call's prompt (what the
    earlier passes wrote), for the Qwen3 count."""
    out = {
        "name": name,
        "prompt_tokens": prompt_tokens,
        "cached_prompt_tokens": cached_prompt_tokens,
        "completion_tokens": completion_tokens,
        "seconds": seconds,
    }
    if reread:
        out[REREAD] = reread
    return out


def _sum(values: Sequence[int | None]) -> int | None:
    """The sum, or None when any value is unknown."""
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def prompt_tokens_read(c: Completion) -> int | None:
    """Prompt tokens the engine read for the call: over its passes where it ran several, else ``prompt_tokens``."""
    if c.passes:
        return _sum([p.get("prompt_tokens") for p in c.passes])
    return c.prompt_tokens


def completion_tokens_written(c: Completion) -> int | None:
    """Tokens the engine wrote for the call: over its passes where it ran several, else ``completion_tokens``."""
    if c.passes:
        return _sum([p.get("completion_tokens") for p in c.passes])
    return c.completion_tokens


def cached_prompt_tokens(c: Completion) -> int | None:
    """Of ``prompt_tokens_read``, those served from a prefix cache; None when the engine does not say."""
    if c.passes:
        return _sum([p.get("cached_prompt_tokens") for p in c.passes])
    return c.cached_prompt_tokens


def call_usage(c: Completion) -> dict:
    """The usage keys a record's call carries beside ``prompt_tokens`` / ``completion_tokens`` / ``latency_s``:
    ``cached_prompt_tokens``, ``passes`` (without their texts) and the Qwen3 counts, each only when known (a
    record made before they existed, or by an engine that does not say, has none: not measured, never 0)."""
    out: dict[str, Any] = {}
    if c.cached_prompt_tokens is not None:
        out["cached_prompt_tokens"] = c.cached_prompt_tokens
    if c.passes:
        out["passes"] = [{k: p.get(k) for k in PASS_KEYS} for p in c.passes]
        out["cached_prompt_tokens"] = cached_prompt_tokens(c)
        if out["cached_prompt_tokens"] is None:
            del out["cached_prompt_tokens"]
    if c.qwen3_prompt_tokens is not None:
        out["qwen3_prompt_tokens"] = c.qwen3_prompt_tokens
    if c.qwen3_completion_tokens is not None:
        out["qwen3_completion_tokens"] = c.qwen3_completion_tokens
    return out


def chatml(prompt: Prompt, generation_prompt: bool = True) -> str:
    """The prompt in Qwen3's chat format (ChatML), with the assistant's generation prompt."""
    text = "".join(
        f"<|im_start|>{m.get('role', 'user')}\n{m.get('content') or ''}<|im_end|>\n" for m in to_messages(prompt)
    )
    return text + ("<|im_start|>assistant\n" if generation_prompt else "")


def qwen3_ready() -> bool:
    """Whether the Qwen3 tokenizer is there (loading it once); never raises for a missing one."""
    try:
        from lazymem.llm import tokens

        tokens.qwen3_tokenizer()
    except (OSError, ImportError):  # TokenizerMissing is a FileNotFoundError
        return False
    return True


def qwen3_count(texts: Sequence[str]) -> list[int] | None:
    """Qwen3 token counts of ``texts`` (special tokens such as ``<|im_start|>`` read as one token each); None
    without the tokenizer, never a substitute count."""
    try:
        from lazymem.llm import tokens

        return [tokens.count_tokens(t) for t in texts] if len(texts) < 2 else tokens.count_tokens_batch(list(texts))
    except (OSError, ImportError):  # TokenizerMissing is a FileNotFoundError
        return None


def qwen3_counts(prompt: Prompt, c: Completion) -> tuple[int | None, int | None]:
    """(Qwen3 tokens the call read, Qwen3 tokens it wrote); (None, None) without the Qwen3 tokenizer or for a
    failed call. A call of several passes reads the prompt once per pass, each with what earlier passes wrote."""
    if c.error is not None:
        return None, None
    head = chatml(prompt)
    reads = [head + str(p.get(REREAD) or "") for p in c.passes] if c.passes else [head]
    counts = qwen3_count(reads + [(c.reasoning or "") + c.text])
    return (None, None) if counts is None else (sum(counts[:-1]), counts[-1])


def with_qwen3(prompt: Prompt, c: Completion | None) -> Completion | None:
    """``c`` with its Qwen3 counts (``qwen3_counts``); unchanged when they cannot be counted."""
    if c is None:
        return None
    n_in, n_out = qwen3_counts(prompt, c)
    if n_in is None:
        return c
    return dataclasses.replace(c, qwen3_prompt_tokens=n_in, qwen3_completion_tokens=n_out)


def response_usage(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(prompt, cached prompt, completion) tokens of an OpenAI-compatible response's ``usage`` (an object or a
    mapping); cached is None when the server sends no ``prompt_tokens_details.cached_tokens``.

    >>> response_usage({"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}})
    (9, 4, 2)
    >>> response_usage(None)
    (None, None, None)
    """

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

    if usage is None:
        return None, None, None
    details = get(usage, "prompt_tokens_details")
    cached = get(details, "cached_tokens") if details is not None else None
    return get(usage, "prompt_tokens"), cached, get(usage, "completion_tokens")


USAGE_TOTALS = (
    "calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "seconds",
    "qwen3_prompt_tokens",
    "qwen3_completion_tokens",
)


class MeteredCreate:
    """Wraps an OpenAI client's ``chat.completions.create`` (a library that calls the model itself: Mem0) and
    adds every response's usage to ``totals``: calls, the server's prompt / cached / completion tokens,
    seconds, and the Qwen3 counts of the messages and the reply. A count the server or the tokenizer does not
    give leaves its total None from then on (not measured), never a partial sum."""

    def __init__(self, create: Any):
        self.create = create
        self.totals: dict[str, Any] = dict.fromkeys(USAGE_TOTALS, 0)
        self.totals["seconds"] = 0.0

    def _add(self, name: str, value: Any) -> None:
        if self.totals[name] is not None:
            self.totals[name] = None if value is None else self.totals[name] + value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import time

        t0 = time.perf_counter()
        resp = self.create(*args, **kwargs)
        self._add("seconds", time.perf_counter() - t0)
        self._add("calls", 1)
        n_prompt, n_cached, n_out = response_usage(getattr(resp, "usage", None))
        self._add("prompt_tokens", n_prompt)
        self._add("cached_prompt_tokens", n_cached)
        self._add("completion_tokens", n_out)
        choices = getattr(resp, "choices", None) or []
        reply = (getattr(choices[0].message, "content", None) or "") if choices else ""
        messages = kwargs.get("messages")
        counts = qwen3_count([chatml(messages), reply]) if messages is not None else None
        self._add("qwen3_prompt_tokens", None if counts is None else counts[0])
        self._add("qwen3_completion_tokens", None if counts is None else counts[1])
        return resp
