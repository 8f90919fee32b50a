"""Several samples per prompt (GRPO-style rollouts, self-consistency) from any client.

``generate_n(client, prompts, sampling, n)`` makes ``n`` generate calls with seeds
``seed, seed + 1, ...``, each over all prompts (so a server still gets them concurrently
and an in-process model still batches them), and returns ``n`` completions per prompt. Each
(prompt, seed) is its own cache entry, so a rerun reproduces the same samples.

>>> from lazymem.llm.fake import FakeBackend
>>> out = generate_n(FakeBackend(lambda p, s: f"{p}/{s.seed}"), ["a", "b"], Sampling(temperature=0.9, seed=5), 2)
>>> [[c.text for c in row] for row in out]
[['a/5', 'a/6'], ['b/5', 'b/6']]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lazymem.errors import ConfigError
from lazymem.llm.base import Completion, LLMClient, Prompt, Sampling


def generate_n(client: LLMClient, prompts: Sequence[Prompt], sampling: Sampling, n: int) -> list[list[Completion]]:
    """``n`` samples of every prompt: ``out[i][k]`` is prompt i's k-th sample (seed ``sampling.seed + k``)."""
    if not (isinstance(n, int) and n >= 1):
        raise ConfigError(f"generate_n: n must be an integer >= 1, got {n!r}")
    if n > 1 and sampling.greedy:
        raise ConfigError("generate_n: n > 1 with temperature 0 gives n identical samples; set a temperature")
    if n > 1 and sampling.seed is None:
        raise ConfigError("generate_n: n > 1 needs a sampling seed (the k-th sample uses seed + k)")
    rounds = (
        [client.generate(list(prompts), dataclasses.replace(sampling, seed=(sampling.seed or 0) + k)) for k in range(n)]
        if n > 1
        else [client.generate(list(prompts), sampling)]
    )
    return [[r[i] for r in rounds] for i in range(len(prompts))]
