"""Language models: one client interface, its backends, the disk cache, the embedded models, token counting."""

from lazymem.llm.client import (  # noqa: F401
    CachedClient,
    Completion,
    FakeBackend,
    LLMClient,
    LLMConfig,
    OpenAIBackend,
    Sampling,
    TransformersBackend,
    VLLMBackend,
    error_completion,
    make_client,
    run_sync,
    to_messages,
)
from lazymem.llm.models import (  # noqa: F401
    SMOLLM2_ALIAS,
    resolve_model,
    smollm2_dir,
    tiny_test_model,
)
from lazymem.llm.tokens import (  # noqa: F401
    DIR_ENV,
    FETCH_COMMAND,
    TokenizerMissing,
    count_tokens,
    count_tokens_batch,
    encode,
    qwen3_tokenizer_dir,
)
