"""``make_client``: the client an ``LLMConfig`` names, behind the disk cache when ``cache_dir`` is set.

Backends: ``openai`` (server.OpenAIBackend), ``transformers`` (hf.TransformersBackend),
``llamacpp`` (llamacpp.LlamaCppBackend, GGUF on CPU), ``vllm`` (vllm_engine.VLLMBackend) and ``fake``
(fake.FakeBackend, scripted, for tests).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lazymem.errors import ConfigError
from lazymem.llm.base import LLMClient, LLMConfig
from lazymem.llm.cache import CachedClient
from lazymem.llm.hf import TransformersBackend
from lazymem.llm.server import OpenAIBackend
from lazymem.llm.vllm_engine import VLLMBackend

if TYPE_CHECKING:
    from lazymem.llm.fake import Script

log = logging.getLogger("lazymem.llm")


def make_client(config: LLMConfig, responses: Script = None) -> LLMClient:
    """The client for `config`, wrapped in CachedClient when ``config.cache_dir`` is set.

    `responses` scripts the fake backend (see FakeBackend); other backends take none.
    """
    if responses is not None and config.backend != "fake":
        raise ConfigError("make_client: responses= scripts only backend='fake'")
    if config.backend == "fake":
        from lazymem.llm.fake import FakeBackend  # test double: never imported by production backends

        inner: LLMClient = FakeBackend(responses, model=config.model)
    else:
        if config.backend == "llamacpp":
            from lazymem.llm.llamacpp import LlamaCppBackend  # llama-cpp-python is an optional extra

            inner = LlamaCppBackend(config)
        else:
            backends = {"openai": OpenAIBackend, "transformers": TransformersBackend, "vllm": VLLMBackend}
            inner = backends[config.backend](config)
    # Only identifying fields: extra_body may carry credentials a user pasted there.
    log.info("LLM client: backend=%s model=%s base_url=%s", config.backend, config.model, config.base_url)
    return CachedClient(inner, config.cache_dir) if config.cache_dir else inner
