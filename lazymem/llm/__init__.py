"""Language models: one client interface, its backends, the disk cache, the embedded models, token counting.

Modules:
- ``base``: the interface: ``LLMConfig`` (with ``local_or_server``), ``Sampling``, ``Completion``,
  the ``LLMClient`` protocol, ``to_messages``, ``error_completion``, ``run_sync``, ``BACKENDS``.
- ``factory``: ``make_client``, the client a config names (behind the cache when ``cache_dir`` is set).
- ``server``: ``OpenAIBackend``, any OpenAI-compatible server (vLLM, ``transformers serve``, hosted APIs).
- ``hf``: ``TransformersBackend``, transformers in this process, batched, outlines-constrained JSON.
- ``vllm_engine``: ``VLLMBackend``, ``vllm.LLM`` in this process (CUDA only).
- ``cache``: ``CachedClient``, the sqlite store of completed calls.
- ``fake``: ``FakeBackend``, scripted answers for tests and notebooks.
- ``multi``: ``generate_n``, several samples per prompt (rollouts) from any client.
- ``models``: the embedded SmolLM2 model and the tiny test model.
- ``tokens``: Qwen3 token counting.

Heavy libraries (torch, transformers, openai, vllm, outlines) are imported only when used.
"""

from lazymem.llm.base import (  # noqa: F401
    Completion,
    LLMClient,
    LLMConfig,
    Sampling,
    error_completion,
    run_sync,
    to_messages,
)
from lazymem.llm.cache import CachedClient  # noqa: F401
from lazymem.llm.factory import make_client  # noqa: F401
from lazymem.llm.fake import FakeBackend  # noqa: F401
from lazymem.llm.hf import TransformersBackend  # noqa: F401
from lazymem.llm.models import (  # noqa: F401
    SMOLLM2_ALIAS,
    resolve_model,
    smollm2_dir,
    tiny_test_model,
)
from lazymem.llm.multi import generate_n  # noqa: F401
from lazymem.llm.server import OpenAIBackend  # noqa: F401
from lazymem.llm.tokens import (  # noqa: F401
    DIR_ENV,
    FETCH_COMMAND,
    TokenizerMissing,
    count_tokens,
    count_tokens_batch,
    encode,
    qwen3_tokenizer_dir,
)
from lazymem.llm.vllm_engine import VLLMBackend  # noqa: F401
