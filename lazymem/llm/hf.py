"""A causal LM run in this process with transformers: chat template, length-sorted left-padded batches.

Greedy when temperature is 0; a ``json_schema`` is enforced token by token with outlines
(imported on first use). torch and transformers are imported when the model first loads.

A decision schema whose array follows its trace (``decision_schema(n, think=True)``) also gets
``lazymem.llm.processors.FollowTrace``: each item's op is the one its trace line ends with, so the array cannot
contradict the decision the trace made (where a logit bias on " KEEP" acts).

``Sampling.grounded`` adds ``Grounded`` (after both, or alone in free generation): while the
model writes item i's ``compressed_content``, only tokens that keep it a verbatim span of text i
are allowed (``lazymem.llm.grounding``).

``Sampling.trace_independent``: ``TraceKeepBias`` records each trace line's op and makes the model write DROP
there (``lazymem.llm.trace.IndependentOps``); ``FollowTrace`` makes the array follow the recorded decisions,
which are also written into the returned trace. One pass writes trace and array, so the array is written
after the trace as generated (every op DROP); llama.cpp's array pass reads the trace as decided, so where
a KEEP was decided the two engines' kept spans may differ (the ops do not).

``extra_body: {content_adapter: DIR}`` (as on llama.cpp): a second model, the base with that adapter, writes the
array. The first pass stops at ``</think>``; the second re-reads the prompt, is made to write the trace as
decided token by token (``Forced``), then writes the array under the same grammar, ``FollowTrace`` and
``Grounded``. The decisions stay the first adapter's; each KEEP's content is the second's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.errors import ConfigError, ModelLoadError
from lazymem.llm.base import (
    Completion,
    LLMConfig,
    Prompt,
    Sampling,
    bias_token_ids,
    error_completion,
    to_messages,
)
from lazymem.llm.processors import BiasProcessor, FollowTrace, Forced, Grounded, TraceKeepBias
from lazymem.llm.trace import require_followed_trace, set_ops
from lazymem.llm.usage import engine_pass
from lazymem.prompts import ARRAY_FOLLOWS_TRACE, THINK_LINES, TRACE_LINE_CHARS
from lazymem.runtime import check_device, torch_threads

log = logging.getLogger("lazymem.llm")

# Compiled JSON-schema indexes kept, oldest dropped first: one per window size, and at 8 items with the
# trace's bounded lines one takes ~2 GB (measured: 0.74 GB at 3 items with unbounded content, 1.67 GB with
# 512-character content); every size kept at once got an evaluation OOM-killed on a 23 GB machine.
INDEX_CACHE = 3


class TransformersBackend:
    """A causal LM in this process: chat template, left-padded batches, optional JSON constraint."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.model_id = config.model
        self.identity = config.identity()
        self._model = self._tokenizer = None
        self._outlines = None  # outlines_core Vocabulary wrapper, built on the first json_schema call
        self._indexes: dict[str, Any] = {}  # schema JSON -> outlines_core Index (reusable across calls)
        self._op_tokens: dict[str, Any] | None = None  # token texts and masks for FollowTrace
        self._span_tokens = None  # the vocabulary indexed for Grounded
        self._lock = threading.Lock()  # one generate at a time per model
        self.content_adapter = (config.extra_body or {}).get("content_adapter")  # checked by LLMConfig
        self._content_model = None  # the base with content_adapter: writes a trace-following array pass

    def load(self):
        """Load tokenizer and model (on first use); returns (model, tokenizer)."""
        if self._model is None:
            import torch
            from transformers import AutoTokenizer

            from lazymem.llm.models import resolve_model

            check_device(self.config.device, "LLMConfig.device")
            path = resolve_model(self.config.model)
            if str(path).startswith(("/", "./", "../", "~")) and not os.path.isdir(os.path.expanduser(str(path))):
                raise ConfigError(
                    f"LLMConfig.model={self.config.model!r}: no model directory there (a local path "
                    "must hold config.json and weights; offline, "
                    "'smollm2-offline' ships with the package)"
                )
            tok = AutoTokenizer.from_pretrained(path, padding_side="left")
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            dtype = self.config.dtype
            if dtype == "auto":
                dtype = "float32" if self.config.device == "cpu" else "auto"
            torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
            self._model = self._load_model(path, self.config.adapter, torch_dtype)
            if self.content_adapter is not None:
                self._content_model = self._load_model(path, self.content_adapter, torch_dtype)
            self._tokenizer = tok
        return self._model, self._tokenizer

    def _load_model(self, path: Any, adapter: str | None, dtype: Any) -> Any:
        """The base at ``path`` with ``adapter`` merged into it (None: the base), on the device, in eval mode."""
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        if adapter:  # e.g. a LoRA saved by `lazymem train sft` / `grpo`
            from peft import PeftModel

            from lazymem.llm.models import resolve_adapter

            try:
                model = PeftModel.from_pretrained(model, resolve_adapter(adapter))
            except (OSError, ValueError) as e:
                raise ConfigError(f"adapter {adapter!r} could not be loaded on {self.config.model!r}: {e}") from e
            # Folded into the base weights (W + BA): the same model without a LoRA branch per
            # linear layer at every decoding step; the files on disk stay a separate adapter.
            model = model.merge_and_unload()
        return model.to(self.config.device).eval()

    def render(self, prompt: Prompt) -> str:
        """The prompt text the model sees (chat template with the generation prompt)."""
        _, tok = self.load()
        if tok.chat_template is None:
            if isinstance(prompt, str):  # a base model without a template reads the text as is
                return prompt
            raise ConfigError(f"model {self.config.model!r} has no chat template; pass plain strings")
        return tok.apply_chat_template(
            to_messages(prompt), tokenize=False, add_generation_prompt=True, **(self.config.chat_template_kwargs or {})
        )

    def _json_processor(self, schema: Mapping):
        """A fresh outlines logits processor for `schema` (its Index is built once and reused)."""
        try:
            from outlines.backends.outlines_core import OutlinesCoreBackend, OutlinesCoreLogitsProcessor
            from outlines.models.transformers import from_transformers
            from outlines_core import Index
            from outlines_core.json_schema import build_regex_from_schema
        except ImportError as e:
            raise ModelLoadError(
                f"json_schema with backend='transformers' needs outlines ({e}): pip install outlines==1.3.3"
            ) from e
        model, tok = self.load()
        if self._outlines is None:
            self._outlines = OutlinesCoreBackend(from_transformers(model, tok))
        # The grammar keeps the schema's own property order (the paper's items start with "op",
        # so KEEP/DROP is chosen before the content is written); the sorted dump is only the key.
        # ARRAY_FOLLOWS_TRACE is enforced by FollowTrace, not by the grammar: the same Index.
        schema = {k: v for k, v in schema.items() if k != ARRAY_FOLLOWS_TRACE}
        key = json.dumps(schema, sort_keys=True)
        if key not in self._indexes:
            lines = schema.pop(THINK_LINES, None)  # a trace of exactly that many numbered lines first
            regex = build_regex_from_schema(json.dumps(schema))
            if lines is not None:
                line = rf"[0-9]{{1,3}}\. [^\n]{{1,{TRACE_LINE_CHARS}}}\n"
                regex = "<think>\n" + f"(?:{line}){{{int(lines)}}}" + "</think>\n" + regex
            while len(self._indexes) >= INDEX_CACHE:  # the oldest goes: an index of 8 items takes gigabytes
                self._indexes.pop(next(iter(self._indexes)))
            self._indexes[key] = Index(regex, self._outlines.vocabulary)
        return OutlinesCoreLogitsProcessor(self._indexes[key], "torch")

    def _op_token_ids(self) -> dict[str, Any]:
        """Every token's text, and masks of the tokens that can write an op's first letter: those
        starting with K / D (right after the quote) and those holding a quote and a K or D."""
        if self._op_tokens is None:
            import torch

            model, tok = self.load()
            width = model.get_output_embeddings().weight.shape[0]  # the logits' width
            texts = tok.batch_decode([[i] for i in range(min(len(tok), width))])
            texts += [""] * (width - len(texts))  # padded logits rows: never K or D

            def mask(keep) -> Any:
                return torch.tensor([bool(keep(t)) for t in texts], device=model.device)

            self._op_tokens = {
                "texts": texts,
                "K": mask(lambda t: t.startswith("K")),
                "D": mask(lambda t: t.startswith("D")),
                "quoted": mask(lambda t: '"' in t and ("K" in t or "D" in t)),
            }
        return self._op_tokens

    def _generate_batch(self, texts: list[str], s: Sampling) -> list[Completion]:
        model, tok = self.load()
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        content = self._content_model is not None and bool(s.json_schema and s.json_schema.get(ARRAY_FOLLOWS_TRACE))
        trace = None
        if s.trace_keep_bias is not None or s.trace_independent:
            trace = TraceKeepBias(tok, enc["input_ids"].shape[1], s, len(texts))
        decided = trace.decided if trace is not None else None
        # with a content adapter the deciding model writes the trace only: the array is the second pass's
        stop = ("</think>",) if content else ()
        first = self._run(model, enc, s, trace=trace, decided=decided, stop=stop)
        if not content:
            return first
        return self._content_pass(enc, s, first)

    def _run(
        self,
        model: Any,
        enc: Any,
        s: Sampling,
        trace: Any = None,
        decided: Any = None,
        stop: Sequence[str] = (),
        forced: Sequence[Sequence[int]] | None = None,
    ) -> list[Completion]:
        """One ``generate`` of ``model`` on the batch ``enc`` under ``s``'s processors (``trace``: a
        ``TraceKeepBias``; ``stop``: extra stop strings, kept in the text; ``forced``: each row's first tokens)."""
        import torch

        tok = self._tokenizer
        width = enc["input_ids"].shape[1]
        kwargs: dict[str, Any] = {
            "max_new_tokens": s.max_tokens,
            "do_sample": not s.greedy,
            "pad_token_id": tok.pad_token_id,
        }
        if not s.greedy:
            kwargs.update(temperature=s.temperature, top_p=s.top_p, top_k=0)  # OpenAI semantics: no top-k
        if s.stop or stop:
            kwargs.update(stop_strings=list(s.stop or ()) + list(stop), tokenizer=tok)
        processors = []
        if s.logit_bias:
            processors.append(BiasProcessor(bias_token_ids(tok, s.logit_bias)))
        if trace is not None:
            processors.append(trace)
        if s.json_schema is not None:
            processors.append(self._json_processor(s.json_schema))  # masks after the bias
            if s.json_schema.get(ARRAY_FOLLOWS_TRACE):
                processors.append(FollowTrace(tok, width=width, ids=self._op_token_ids(), decided=decided))
        if s.grounded is not None:
            if self._span_tokens is None:
                from lazymem.llm.grounding import SpanTokens

                self._span_tokens = SpanTokens(self._op_token_ids()["texts"])
            processors.append(Grounded(tok, width, s.grounded, self._span_tokens))
        if forced is not None:
            processors.append(Forced(width, forced))  # last: what it forces is written whatever the others say
        if processors:
            kwargs["logits_processor"] = processors
        kwargs.update({k: v for k, v in (self.config.extra_body or {}).items() if k != "content_adapter"})
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else []) | {tok.eos_token_id}
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        latency = time.perf_counter() - t0
        results = []
        for k, (row, n_prompt) in enumerate(zip(out[:, width:].tolist(), enc["attention_mask"].sum(dim=1).tolist())):
            end = next((i + 1 for i, t in enumerate(row) if t in eos), None)
            ids = row[:end] if end is not None else row
            text = tok.decode(ids, skip_special_tokens=True)
            if decided is not None:
                text = set_ops(text, decided[k].ops)  # the trace as decided (its lines were written DROP)
            cut = min((i for i in (text.find(x) for x in s.stop or ()) if i >= 0), default=-1)
            if cut >= 0:  # HF keeps the stop string; OpenAI servers do not
                text = text[:cut]
            finish = "stop" if end is not None or cut >= 0 else "length"
            results.append(
                Completion(
                    text=text,
                    prompt_tokens=int(n_prompt),
                    completion_tokens=len(ids),
                    latency_s=latency,
                    model=self.model_id,
                    finish_reason=finish,
                )
            )
        return results

    def _content_pass(self, enc: Any, s: Sampling, first: list[Completion]) -> list[Completion]:
        """``extra_body.content_adapter``: each row whose trace the deciding model finished is decoded again by the
        content model, made to write that trace as decided (``Forced``), then writing the array after it; a row
        whose trace ran out of tokens keeps the first pass (its finish is ``length``)."""
        tok = self._tokenizer
        rows, forced = [], []
        for k, c in enumerate(first):
            end = c.text.find("</think>")
            if end >= 0:
                rows.append(k)
                forced.append(tok(c.text[:end] + "</think>\n", add_special_tokens=False)["input_ids"])
        if not rows:
            return first
        sub = {key: value[rows] for key, value in enc.items()}
        second = self._run(self._content_model, sub, s, forced=forced)
        out = list(first)
        for k, c in zip(rows, second):
            f = first[k]
            passes = (
                engine_pass("trace", f.prompt_tokens, None, f.completion_tokens, f.latency_s),
                engine_pass("content", c.prompt_tokens, None, c.completion_tokens, c.latency_s),
            )
            out[k] = dataclasses.replace(c, latency_s=f.latency_s + c.latency_s, passes=passes)
        return out

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        if not prompts:
            return []
        require_followed_trace(sampling)
        if self.content_adapter is not None and not (sampling.json_schema or {}).get(ARRAY_FOLLOWS_TRACE):
            raise ConfigError(
                "LLMConfig.extra_body.content_adapter writes the array pass of a decoding whose array "
                "follows its <think> trace (a trace-following decision schema: pipeline.structured and "
                "structured_trace); this sampling has no such trace"
            )
        import torch

        with self._lock, torch_threads(self.config.num_threads):
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
            # A prompt past the model's trained positions would run (RoPE extends) and decode noise: refuse
            # it per prompt, as llama.cpp and vLLM refuse a request over their context
            limit = getattr(self.load()[0].config, "max_position_embeddings", None)
            for i, n in enumerate(lengths):
                if limit and n + sampling.max_tokens > limit:
                    out[i] = error_completion(
                        ValueError(
                            f"Requested tokens ({n} in the prompt + {sampling.max_tokens} max_tokens) exceed the model's "
                            f"context of {limit} (max_position_embeddings)"
                        ),
                        self.model_id,
                    )
            order = [i for i in order if out[i] is None]
            bs = self.config.batch_size
            for start in range(0, len(order), bs):
                idx = order[start : start + bs]
                try:
                    done = self._generate_batch([texts[i] for i in idx], sampling)
                except Exception as e:  # e.g. CUDA out of memory: record it per prompt, go on
                    log.exception("%s: batch of %d prompts failed", self.model_id, len(idx))
                    done = [error_completion(e, self.model_id) for _ in idx]
                for i, c in zip(idx, done):
                    out[i] = c
            return out  # type: ignore[return-value]
