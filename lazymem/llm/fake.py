"""Scripted completions for tests and notebooks; not a production backend.

No production module imports it; ``make_client`` loads it only for ``backend="fake"``.

>>> FakeBackend(["KEEP"]).generate(["window 1"])[0].text
'KEEP'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from lazymem.llm.base import Completion, Prompt, Sampling, error_completion

Script = (
    Sequence[str | BaseException]
    | Mapping[str, str | BaseException]
    | Callable[[Prompt, Sampling], str | BaseException]
    | None
)


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
            out.append(
                Completion(
                    text=a,
                    prompt_tokens=len(_prompt_text(p).split()),
                    completion_tokens=n,
                    latency_s=0.0,
                    model=self.model_id,
                    finish_reason="length" if n > sampling.max_tokens else "stop",
                )
            )
        return out

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        return self.generate(prompts, sampling)
