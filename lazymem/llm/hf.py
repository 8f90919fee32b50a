"""A causal LM run in this process with transformers: chat template, length-sorted left-padded batches.

Greedy when temperature is 0; a ``json_schema`` is enforced token by token with outlines
(imported on first use). torch and transformers are imported when the model first loads.

A decision schema whose array follows its trace (``decision_schema(n, think=True)``) also gets
``_FollowTrace``: each item's op is the one its trace line ends with, so the array cannot
contradict the decision the trace made (where a logit bias on " KEEP" acts).

``Sampling.grounded`` adds ``_Grounded`` (after both, or alone in free generation): while the
model writes item i's ``compressed_content``, only tokens that keep it a verbatim span of text i
are allowed (``lazymem.llm.grounding``).

``Sampling.trace_independent``: ``_TraceKeepBias`` records each trace line's op and makes the model write DROP
there (``lazymem.llm.trace.IndependentOps``); ``_FollowTrace`` makes the array follow the recorded decisions,
which are also written into the returned trace. One pass writes trace and array, so the array is written
after the trace as generated (every op DROP); llama.cpp's array pass reads the trace as decided, so where
a KEEP was decided the two engines' kept spans may differ (the ops do not).

``extra_body: {content_adapter: DIR}`` (as on llama.cpp): a second model, the base with that adapter, writes the
array. The first pass stops at ``</think>``; the second re-reads the prompt, is made to write the trace as
decided token by token (``_Forced``), then writes the array under the same grammar, ``_FollowTrace`` and
``_Grounded``. The decisions stay the first adapter's; each KEEP's content is the second's.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
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
from lazymem.llm.trace import (
    IndependentOps,
    require_followed_trace,
    set_ops,
    trace_drop_id,
    trace_keep_ids,
    trace_op_line,
    trace_ops,
)
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
        self._op_tokens: dict[str, Any] | None = None  # token texts and masks for _FollowTrace
        self._span_tokens = None  # the vocabulary indexed for _Grounded
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
                raise ConfigError(f"LLMConfig.model={self.config.model!r}: no model directory there (a local path "
                                  "must hold config.json and weights; offline, "
                                  "'smollm2-offline' ships with the package)")
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
            raise ModelLoadError(
                f"json_schema with backend='transformers' needs outlines ({e}): pip install outlines==1.3.3") from e
        model, tok = self.load()
        if self._outlines is None:
            self._outlines = OutlinesCoreBackend(from_transformers(model, tok))
        # The grammar keeps the schema's own property order (the paper's items start with "op",
        # so KEEP/DROP is chosen before the content is written); the sorted dump is only the key.
        # ARRAY_FOLLOWS_TRACE is enforced by _FollowTrace, not by the grammar: the same Index.
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

            self._op_tokens = {"texts": texts, "K": mask(lambda t: t.startswith("K")),
                               "D": mask(lambda t: t.startswith("D")),
                               "quoted": mask(lambda t: '"' in t and ("K" in t or "D" in t))}
        return self._op_tokens

    def _generate_batch(self, texts: list[str], s: Sampling) -> list[Completion]:
        model, tok = self.load()
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        content = self._content_model is not None and bool(s.json_schema and s.json_schema.get(ARRAY_FOLLOWS_TRACE))
        trace = None
        if s.trace_keep_bias is not None or s.trace_independent:
            trace = _TraceKeepBias(tok, enc["input_ids"].shape[1], s, len(texts))
        decided = trace.decided if trace is not None else None
        # with a content adapter the deciding model writes the trace only: the array is the second pass's
        stop = ("</think>",) if content else ()
        first = self._run(model, enc, s, trace=trace, decided=decided, stop=stop)
        if not content:
            return first
        return self._content_pass(enc, s, first)

    def _run(self, model: Any, enc: Any, s: Sampling, trace: Any = None, decided: Any = None, stop: Sequence[str] = (),
             forced: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """One ``generate`` of ``model`` on the batch ``enc`` under ``s``'s processors (``trace``: a
        ``_TraceKeepBias``; ``stop``: extra stop strings, kept in the text; ``forced``: each row's first tokens)."""
        import torch

        tok = self._tokenizer
        width = enc["input_ids"].shape[1]
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_tokens, "do_sample": not s.greedy,
                                  "pad_token_id": tok.pad_token_id}
        if not s.greedy:
            kwargs.update(temperature=s.temperature, top_p=s.top_p, top_k=0)  # OpenAI semantics: no top-k
        if s.stop or stop:
            kwargs.update(stop_strings=list(s.stop or ()) + list(stop), tokenizer=tok)
        processors = []
        if s.logit_bias:
            processors.append(_BiasProcessor(bias_token_ids(tok, s.logit_bias)))
        if trace is not None:
            processors.append(trace)
        if s.json_schema is not None:
            processors.append(self._json_processor(s.json_schema))  # masks after the bias
            if s.json_schema.get(ARRAY_FOLLOWS_TRACE):
                processors.append(_FollowTrace(tok, width=width, ids=self._op_token_ids(), decided=decided))
        if s.grounded is not None:
            if self._span_tokens is None:
                from lazymem.llm.grounding import SpanTokens

                self._span_tokens = SpanTokens(self._op_token_ids()["texts"])
            processors.append(_Grounded(tok, width, s.grounded, self._span_tokens))
        if forced is not None:
            processors.append(_Forced(width, forced))  # last: what it forces is written whatever the others say
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
            results.append(Completion(text=text, prompt_tokens=int(n_prompt), completion_tokens=len(ids),
                                      latency_s=latency, model=self.model_id, finish_reason=finish))
        return results

    def _content_pass(self, enc: Any, s: Sampling, first: list[Completion]) -> list[Completion]:
        """``extra_body.content_adapter``: each row whose trace the deciding model finished is decoded again by the
        content model, made to write that trace as decided (``_Forced``), then writing the array after it; a row
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
            out[k] = dataclasses.replace(c, latency_s=first[k].latency_s + c.latency_s)
        return out

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        if not prompts:
            return []
        require_followed_trace(sampling)
        if self.content_adapter is not None and not (sampling.json_schema or {}).get(ARRAY_FOLLOWS_TRACE):
            raise ConfigError("LLMConfig.extra_body.content_adapter writes the array pass of a decoding whose array "
                              "follows its <think> trace (a trace-following decision schema: pipeline.structured and "
                              "structured_trace); this sampling has no such trace")
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


_OP_SET = re.compile(r'"op"[ ]?:[ ]?"([A-Z])')  # an item's op, from its first letter
_OP_OPEN = re.compile(r'"op"[ ]?:[ ]?"$')  # an op value opened, its letter not yet written
class _FollowTrace:
    """Item i's op = the op trace line i ends with (a transformers LogitsProcessor after the grammar).

    While item i's op is not yet written, every token the grammar allows that would write the
    other op's first letter there (alone after the quote, or with the quote and key merged into
    one token) is masked; a trace line that names no op leaves the choice to the model. Right
    after ``"op": "`` that is the tokens starting with the other letter; elsewhere only tokens
    holding a quote can open an op value, so only those are checked.
    """

    def __init__(self, tok: Any, width: int, ids: Mapping[str, Any], decided: Sequence[IndependentOps] | None = None):
        self.tok, self.width, self.ids, self.decided = tok, width, ids, decided

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row in range(input_ids.shape[0]):
            text = self.tok.decode(input_ids[row, self.width:].tolist(), skip_special_tokens=True)
            end = text.find("</think>")
            if end < 0:
                continue
            ops, array = trace_ops(text), text[end:]
            if self.decided is not None:  # trace_independent: the recorded decisions, not the DROPs written
                ops = [self.decided[row].ops.get(i, op) for i, op in enumerate(ops)]
            done = len(_OP_SET.findall(array))
            if done >= len(ops) or ops[done] is None:
                continue
            other = "D" if ops[done] == "KEEP" else "K"
            tail = array[-16:]
            if _OP_OPEN.search(tail):  # the value's quote is written: its first letter is next
                scores[row, self.ids[other]] = float("-inf")
                continue
            before = len(_OP_SET.findall(tail))
            allowed = torch.isfinite(scores[row]) & self.ids["quoted"]
            for t in torch.nonzero(allowed).flatten().tolist():
                new = _OP_SET.findall(tail + self.ids["texts"][t])[before:]
                if new and new[0] == other:
                    scores[row, t] = float("-inf")
        return scores


class _Grounded:
    """Item i's compressed_content stays a verbatim span of text i (a transformers LogitsProcessor,
    last in the list: it narrows what the grammar, if any, still allows). A row whose text is
    followed by ``JsonScan`` incrementally; where nothing the other processors allow is a span,
    the row is left as it is (the gate and the rewritten count then judge it)."""

    def __init__(self, tok: Any, width: int, texts: Sequence[str], vocab: Any):
        from lazymem.llm.grounding import SpanText

        self.tok, self.width, self.vocab = tok, width, vocab
        self.spans = [SpanText(t) for t in texts]
        self.rows: dict[int, tuple[str, Any]] = {}  # row -> (text scanned, JsonScan after it)

    def _scan(self, row: int, text: str) -> Any:
        from lazymem.llm.grounding import JsonScan

        done, scan = self.rows.get(row, ("", None))
        if scan is None or not text.startswith(done):  # a byte-level token may rewrite the last character
            done, scan = "", JsonScan()
        scan.feed(text[len(done):])
        self.rows[row] = (text, scan)
        return scan

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row in range(input_ids.shape[0]):
            text = self.tok.decode(input_ids[row, self.width:].tolist(), skip_special_tokens=True)
            scan = self._scan(row, text)
            allowed = self.vocab.allowed(scan, self.spans)
            if allowed is not None:
                idx = torch.tensor(sorted(t for t in allowed if t < scores.shape[1]), dtype=torch.long,
                                   device=scores.device)
                if idx.numel() and bool(torch.isfinite(scores[row, idx]).any()):
                    kept = scores[row, idx].clone()
                    scores[row] = float("-inf")
                    scores[row, idx] = kept
            elif scan.near_content:
                banned = [t for t in self.vocab.banned(scan, self.spans) if t < scores.shape[1]]
                finite = torch.isfinite(scores[row])
                finite[banned] = False
                if bool(finite.any()):
                    scores[row, banned] = float("-inf")
        return scores


class _TraceKeepBias:
    """``Sampling.trace_keep_bias``: where the op of line i of a row's ``<think>`` trace comes next (after its
    ``->``: ``trace_op_line``), line i's number is added to `` KEEP``'s logit (after ``_BiasProcessor``'s
    ``logit_bias``; a transformers LogitsProcessor). With ``Sampling.trace_independent`` it then records
    line i's op (``decided``: one ``IndependentOps`` per row) and makes `` DROP`` the greedy choice."""

    def __init__(self, tok: Any, width: int, s: Sampling, rows: int):
        self.tok, self.width, self.lines = tok, width, tuple(s.trace_keep_bias or ())
        self.keep, _ = trace_keep_ids(tok, s)
        self.drop = trace_drop_id(tok) if s.trace_independent else None
        self.decided = [IndependentOps() for _ in range(rows)] if s.trace_independent else None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        for row in range(input_ids.shape[0]):
            line = trace_op_line(self.tok.decode(input_ids[row, self.width:].tolist(), skip_special_tokens=True))
            if line is not None and line < len(self.lines):
                scores[row, self.keep] += self.lines[line]
            if line is not None and self.decided is not None and self.decided[row].decide(
                    line, float(scores[row, self.keep]), float(scores[row, self.drop])):
                scores[row, self.drop] = scores[row].max() + 1000.0  # written DROP, whatever was decided
        return scores


class _Forced:
    """Row r writes ``ids[r]`` first, token by token (a transformers LogitsProcessor, last in the list): a content
    adapter's pass re-writes the trace the deciding model wrote, as decided, before its own array."""

    def __init__(self, width: int, ids: Sequence[Sequence[int]]):
        self.width, self.ids = width, [list(r) for r in ids]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t = input_ids.shape[1] - self.width
        for row, forced in enumerate(self.ids):
            if t < len(forced):
                scores[row] = float("-inf")
                scores[row, forced[t]] = 0.0
        return scores


class _BiasProcessor:
    """Adds a fixed bias to some tokens' logits at every step (a transformers LogitsProcessor)."""

    def __init__(self, bias: dict[int, float]):
        self.ids, self.values = list(bias), list(bias.values())

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.clone()
        scores[:, self.ids] += torch.tensor(self.values, dtype=scores.dtype, device=scores.device)
        return scores
