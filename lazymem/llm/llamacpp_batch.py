"""Greedy decoding of many prompts at once on one llama.cpp context: multi-sequence batches,
a shared prompt prefix computed once, and the grammar checked on the chosen token first.

``LlamaCppBackend`` (``extra_body: {decode: batched}``) hands a question's windows here as one
call. Three levers, each exact for greedy decoding:

- **Multi-sequence batches.** Every sequence still generating contributes its next token to one
  ``llama_decode`` call: the weights are read once a step for all of them. On 2 cores a step of 8
  tokens costs about twice a step of one (``lazymem bench pipeline`` measures it).
- **The shared prefix once.** Sequence 0 holds the last prompt admitted (kept from one call to the
  next); a new prompt takes the prefix it shares with it (the system prompt, the instructions, the
  question) as a copy of its KV stream (``llama_memory_seq_cp``, nothing computed) and evaluates only
  the rest.
- **The grammar on one token.** The processors (logit bias, the trace's KEEP prior) run on the
  logits, then the argmax is checked against the grammar alone; only when the grammar rejects it
  is the grammar applied to the whole vocabulary (as llama.cpp's own ``common_sampler`` does).
  The greedy choice is the same either way: the first maximum among the tokens the grammar allows.

What can differ from one prompt at a time: a step of one token from each of several sequences gives
the logits of one token at a time bit for bit, but several tokens of one sequence in a step (a
prompt's prefill, split at other places when a shared prefix is copied) run other kernels, so logits
can differ and a near-tie can fall the other way (``scripts/check_batch_exactness.py`` measures
both). ``lazymem bench pipeline`` counts identical decisions and memories against the one-at-a-time
engine on the same questions.

Each sequence has its own stream, sized for a call's longest prompt and its ``max_tokens``
(``stream_cells``: ``STREAM_CELLS`` or more); a longer stream means fewer sequences side by side, so the
context keeps the default's ``(MAX_SEQS + 1) * STREAM_CELLS`` cells (``sequences``). Only a prompt the instance itself cannot hold (as long as
``extra_body.n_ctx``) goes to the one-at-a-time engine, which reports it.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazymem.errors import ConfigError
from lazymem.llm.base import Completion, Sampling

# KV cells of one sequence at least: a window prompt and its max_tokens (the paper's 8-message windows: a prompt
# of up to ~2,000 tokens and 1,536 new ones). A stream's unused cells cost memory (23 KB a cell for SmolLM2-135M's
# F16 cache: 1.2 GB for 13 streams), not time: a token attends over its own stream's used cells.
STREAM_CELLS = 4096
STREAM_STEP = 1024  # a longer stream grows in steps of this many cells
MAX_SEQS = 12  # sequences decoded side by side (sequence 0, the shared prefix, is one more)
SLACK = 64  # tokens a trace may gain when re-tokenized for the array pass


def stream_cells(need: int) -> int:
    """The stream for prompts whose longest needs ``need`` cells (prompt, ``max_tokens`` and ``SLACK``).

    >>> stream_cells(3000), stream_cells(4097), stream_cells(8256)
    (4096, 5120, 9216)
    """
    return max(STREAM_CELLS, -(-need // STREAM_STEP) * STREAM_STEP)


def sequences(stream: int) -> int:
    """Sequences side by side on streams of ``stream`` cells: ``MAX_SEQS``, fewer where longer streams would
    take more than the ``(MAX_SEQS + 1) * STREAM_CELLS`` cells of the default (sequence 0 is one more), at least 1.

    >>> sequences(4096), sequences(5120), sequences(9216), sequences(60000)
    (12, 9, 4, 1)
    """
    return max(1, min(MAX_SEQS, (MAX_SEQS + 1) * STREAM_CELLS // stream - 1))


Processor = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Job:
    """One prompt to decode greedily."""

    ids: list[int]
    max_tokens: int
    grammar: Any = None  # a llama_cpp.LlamaGrammar, or None
    processors: Sequence[Processor] = ()
    # filled by the decoder
    out: list[int] = field(default_factory=list)
    finish: str | None = None
    cached: int = 0  # prompt tokens taken from the shared prefix
    seconds: float = 0.0  # this job's share of the wall time of the steps it was in
    sampler: Any = None  # its grammar's llama_sampler while it decodes


def bias_processor(bias: dict[int, float]) -> Processor:
    """``logit_bias`` as llama-cpp-python applies it (added to the token's logit)."""

    def apply(_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        for t, b in bias.items():
            scores[t] += b
        return scores

    return apply


class BatchContext:
    """A llama.cpp context of ``max_seqs + 1`` sequences (default: ``sequences(stream)``) over a loaded
    ``llama_cpp.Llama``'s weights (no second copy of the model), each sequence in its own stream of ``stream`` cells: a token attends over its own
    sequence only (one unified cache would make every token read every sequence's cells). Sequence 0 holds
    the last prompt admitted; a prompt takes the prefix it shares with it by copying the stream
    (``llama_memory_seq_cp`` copies whole streams) and cutting it where they part. Not thread-safe: one
    ``run`` at a time."""

    def __init__(self, llm: Any, n_threads: int, stream: int | None = None, max_seqs: int | None = None):
        import llama_cpp
        from llama_cpp import _internals

        self.lc, self.llm = llama_cpp, llm
        stream = stream or STREAM_CELLS
        max_seqs = max_seqs or sequences(stream)
        self.max_seqs = max(1, min(max_seqs, llama_cpp.llama_max_parallel_sequences() - 1))
        params = type(llm.context_params).from_buffer_copy(llm.context_params)  # the instance's settings
        params.n_ctx = stream * (self.max_seqs + 1)
        params.n_batch = params.n_ubatch = 512
        params.n_seq_max = self.max_seqs + 1
        params.kv_unified = False
        params.n_threads = params.n_threads_batch = n_threads
        params.no_perf = True
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.stream, self.n_batch = stream, 512
        self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, self.max_seqs + 1)
        self.vocab = llm._model.vocab
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.mem = llama_cpp.llama_get_memory(self.ctx.ctx)
        self.prefix: list[int] = []  # what sequence 0 holds
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = (llama_cpp.llama_token_data * self.n_vocab)()
        self._all_np = np.ctypeslib.as_array(self._all).view(
            np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        )
        self._all_ids = np.arange(self.n_vocab, dtype=np.intc)

    def fits(self, n_prompt: int, max_tokens: int) -> bool:
        """Whether a prompt and its generation fit one sequence's stream."""
        return n_prompt + max_tokens <= self.stream

    def close(self) -> None:
        if getattr(self, "batch", None) is not None:
            self.lc.llama_batch_free(self.batch)
            self.batch = None
        if getattr(self, "ctx", None) is not None:
            self.ctx.close()

    def __del__(self) -> None:
        self.close()

    # the batch

    def _decode(self, items: Sequence[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of ``(token, pos, seq, logits)`` items (at most ``n_batch``)."""
        b = self.batch
        for i, (tok, pos, seq, want) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i] = tok, pos, 1
            b.seq_id[i][0] = seq
            b.logits[i] = want
        b.n_tokens = len(items)
        rc = self.lc.llama_decode(self.ctx.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc} for a batch of {len(items)} tokens")

    def _prefill(self, job: Job, seq: int) -> None:
        """Take the prefix ``job`` shares with sequence 0, evaluate the rest into ``seq`` (logits of
        its last token at batch index 0 after the last chunk), then make sequence 0 this prompt."""
        lc, ids = self.lc, job.ids
        n = 0
        for a, b in zip(self.prefix, ids):
            if a != b:
                break
            n += 1
        n = min(n, len(ids) - 1)  # at least one token evaluated: its logits start the generation
        lc.llama_memory_seq_rm(self.mem, seq, -1, -1)
        if n:
            lc.llama_memory_seq_cp(self.mem, 0, seq, -1, -1)  # the whole stream, then cut where they part
            lc.llama_memory_seq_rm(self.mem, seq, n, -1)
        job.cached = n
        rest = list(range(n, len(ids)))
        for at in range(0, len(rest), self.n_batch):
            chunk = rest[at : at + self.n_batch]
            self._decode([(ids[p], p, seq, p == len(ids) - 1) for p in chunk])
        lc.llama_memory_seq_rm(self.mem, 0, -1, -1)
        lc.llama_memory_seq_cp(self.mem, seq, 0, -1, -1)
        self.prefix = list(ids)

    # sampling

    def _pick(self, job: Job, logits_at: int) -> int:
        """The greedy token of ``job`` from the logits at batch index ``logits_at``: processors, argmax,
        the grammar on that token alone, the grammar on the vocabulary only where it rejects it."""
        lc = self.lc
        ptr = lc.llama_get_logits_ith(self.ctx.ctx, logits_at)
        scores = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()
        if job.processors:
            held = np.asarray(job.ids + job.out, dtype=np.intc)
            for p in job.processors:
                scores = p(held, scores)
        tok = int(np.argmax(scores))
        smpl = job.sampler
        if smpl is None:
            return tok
        one = self._one
        one[0].id, one[0].logit, one[0].p = tok, float(scores[tok]), 0.0
        arr = lc.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))
        if not np.isfinite(one[0].logit):  # rejected: the grammar over every token
            self._all_np["id"] = self._all_ids
            self._all_np["logit"] = scores
            self._all_np["p"] = 0.0
            arr = lc.llama_token_data_array(data=self._all, size=self.n_vocab, selected=-1, sorted=False)
            lc.llama_sampler_apply(smpl, ctypes.byref(arr))
            tok = int(np.argmax(self._all_np["logit"]))
        lc.llama_sampler_accept(smpl, tok)
        return tok

    def run(self, jobs: Sequence[Job], clock: Callable[[], float]) -> None:
        """Decode every job to its end (EOS, grammar complete, or ``max_tokens``); fills ``out``,
        ``finish``, ``cached`` and ``seconds``."""
        lc = self.lc
        for j in jobs:
            if not self.fits(len(j.ids), j.max_tokens):
                raise ConfigError(
                    f"a prompt of {len(j.ids)} tokens with max_tokens {j.max_tokens} does not fit a batch "
                    f"sequence of {self.stream} cells"
                )
        for seq in range(1, self.max_seqs + 1):  # sequence 0 keeps the last prompt: the next call shares its prefix
            lc.llama_memory_seq_rm(self.mem, seq, -1, -1)
        waiting = list(jobs)
        active: dict[int, Job] = {}  # seq -> job
        free = list(range(self.max_seqs, 0, -1))
        last: dict[int, int] = {}  # seq -> its next token to evaluate
        try:
            while waiting or active:
                # admit: prompt evaluated, first token picked (each prefill is its own step)
                while waiting and free:
                    job, seq = waiting.pop(0), free.pop()
                    t0 = clock()
                    if job.grammar is not None:
                        job.sampler = lc.llama_sampler_init_grammar(
                            self.vocab, job.grammar._grammar.encode(), job.grammar._root.encode()
                        )
                    self._prefill(job, seq)
                    tok = self._pick(job, -1)
                    job.seconds += clock() - t0
                    if self._step_done(job, tok):
                        free.append(seq)
                        self._release(seq)
                    else:
                        active[seq], last[seq] = job, tok
                if not active:
                    continue
                t0 = clock()
                step = list(active.items())
                self._decode([(last[s], len(j.ids) + len(j.out) - 1, s, True) for s, j in step])
                for i, (s, job) in enumerate(step):
                    tok = self._pick(job, i)
                    if self._step_done(job, tok):
                        del active[s], last[s]
                        free.append(s)
                        self._release(s)
                    else:
                        last[s] = tok
                share = (clock() - t0) / len(step)
                for _, job in step:
                    job.seconds += share
        finally:
            for j in jobs:
                if j.sampler is not None:
                    lc.llama_sampler_free(j.sampler)
                    j.sampler = None

    def _step_done(self, job: Job, tok: int) -> bool:
        """Take ``tok`` into ``job``; whether it has finished."""
        if self.lc.llama_vocab_is_eog(self.vocab, tok):
            job.finish = "stop"
            return True
        job.out.append(tok)
        if len(job.out) >= job.max_tokens:
            job.finish = "length"
            return True
        return False

    def _release(self, seq: int) -> None:
        """Free a finished sequence's cells (those it shares with sequence 0 stay)."""
        self.lc.llama_memory_seq_rm(self.mem, seq, -1, -1)


def _text(llm: Any, job: Job) -> str:
    """The completion's text as llama-cpp-python writes it (its detokenizer, after the prompt)."""
    return llm.detokenize(job.out, prev_tokens=job.ids).decode("utf-8", errors="ignore")


def _cap(backend: Any, ids: Sequence[int], max_tokens: int) -> int:
    """``max_tokens`` as llama-cpp-python caps it to the instance's context (``extra_body.n_ctx``)."""
    n_ctx = backend.n_ctx
    if len(ids) >= n_ctx:
        raise ValueError(f"Requested tokens ({len(ids)}) exceed context window of {n_ctx}")
    return max_tokens if max_tokens + len(ids) < n_ctx else n_ctx - len(ids)


def forced_array(s: Sampling, ops: Sequence[str | None]) -> str | None:
    """The array pass's text where its grammar leaves nothing to choose but whitespace: grounded decoding,
    every op DROP (its content empty) and reasons of at most 0 characters. None where the writer has
    something to write."""
    if s.grounded is None or not ops or any(op != "DROP" for op in ops):
        return None
    schema = dict(s.json_schema or {})
    reason = ((schema.get("items") or {}).get("anyOf") or [{}])[0].get("properties", {}).get("reason", {})
    if reason.get("maxLength") != 0:
        return None
    return json.dumps([{"op": "DROP", "compressed_content": "", "reason": ""}] * len(ops))


def decode_prompts(backend: Any, texts: Sequence[str], samplings: Sequence[Sampling]) -> list[Completion]:
    """Every rendered prompt decoded greedily as ``LlamaCppBackend`` decodes one (its grammar, logit bias,
    trace prior, and for a trace-following schema the array pass after the trace, by the content adapter
    where there is one), all prompts of a pass in one ``BatchContext.run`` on streams sized for the longest
    (``stream_cells``). A prompt as long as the instance's context (``extra_body.n_ctx``) is left to the
    one-at-a-time engine, which reports it."""
    _, tok = backend.load()
    n_ctx = backend.n_ctx
    need: list[int | None] = []
    for t, s in zip(texts, samplings):
        ids = tok(t, add_special_tokens=False)["input_ids"]
        need.append(len(ids) + _cap(backend, ids, s.max_tokens) + SLACK if len(ids) < n_ctx else None)
    out: list[Completion | None] = [None] * len(texts)
    idx = [i for i, c in enumerate(need) if c is not None]
    if idx:
        cells = stream_cells(max(need[i] for i in idx))  # type: ignore[type-var]
        batch = _decode_batch(backend, [texts[i] for i in idx], [samplings[i] for i in idx], cells)
        for i, c in zip(idx, batch):
            out[i] = c
    for i, c in enumerate(out):
        if c is None:  # as long as the instance's context, or its array pass would not fit after its trace
            out[i] = backend._safe(texts[i], samplings[i])
    return out  # type: ignore[return-value]


def _decode_batch(
    backend: Any, texts: Sequence[str], samplings: Sequence[Sampling], cells: int
) -> list[Completion | None]:
    """``decode_prompts`` for prompts that fit streams of ``cells``; None for one whose array pass does not fit
    after its trace."""
    import time

    from lazymem.llm.base import bias_token_ids
    from lazymem.llm.trace import set_ops, trace_ops
    from lazymem.llm.usage import engine_pass

    _, tok = backend.load()
    main = backend.batch_context(False, cells)
    writer = backend.batch_context(True, cells) if backend.content_adapter is not None else main
    firsts, keepers = [], []
    for text, s in zip(texts, samplings):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        bias = bias_token_ids(tok, s.logit_bias) if s.logit_bias else None
        keeper = backend.trace_processor(tok, s)
        procs = [keeper] if keeper is not None else [bias_processor(bias)] if bias else []
        keepers.append(keeper)
        firsts.append(Job(ids, _cap(backend, ids, s.max_tokens), backend.first_grammar(s), procs))
    main.run(firsts, time.perf_counter)
    outs = [_text(main.llm, j) for j in firsts]
    arrays: dict[int, tuple[Job, str]] = {}  # prompt -> its array pass and the trace it follows
    redo: set[int] = set()  # prompts whose array pass does not fit a stream after the trace
    for i, (job, s) in enumerate(zip(firsts, samplings)):
        if backend._follows(s) is None:
            continue
        if job.finish == "stop" and len(job.out) < s.max_tokens:
            trace = outs[i]
            if keepers[i] is not None and keepers[i].independent is not None:
                trace = set_ops(trace, keepers[i].independent.ops)  # the decisions, not the DROPs written
            ops = trace_ops(trace)
            if (forced := forced_array(s, ops)) is not None:  # nothing for the writer to write
                outs[i] = trace + forced
                continue
            ids = job.ids + tok(trace, add_special_tokens=False)["input_ids"]
            if len(ids) >= backend.n_ctx:  # the instance's context is full: one at a time, which reports it
                redo.add(i)
                continue
            bias = bias_token_ids(tok, s.logit_bias) if s.logit_bias else None
            procs = [bias_processor(bias)] if bias else []
            grammar = backend._grammar(s, ops)
            array = Job(ids, _cap(backend, ids, s.max_tokens - len(job.out)), grammar, procs)
            if not writer.fits(len(array.ids), array.max_tokens):
                redo.add(i)
                continue
            arrays[i] = (array, trace)
        elif job.finish == "stop":
            job.finish = "length"  # the trace took every token: the array was never written
    writer.run([a for a, _ in arrays.values()], time.perf_counter)
    result: list[Completion | None] = []
    for i, job in enumerate(firsts):
        if i in redo:
            result.append(None)
            continue
        text, done, finish, passes, seconds = outs[i], len(job.out), job.finish, None, job.seconds
        if i in arrays:
            array, trace = arrays[i]
            text = trace + _text(writer.llm, array)
            done, finish, seconds = done + len(array.out), array.finish, seconds + array.seconds
            passes = (
                engine_pass("trace", len(job.ids), job.cached, len(job.out), job.seconds),
                engine_pass(
                    "content" if writer is not main else "array",
                    len(array.ids),
                    array.cached,
                    len(array.out),
                    array.seconds,
                    reread=trace,
                ),
            )
        result.append(
            Completion(
                text=text,
                prompt_tokens=len(job.ids),
                completion_tokens=done,
                latency_s=seconds,
                model=backend.model_id,
                finish_reason=finish,
                cached_prompt_tokens=job.cached,
                passes=passes,
            )
        )
    return result
