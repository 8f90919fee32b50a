"""``vllm.LLM`` run in this process: continuous batching on one CUDA GPU (vllm imported on first use)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from lazymem.errors import ConfigError, ModelLoadError
from lazymem.llm.base import Completion, LLMConfig, Prompt, Sampling, bias_token_ids, error_completion, to_messages

log = logging.getLogger("lazymem.llm")


class VLLMBackend:
    """``vllm.LLM`` in this process (continuous batching on one CUDA GPU)."""

    def __init__(self, config: LLMConfig):
        import torch

        if not torch.cuda.is_available():
            raise ModelLoadError(
                "backend='vllm' runs vLLM in this process and needs a CUDA GPU; none is visible. Use "
                "backend='openai' with base_url of a vLLM server (`vllm serve MODEL`, .../v1), "
                "or backend='transformers'."
            )
        try:
            from vllm import LLM
        except ImportError as e:
            raise ModelLoadError(f"backend='vllm' needs vllm ({e}): pip install 'lazymem[gpu]' (vllm==0.31.0)") from e
        from lazymem.llm.models import resolve_model

        self.config = config
        self.model_id = config.model
        self.identity = config.identity()
        self.llm = LLM(model=resolve_model(config.model), dtype=config.dtype, seed=0)

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        if not prompts:
            return []
        if sampling.grounded is not None:
            raise ConfigError(
                "backend 'vllm': grounded decoding (each KEEP's content a span of its message) is not "
                "wired to vLLM's structured outputs yet; use backend 'transformers' or 'llamacpp', or "
                "pipeline.grounded: false"
            )
        if sampling.trace_keep_bias is not None:
            raise ConfigError(
                "backend 'vllm': Sampling.trace_keep_bias (a per-message KEEP prior, "
                "pipeline.keep_prior) is not wired to vLLM's logits processors yet; use backend "
                "'transformers' or 'llamacpp', or pipeline.keep_prior: 0"
            )
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        s = sampling
        params = SamplingParams(
            temperature=s.temperature,
            top_p=s.top_p,
            max_tokens=s.max_tokens,
            seed=s.seed,
            stop=list(s.stop) if s.stop else None,
            structured_outputs=StructuredOutputsParams(json=s.json_schema) if s.json_schema is not None else None,
            logit_bias=bias_token_ids(self.llm.get_tokenizer(), s.logit_bias) if s.logit_bias else None,
            **(self.config.extra_body or {}),
        )
        t0 = time.perf_counter()
        try:
            outs = self.llm.chat(
                [to_messages(p) for p in prompts],
                params,
                use_tqdm=False,
                chat_template_kwargs=self.config.chat_template_kwargs,
            )
        except Exception as e:  # the whole batch failed (e.g. a prompt longer than the context)
            log.error("%s: vLLM batch failed: %s", self.model_id, e)
            return [error_completion(e, self.model_id, time.perf_counter() - t0) for _ in prompts]
        latency = time.perf_counter() - t0
        return [
            Completion(
                text=o.outputs[0].text,
                prompt_tokens=len(o.prompt_token_ids or ()),
                completion_tokens=len(o.outputs[0].token_ids),
                latency_s=latency,
                model=self.model_id,
                finish_reason=o.outputs[0].finish_reason,
            )
            for o in outs
        ]
