"""The query path (paper Section 3): retrieve broadly, window, construct selectively, answer.

``LazyMemPipeline(config).answer(history, question) -> QueryResult`` runs one question:

1. hybrid retrieval of the pool R_q (lazymem.retrieve);
2. history windowing W_1..W_P (lazymem.retrieve.window; ``question_windows`` does 1-2
   without a pipeline object);
3. the memory-processing model (MPM) on every window, its prompts built by
   ``lazymem.construct.window_prompts`` and all sent in one ``generate`` call so the backend
   parallelises them (concurrent requests for an OpenAI-compatible server, batches in
   process); each output goes through the format gate, decisions are merged over
   overlapping sub-windows and the kept messages assembled as ``[timestamp] role: content``
   lines (lazymem.construct);
4. the answer model reads the memory with the paper's answer prompt.

``LazyMemPipeline.process`` stops after step 3 (the memory without an answer: the demo and
the window explorer use it). This is the only code that runs these stages in sequence: the
demo, the notebooks, the evaluation runner and training data go through it. Nothing is
created at import time; models and the retriever are created on first use, once per pipeline.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lazymem.construct import (
    WindowPrompt,
    assemble_memory,
    construction_stats,
    decision_schema,
    merge_decisions,
    strip_think,
    window_prompts,
)
from lazymem.errors import ConfigError
from lazymem.llm import Completion, Sampling
from lazymem.llm.base import generate_each
from lazymem.llm.usage import qwen3_ready, with_qwen3
from lazymem.pipeline.config import ROLES, PipelineConfig
from lazymem.pipeline.methods import Method, method_class
from lazymem.pipeline.results import QueryResult, WindowResult
from lazymem.prompts import PROMPTS
from lazymem.records import History, Question
from lazymem.retrieve import RetrievalConfig, Window, WindowConfig, build_windows

if TYPE_CHECKING:
    from lazymem.llm import LLMClient
    from lazymem.pipeline.mem0 import Mem0Store
    from lazymem.retrieve import Pool, Retriever


def question_windows(
    history: History,
    question: Question,
    retriever: Retriever | None = None,
    window: WindowConfig | None = None,
    retrieval: RetrievalConfig | None = None,
) -> tuple[Pool, list[Window]]:
    """Steps 1-2 for one question: (the pool R_q, its windows with the gold positions marked).

    Args:
        retriever: a ready Retriever (shared, so its indexes are reused); None builds one from
            ``retrieval`` (or the defaults).
        window: windowing settings (default: the paper's w=2, L=8, s=7).
    """
    if retriever is None:
        from lazymem.retrieve import Retriever

        retriever = Retriever(retrieval or RetrievalConfig())
    pool = retriever.retrieve(history, question.text)
    return pool, build_windows(history, pool.positions, window or WindowConfig(), gold=question.evidence)


def window_sampling(
    base: Sampling,
    n: int,
    *,
    structured: bool,
    structured_trace: bool,
    texts: tuple[str, ...] | None,
    prior: tuple[float, ...] | None,
    schema_max_content: int,
    schema_max_reason: int,
    independent: bool = False,
) -> Sampling:
    """One window's MPM decoding (the pipeline's and the window evaluation's): ``base`` with the window's
    decision schema when structured (n items, after an n-line trace with ``structured_trace``), its message
    texts when grounded (``texts``; the span then bounds a KEEP's content, so the schema leaves it unbounded:
    a far smaller grammar), its per-message KEEP priors (``prior``, ``Sampling.trace_keep_bias``) and, with
    ``independent``, each trace line decided without the ops before it (``Sampling.trace_independent``; both
    callers refuse a ``base`` that sets it, so their own flag is the one way to ask)."""
    schema = (
        decision_schema(n, None if texts is not None else schema_max_content, schema_max_reason, think=structured_trace)
        if structured
        else base.json_schema
    )
    return dataclasses.replace(
        base, json_schema=schema, grounded=texts, trace_keep_bias=prior, trace_independent=independent
    )


class LazyMemPipeline:
    """Front door of the query path: ``LazyMemPipeline(config).answer(history, question)``.

    Args:
        config: the pipeline settings.
        clients: ready clients by role ("mpm", "answer", "judge"), e.g. scripted fakes in
            tests; missing roles are created from the config on first use.
        retriever: a ready Retriever (e.g. shared between pipelines); created on first use.

    Thread-safe: concurrent ``answer`` calls share the retriever (serialised) and the clients
    (which batch or parallelise internally).
    """

    def __init__(
        self, config: PipelineConfig, clients: Mapping[str, LLMClient] | None = None, retriever: Retriever | None = None
    ):
        unknown = sorted(set(clients or {}) - set(ROLES))
        if unknown:
            raise ConfigError(f"LazyMemPipeline clients: unknown role(s) {unknown}; roles are {ROLES}")
        self.config = config
        self._clients: dict[str, LLMClient] = dict(clients or {})
        self._injected = frozenset(self._clients)
        self._retriever = retriever
        self.lock = threading.RLock()  # guards lazy creation
        self.retrieve_lock = threading.Lock()  # the retriever's index cache is not thread-safe
        self.method: Method = method_class(config.method)(self)  # builds the memory (lazymem.pipeline.methods)

    # lazily created parts

    def client(self, role: str) -> LLMClient:
        """The client of a role, created from the config on first use."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}; roles are {ROLES}")
        with self.lock:
            if role not in self._clients:
                llm_config = getattr(self.config, role)
                if llm_config is None:
                    raise ConfigError(f"PipelineConfig.{role} is None: no {role} model is configured")
                # Roles with the same settings share one client: one model in memory, one cache.
                same = [
                    r
                    for r in ROLES
                    if r != role
                    and r in self._clients
                    and getattr(self.config, r) == llm_config
                    and r not in self._injected
                ]
                if same:
                    self._clients[role] = self._clients[same[0]]
                else:
                    from lazymem.llm import make_client

                    self._clients[role] = make_client(llm_config)
            return self._clients[role]

    @property
    def retriever(self) -> Retriever:
        with self.lock:
            if self._retriever is None:
                from lazymem.retrieve import Retriever

                self._retriever = Retriever(self.config.retrieval)
            return self._retriever

    @property
    def mem0(self) -> Mem0Store:
        """Method mem0's stores (lazymem.pipeline.mem0); the first use imports mem0ai and loads its embedder."""
        store = getattr(self.method, "store", None)
        if store is None:
            raise ConfigError(f"pipeline.mem0: method {self.config.method!r} has no Mem0 store")
        return store

    def close(self) -> None:
        """Release what stays open between questions (method mem0: its store folder's lock)."""
        self.method.close()

    def warm_up(self) -> LazyMemPipeline:
        """Load the encoder, reranker and in-process models now, so no question's latency
        includes loading them (grammar compilation for structured decoding still happens on
        the first window of each size)."""
        m = self.method
        roles = ["answer"] + (["mpm"] if m.uses_mpm and m.mpm_client else [])
        if m.retrieves and hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()
        m.warm_up()
        qwen3_ready()  # the Qwen3 tokenizer that counts every call (lazymem.llm.usage), loaded outside any stage
        for role in roles:
            client = self.client(role)
            if callable(getattr(client, "load_inner", None)):
                continue  # a CachedClient loads its model on its first miss (a fully cached rerun loads none)
            if callable(getattr(client, "load", None)):
                client.load()
        return self

    def _load_s(self) -> float:
        """Seconds the cached clients have spent loading models so far (kept out of stage latencies)."""
        with self.lock:
            clients = list(self._clients.values())
        return sum(getattr(c, "load_s", 0.0) for c in clients)

    # stages

    def retrieve(self, history: History, question: Question) -> Pool | None:
        """The pool R_q (None for methods that do not retrieve)."""
        if not self.method.retrieves:
            return None
        retriever = self.retriever
        with self.retrieve_lock:
            return retriever.retrieve(history, question.text)

    def windows(self, history: History, question: Question, pool: Pool) -> list[Window]:
        """W_1..W_P around the pool, with the question's gold positions marked."""
        return build_windows(history, pool.positions, self.config.window, gold=question.evidence)

    def prompts(self, history: History, question: Question, windows: Sequence[Window]) -> list[WindowPrompt]:
        """The MPM prompt of every window (``lazymem.construct.window_prompts`` with this config)."""
        return window_prompts(history, question, windows, self.config.window, self.config.bridges)

    def generate_mpm(
        self,
        prompts: Sequence[Any],
        n_decisions: Sequence[int],
        texts: Sequence[tuple[str, ...]] = (),
        query: str | None = None,
    ) -> list[Completion]:
        """All windows' MPM outputs: one generate call, or one per decision count when structured,
        or one per window when grounded (each window's message texts constrain its own output) or
        with a keep prior (each window's messages get their own; ``keep_priors``); as ``pipeline.lazymem`` says."""
        c, s = self.config, self.config.lazymem
        client = self.client("mpm")
        priors = self.keep_priors(query, texts) if s.keep_prior_weights else None
        if not s.structured and not s.grounded and priors is None:
            return client.generate(list(prompts), c.mpm_sampling)
        groups: dict[Any, list[int]] = {}
        for i, n in enumerate(n_decisions):
            groups.setdefault((n, texts[i] if s.grounded else None, priors[i] if priors else None), []).append(i)

        def sampling_of(key: Any) -> Sampling:
            n, grounded, prior = key
            return window_sampling(
                c.mpm_sampling,
                n,
                structured=s.structured,
                structured_trace=s.structured_trace,
                texts=grounded,
                prior=prior,
                schema_max_content=s.schema_max_content,
                schema_max_reason=s.schema_max_reason,
                independent=s.trace_independent,
            )

        if c.mpm.backend == "llamacpp" and (c.mpm.extra_body or {}).get("decode") == "batched":
            # every window in one multi-sequence batch, each under its own grammar and prior
            keys = {i: key for key, idx in groups.items() for i in idx}
            samplings = {key: sampling_of(key) for key in groups}
            return generate_each(client, list(prompts), [samplings[keys[i]] for i in range(len(prompts))])

        def run(key: Any) -> list[Completion]:
            return client.generate([prompts[i] for i in groups[key]], sampling_of(key))

        out: list[Completion | None] = [None] * len(prompts)
        # A schema fixes the item count and grounding the texts, so such windows need separate calls; a
        # server or llama.cpp (several model instances) gets them concurrently (transformers would only
        # queue them on its model lock).
        if c.mpm.backend in ("openai", "llamacpp") and len(groups) > 1:
            workers = len(groups) if c.mpm.backend == "openai" else min(len(groups), c.mpm.batch_size)
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                done = dict(zip(groups, pool.map(run, list(groups))))
        else:
            done = {key: run(key) for key in groups}
        for key, idx in groups.items():
            for i, comp in zip(idx, done[key]):
                out[i] = comp
        return out  # type: ignore[return-value]

    def keep_priors(self, query: str | None, texts: Sequence[tuple[str, ...]]) -> list[tuple[float, ...]]:
        """Each window's per-message KEEP prior (``pipeline.lazymem.keep_prior`` x the share of the question's
        content words, plus ``pipeline.lazymem.keep_prior_dense`` x the question-message cosine similarity;
        ``lazymem.construct.prior.KeepPrior``): one tuple per window, the ``Sampling.trace_keep_bias`` of
        its trace lines."""
        if query is None:
            raise ConfigError(
                "pipeline.lazymem.keep_prior needs the question's text beside the window texts "
                "(generate_mpm(..., query=...))"
            )
        prior = self.config.lazymem.keep_prior_weights
        return [prior(query, t) for t in texts]

    def construct(self, history: History, question: Question, windows: Sequence[Window]):
        """Process every window, gate, merge and assemble.

        Returns (window results, merged decisions, memory, stats, error or None). A failed
        model call is an error, not a gate failure: the gate statistics would otherwise count
        an unreachable server as a malformed output.
        """
        items = self.prompts(history, question, windows)
        window_outputs = getattr(self.method, "window_outputs", None)
        if window_outputs is None:
            raise ConfigError(f"method {self.config.method!r} does not construct windows")
        raws, outputs = window_outputs(history, question, items)
        results, error = [], None
        for it, raw, out in zip(items, raws, outputs):
            out = with_qwen3(list(it.messages), out)  # the call in Qwen3 tokens too (lazymem.llm.usage)
            think = None
            if raw is not None and out is not None:
                raw, think = self.split_think(raw, getattr(out, "reasoning", None))
            verdict = it.gate(raw) if raw is not None else None
            if verdict is None and error is None:
                error = f"mpm: {out.error}"
            results.append(
                WindowResult(
                    it.window, it.decision_positions, it.n_prev_bridge, it.n_next_bridge, raw, verdict, out, think
                )
            )
        gated = [(r.window, r.verdict) for r in results if r.verdict is not None]
        merged = merge_decisions(gated)
        memory = assemble_memory(merged, history)
        texts = {p: history[p].text for r in results for p in r.decision_positions}
        stats = construction_stats(gated, question.evidence, texts) if error is None else None
        return tuple(results), tuple(merged.values()), memory, stats, error

    def split_think(self, text: str, reasoning: str | None = None) -> tuple[str, str | None]:
        """(text without a leading think trace, the trace or None); unchanged when strip_think is off.

        ``reasoning``: the trace a server returned beside the text (vLLM with ``--reasoning-parser``,
        DeepSeek: ``Completion.reasoning``), kept as the trace when the text has none inline.
        """
        if not self.config.strip_think:
            return text, None
        rest = strip_think(text)
        return (rest, text[: len(text) - len(rest)]) if rest != text else (text, reasoning or None)

    def answer_prompt(self, question: Question, memory: str) -> tuple[str, list[dict]]:
        """(prompt name, chat messages) of the answer call for this memory."""
        name = self.method.answer_prompt
        if name == "answer_compressed":
            msgs = PROMPTS[name].messages(query_time=question.query_time, query=question.text, memory=memory)
        else:
            msgs = PROMPTS[name].messages(query_time=question.query_time, query=question.text, memory_text=memory)
        return name, msgs

    def process(self, history: History, question: Question) -> QueryResult:
        """Steps 1-3: retrieve, window and construct the memory, without answering.

        The result's ``answer`` is "" and ``answer_output`` None; ``answer_prompt`` names the
        prompt the answer step would use.
        """
        c = self.config
        if history.id != question.history_id:
            raise ValueError(
                f"question {question.id!r} is asked over history {question.history_id!r}, not {history.id!r}"
            )
        timings: dict[str, float] = {}
        loaded = self._load_s()
        t0 = time.perf_counter()
        pool = self.retrieve(history, question)
        timings["retrieval"] = time.perf_counter() - t0
        index = pool.timings.get("index") if pool is not None else None
        if index is not None:  # indexing the history is store-time work, not part of answering
            timings["retrieval"] -= index
        t1 = time.perf_counter()
        out = self.method.memory(history, question, pool, timings)  # nanomemory and mem0 time themselves
        if not out.timed:
            timings["processing"] = time.perf_counter() - t1
        load = self._load_s() - loaded
        if load > 0:  # a model loaded lazily on this question's first uncached call: not query latency
            timings["processing"] = max(0.0, timings["processing"] - load)
            timings["load"] = load
        if index is not None:
            timings["index"] = index
        return QueryResult(
            question_id=question.id,
            method=c.method,
            status="ok" if out.error is None else "error",
            error=out.error,
            pool=pool,
            windows=out.windows,
            decisions=out.decisions,
            memory=out.memory,
            answer_prompt=self.method.answer_prompt,
            answer="",
            answer_output=None,
            stats=out.stats,
            timings=timings,
            baseline=out.baseline,
        )

    def answer(self, history: History, question: Question) -> QueryResult:
        """Run the whole query path for one question (see the module docstring)."""
        r = self.process(history, question)
        timings = {k: v for k, v in r.timings.items() if k not in ("index", "load")}
        index, load = r.timings.get("index"), r.timings.get("load", 0.0)
        name, prompt = self.answer_prompt(question, r.memory)
        answer, think, out, error = "", None, None, r.error
        if error is None:
            before = self._load_s()
            t2 = time.perf_counter()
            out = self.client("answer").generate([prompt], self.config.answer_sampling)[0]
            timings["answer"] = time.perf_counter() - t2
            out = with_qwen3(prompt, out)
            answer_load = self._load_s() - before
            if answer_load > 0:
                timings["answer"] = max(0.0, timings["answer"] - answer_load)
                load += answer_load
            if out.error is not None:
                error = f"answer: {out.error}"
            else:
                answer, think = self.split_think(out.text, out.reasoning)
                answer = answer.strip()
        timings["total"] = sum(timings.values())
        if index is not None:
            timings["index"] = index
        if load:
            timings["load"] = load
        return dataclasses.replace(
            r,
            status="ok" if error is None else "error",
            error=error,
            answer=answer,
            answer_output=out,
            timings=timings,
            answer_think=think,
        )
