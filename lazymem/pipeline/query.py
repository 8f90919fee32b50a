"""The query path (paper Section 3): retrieve broadly, window, construct selectively, answer.

``LazyMemPipeline(config).answer(history, question) -> QueryResult`` runs one question:

1. hybrid retrieval of the pool R_q (lazymem.retrieve.retriever);
2. history windowing W_1..W_P (lazymem.retrieve.window);
3. the memory-processing model (MPM) on every window, all prompts in one ``generate`` call
   so the backend parallelises them (concurrent requests for an OpenAI-compatible server,
   batches in process); each output goes through the format gate, decisions are merged
   over overlapping sub-windows and the kept messages assembled as ``[timestamp] role:
   content`` lines (lazymem.construct.gate);
4. the answer model reads the memory with the paper's answer prompt.

Methods (``PipelineConfig.method``) share steps 1 and 4: ``lazymem`` (MPM construction),
``extractive`` (the training-free ExtractiveProcessor instead of a model), ``rag`` (the
paper's RAG TopN baseline: the pool's messages verbatim, chronologically), ``oracle_turn``
(the gold evidence messages) and ``full`` (the whole history). Nothing is created at import
time; models and the retriever are created on first use, once per pipeline.

>>> PipelineConfig.from_dict({"method": "rag", "retrieval": {"n": 20}}).retrieval.n
20
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from lazymem.construct import (
    ConstructionStats,
    Decision,
    ExtractiveConfig,
    ExtractiveProcessor,
    GateVerdict,
    assemble_memory,
    construction_stats,
    decision_schema,
    merge_decisions,
    parse_decisions,
    strip_think,
)
from lazymem.errors import ConfigError, check_fields
from lazymem.llm import Completion, LLMConfig, Sampling
from lazymem.prompts import PROMPTS, annotation_messages, decision_positions, text_memory
from lazymem.records import History, Question
from lazymem.retrieve import RetrievalConfig
from lazymem.retrieve import Window, WindowConfig, build_windows

if TYPE_CHECKING:
    from lazymem.llm import LLMClient
    from lazymem.retrieve import Pool, Retriever

METHODS = ("lazymem", "extractive", "rag", "oracle_turn", "full")
COMPRESSED_METHODS = ("lazymem", "extractive")  # answered with the compressed-memory prompt
RETRIEVING_METHODS = ("lazymem", "extractive", "rag")
BRIDGES = ("none", "overlap")
ROLES = ("mpm", "answer", "judge")

# The paper prints no decoding settings for inference. Its MPM was trained to generate at
# most 3,072 tokens (Table "Explicit training hyperparameters", RL max generation length),
# and its judges run at temperature 0; we decode the MPM greedily under that cap. The answer
# cap is ours (the paper's answerer is Qwen3-32B in thinking mode: leave room for the trace).
DEFAULT_MPM_SAMPLING = Sampling(temperature=0.0, max_tokens=3072)
DEFAULT_ANSWER_SAMPLING = Sampling(temperature=0.0, max_tokens=1024)


def _h(text: str) -> dict:
    return {"help": text}


def _section(cls, values: Any, where: str):
    """Build a nested config dataclass from a YAML mapping, naming the section on errors."""
    if isinstance(values, cls):
        return values
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping of {cls.__name__} fields, got {type(values).__name__}")
    check_fields(cls, values, where)
    try:
        return cls(**values)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that decides one question's answer; the same keys as a recipe's ``pipeline:``."""

    method: str = field(default="lazymem", metadata=_h(f"one of {METHODS}"))
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig, metadata=_h("hybrid retrieval (Sec. 3.1)"))
    window: WindowConfig = field(default_factory=WindowConfig, metadata=_h("history windowing w, L, s (Sec. 3.2)"))
    mpm: LLMConfig = field(default_factory=LLMConfig, metadata=_h("the memory-processing model (method lazymem)"))
    answer: LLMConfig = field(default_factory=LLMConfig, metadata=_h("the frozen answer model"))
    judge: LLMConfig | None = field(default=None, metadata=_h("the LLM judge (None = no judge model)"))
    structured: bool = field(
        default=False,
        metadata=_h("constrain MPM decoding to decision_schema(n) of each window (untrained small models need it)"))
    mpm_sampling: Sampling = field(default=DEFAULT_MPM_SAMPLING, metadata=_h("MPM decoding (json_schema is set per window)"))
    answer_sampling: Sampling = field(default=DEFAULT_ANSWER_SAMPLING, metadata=_h("answer decoding"))
    schema_max_content: int = field(default=512, metadata=_h("structured: max characters of a KEEP's compressed_content"))
    schema_max_reason: int = field(default=128, metadata=_h("structured: max characters of a decision's reason"))
    strip_think: bool = field(default=True, metadata=_h("drop a leading <think>...</think> from MPM and answer outputs"))
    bridges: str = field(
        default="none",
        metadata=_h("'none': every window message is a core message; 'overlap': messages a sub-window shares with "
                    "its neighbour sub-window are shown as previous_bridge / next_bridge"))
    extractive: ExtractiveConfig = field(default_factory=ExtractiveConfig, metadata=_h("method extractive: threshold, mode"))

    def __post_init__(self):
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ConfigError(f"PipelineConfig.{name}={getattr(self, name)!r}: {allowed}")

        need(self.method in METHODS, "method", f"must be one of {METHODS}")
        for name, cls in (("retrieval", RetrievalConfig), ("window", WindowConfig), ("mpm", LLMConfig),
                          ("answer", LLMConfig), ("mpm_sampling", Sampling), ("answer_sampling", Sampling),
                          ("extractive", ExtractiveConfig)):
            need(isinstance(getattr(self, name), cls), name, f"must be a {cls.__name__}")
        need(self.judge is None or isinstance(self.judge, LLMConfig), "judge", "must be an LLMConfig or None")
        need(isinstance(self.structured, bool), "structured", "must be true or false")
        need(isinstance(self.strip_think, bool), "strip_think", "must be true or false")
        need(self.mpm_sampling.json_schema is None, "mpm_sampling",
             "json_schema must be unset: set structured: true and each window gets decision_schema(n)")
        for name in ("schema_max_content", "schema_max_reason"):
            v = getattr(self, name)
            need(isinstance(v, int) and not isinstance(v, bool) and v >= (1 if name == "schema_max_content" else 0),
                 name, "must be an integer >= 1" if name == "schema_max_content" else "must be an integer >= 0")
        need(self.bridges in BRIDGES, "bridges", f"must be one of {BRIDGES}")

    @classmethod
    def from_dict(cls, values: Mapping) -> "PipelineConfig":
        """Build from a mapping (a recipe's ``pipeline:`` section); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"pipeline: expected a mapping, got {type(values).__name__}")
        check_fields(cls, values, "pipeline")
        v = dict(values)
        for name, builder in (("retrieval", RetrievalConfig), ("window", WindowConfig), ("mpm", LLMConfig),
                              ("answer", LLMConfig), ("judge", LLMConfig), ("mpm_sampling", Sampling),
                              ("answer_sampling", Sampling), ("extractive", ExtractiveConfig)):
            if name in v and v[name] is not None:
                v[name] = _section(builder, v[name], f"pipeline.{name}")
        try:
            return cls(**v)
        except ConfigError as e:
            raise ConfigError(f"pipeline: {e}") from None

    @classmethod
    def from_yaml(cls, path: str) -> "PipelineConfig":
        """Load a YAML file: its ``pipeline:`` section, or the whole file when it has none."""
        import yaml

        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
        return cls.from_dict(data.get("pipeline", data) if isinstance(data, Mapping) else data)

    def to_dict(self) -> dict:
        """Plain JSON-ready values (API keys never appear: LLMConfig holds only the variable name)."""
        return dataclasses.asdict(self)


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowResult:
    """One window's processing: what the MPM saw, what it said, and the gate's verdict."""

    window: Window  # positions, hits, gold, merged_id, sub_id
    decision_positions: tuple[int, ...]  # positions of its non-empty messages (one decision each)
    n_prev_bridge: int = 0  # leading messages shown as previous_bridge
    n_next_bridge: int = 0  # trailing messages shown as next_bridge
    raw: str | None = None  # the output the gate judged (think trace stripped); None when the call failed
    verdict: GateVerdict | None = None  # None when the call failed
    output: Completion | None = None  # the model call (None for the extractive processor)
    think: str | None = None  # the leading <think>...</think> trace stripped off, when there was one

    def to_dict(self) -> dict:
        w, v = self.window, self.verdict
        return {
            "positions": list(w.positions), "hits": list(w.hits), "gold": list(w.gold),
            "merged_id": w.merged_id, "sub_id": w.sub_id,
            "n_prev_bridge": self.n_prev_bridge, "n_next_bridge": self.n_next_bridge,
            "decision_positions": list(self.decision_positions),
            "raw": self.raw,
            "think": self.think,
            "output": _completion_meta(self.output),
            "verdict": None if v is None else {"ok": v.ok, "reason": v.reason, "detail": v.detail},
            "decisions": [] if v is None else [_decision_dict(d) for d in v.decisions],
        }


@dataclass(frozen=True)
class QueryResult:
    """Everything the pipeline did for one question (a run record is built from it)."""

    question_id: str
    method: str
    status: str  # "ok", or "error" when a model call failed (the run records it and goes on)
    error: str | None  # "stage: ExceptionType: message" of the first failure
    pool: "Pool | None"  # the retrieval pool (None for oracle_turn / full)
    windows: tuple[WindowResult, ...]  # () for rag / oracle_turn / full
    decisions: tuple[Decision, ...]  # merged over windows, by position (lazymem / extractive)
    memory: str  # the memory block handed to the answer model
    answer_prompt: str  # name of the answer prompt in PROMPTS
    answer: str  # the answer (think trace stripped), "" when not reached
    answer_output: Completion | None  # the answer call (None when not reached)
    stats: ConstructionStats | None  # gate and keep statistics (lazymem / extractive)
    timings: Mapping[str, float]  # wall seconds: retrieval, processing, answer, total (+ index when built)
    answer_think: str | None = None  # the answer's stripped <think> trace, when there was one

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def memory_positions(self) -> tuple[int, ...]:
        """Positions whose content entered the memory (kept decisions, or the text messages)."""
        return tuple(d.pos for d in self.decisions if d.op == "KEEP")

    def to_dict(self) -> dict:
        s = self.stats
        stats = None
        if s is not None:
            stats = dataclasses.asdict(s)
            stats.update(gate_fmt=s.gate_fmt, gate_pass_rate=s.gate_pass_rate, gold_keep_recall=s.gold_keep_recall)
        return {
            "question_id": self.question_id, "method": self.method, "status": self.status, "error": self.error,
            "pool": None if self.pool is None else self.pool.to_dict(),
            "windows": [w.to_dict() for w in self.windows],
            "decisions": [_decision_dict(d) for d in self.decisions],
            "construction": stats,
            "memory": self.memory,
            "answer_prompt": self.answer_prompt,
            "answer": self.answer,
            "answer_think": self.answer_think,
            "answer_output": _completion_meta(self.answer_output),
            "timings": dict(self.timings),
        }


def _decision_dict(d: Decision) -> dict:
    return {"pos": d.pos, "op": d.op, "content": d.content, "reason": d.rationale}


def _completion_meta(c: Completion | None) -> dict | None:
    """A call's bookkeeping without its text (the text is recorded once, elsewhere)."""
    if c is None:
        return None
    return {"model": c.model, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
            "latency_s": c.latency_s, "cached": c.cached, "finish_reason": c.finish_reason, "error": c.error}


def bridge_sizes(windows: Sequence[Window], config: WindowConfig, mode: str) -> list[tuple[int, int]]:
    """(n_prev_bridge, n_next_bridge) per window: the overlap a sub-window shares with its
    neighbours when mode is "overlap", else (0, 0).

    >>> ws = build_windows(100, [10, 14, 18], WindowConfig())  # [8, 20] -> [8, 15], [15, 20]
    >>> bridge_sizes(ws, WindowConfig(), "overlap")
    [(0, 1), (1, 0)]
    """
    if mode == "none":
        return [(0, 0)] * len(windows)
    overlap = config.L - config.s
    out = []
    for i, w in enumerate(windows):
        prev = overlap if w.sub_id > 0 else 0
        nxt = overlap if i + 1 < len(windows) and windows[i + 1].merged_id == w.merged_id else 0
        if prev + nxt > len(w):  # a short last sub-window: its overlap is all of it
            nxt = max(0, len(w) - prev)
        out.append((min(prev, len(w)), nxt))
    return out


# --- the pipeline ------------------------------------------------------------------------------


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

    def __init__(self, config: PipelineConfig, clients: Mapping[str, "LLMClient"] | None = None,
                 retriever: "Retriever | None" = None):
        unknown = sorted(set(clients or {}) - set(ROLES))
        if unknown:
            raise ConfigError(f"LazyMemPipeline clients: unknown role(s) {unknown}; roles are {ROLES}")
        self.config = config
        self._clients: dict[str, LLMClient] = dict(clients or {})
        self._injected = frozenset(self._clients)
        self._retriever = retriever
        self._lock = threading.RLock()  # guards lazy creation
        self._retrieve_lock = threading.Lock()  # the retriever's index cache is not thread-safe
        self._processor = ExtractiveProcessor(config.extractive) if config.method == "extractive" else None

    # lazily created parts

    def client(self, role: str) -> "LLMClient":
        """The client of a role, created from the config on first use."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}; roles are {ROLES}")
        with self._lock:
            if role not in self._clients:
                llm_config = getattr(self.config, role)
                if llm_config is None:
                    raise ConfigError(f"PipelineConfig.{role} is None: no {role} model is configured")
                # Roles with the same settings share one client: one model in memory, one cache.
                same = [r for r in ROLES if r != role and r in self._clients and getattr(self.config, r) == llm_config
                        and r not in self._injected]
                if same:
                    self._clients[role] = self._clients[same[0]]
                else:
                    from lazymem.llm import make_client

                    self._clients[role] = make_client(llm_config)
            return self._clients[role]

    @property
    def retriever(self) -> "Retriever":
        with self._lock:
            if self._retriever is None:
                from lazymem.retrieve import Retriever

                self._retriever = Retriever(self.config.retrieval)
            return self._retriever

    def warm_up(self) -> "LazyMemPipeline":
        """Load the encoder, reranker and in-process models now, so no question's latency
        includes loading them (grammar compilation for structured decoding still happens on
        the first window of each size)."""
        roles = ["answer"] + (["mpm"] if self.config.method == "lazymem" else [])
        if self.config.method in RETRIEVING_METHODS and hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()
        for role in roles:
            client = self.client(role)
            inner = getattr(client, "inner", client)  # a CachedClient wraps the backend
            if callable(getattr(inner, "load", None)):
                inner.load()
        return self

    # stages

    def retrieve(self, history: History, question: Question) -> "Pool | None":
        """The pool R_q (None for methods that do not retrieve)."""
        if self.config.method not in RETRIEVING_METHODS:
            return None
        retriever = self.retriever
        with self._retrieve_lock:
            return retriever.retrieve(history, question.text)

    def windows(self, history: History, question: Question, pool: "Pool") -> list[Window]:
        """W_1..W_P around the pool, with the question's gold positions marked."""
        return build_windows(history, pool.positions, self.config.window, gold=question.evidence)

    def _prompts(self, history: History, question: Question, windows: Sequence[Window]):
        sizes = bridge_sizes(windows, self.config.window, self.config.bridges)
        out = []
        for w, (prev, nxt) in zip(windows, sizes):
            messages = [history[p] for p in w.positions]
            prompt = annotation_messages(messages, question.text, question.query_time,
                                         n_prev_bridge=prev, n_next_bridge=nxt)
            out.append((w, decision_positions(messages), prev, nxt, prompt))
        return out

    def _generate_mpm(self, prompts: Sequence[Any], n_decisions: Sequence[int]) -> list[Completion]:
        """All windows' MPM outputs; one generate call, or one per decision count when structured."""
        c = self.config
        client = self.client("mpm")
        if not c.structured:
            return client.generate(list(prompts), c.mpm_sampling)
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(n_decisions):
            groups.setdefault(n, []).append(i)

        def run(n: int) -> list[Completion]:
            schema = decision_schema(n, c.schema_max_content, c.schema_max_reason)
            sampling = dataclasses.replace(c.mpm_sampling, json_schema=schema)
            return client.generate([prompts[i] for i in groups[n]], sampling)

        out: list[Completion | None] = [None] * len(prompts)
        # A schema fixes the item count, so windows of different sizes need separate calls; a
        # server gets them concurrently (in process they would only queue on the model lock).
        if c.mpm.backend == "openai" and len(groups) > 1:
            with concurrent.futures.ThreadPoolExecutor(len(groups)) as pool:
                done = dict(zip(groups, pool.map(run, list(groups))))
        else:
            done = {n: run(n) for n in groups}
        for n, idx in groups.items():
            for i, comp in zip(idx, done[n]):
                out[i] = comp
        return out  # type: ignore[return-value]

    def construct(self, history: History, question: Question, windows: Sequence[Window]):
        """Process every window, gate, merge and assemble.

        Returns (window results, merged decisions, memory, stats, error or None). A failed
        model call is an error, not a gate failure: the gate statistics would otherwise count
        an unreachable server as a malformed output.
        """
        items = self._prompts(history, question, windows)
        if self.config.method == "extractive":
            raws: list[str | None] = [self._processor.process(question.text, question.query_time,
                                                              [history[p] for p in w.positions])
                                      for w, *_ in items]
            outputs: list[Completion | None] = [None] * len(items)
        else:
            outputs = self._generate_mpm([p for *_, p in items], [len(d) for _, d, *_ in items]) if items else []
            raws = [None if out.error is not None else out.text for out in outputs]
        results, error = [], None
        for (w, dpos, prev, nxt, _), raw, out in zip(items, raws, outputs):
            think = None
            if raw is not None and out is not None:
                raw, think = self._split_think(raw)
            verdict = parse_decisions(raw, dpos) if raw is not None else None
            if verdict is None and error is None:
                error = f"mpm: {out.error}"
            results.append(WindowResult(w, dpos, prev, nxt, raw, verdict, out, think))
        gated = [(r.window, r.verdict) for r in results if r.verdict is not None]
        merged = merge_decisions(gated)
        memory = assemble_memory(merged, history)
        stats = construction_stats(gated, question.evidence) if error is None else None
        return tuple(results), tuple(merged.values()), memory, stats, error

    def _split_think(self, text: str) -> tuple[str, str | None]:
        """(text without a leading think trace, the trace or None); unchanged when strip_think is off."""
        if not self.config.strip_think:
            return text, None
        rest = strip_think(text)
        return (rest, text[: len(text) - len(rest)]) if rest != text else (text, None)

    def answer_prompt(self, question: Question, memory: str) -> tuple[str, list[dict]]:
        """(prompt name, chat messages) of the answer call for this memory."""
        if self.config.method in COMPRESSED_METHODS:
            name = "answer_compressed"
            msgs = PROMPTS[name].messages(query_time=question.query_time, query=question.text, memory=memory)
        else:
            name = "answer_text"
            msgs = PROMPTS[name].messages(query_time=question.query_time, query=question.text, memory_text=memory)
        return name, msgs

    def answer(self, history: History, question: Question) -> QueryResult:
        """Run the whole query path for one question (see the module docstring)."""
        c = self.config
        if history.id != question.history_id:
            raise ValueError(f"question {question.id!r} is asked over history {question.history_id!r}, "
                             f"not {history.id!r}")
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        pool = self.retrieve(history, question)
        timings["retrieval"] = time.perf_counter() - t0
        index = pool.timings.get("index") if pool is not None else None
        if index is not None:  # indexing the history is store-time work, not part of answering
            timings["retrieval"] -= index
        t1 = time.perf_counter()
        windows: tuple[WindowResult, ...] = ()
        decisions: tuple[Decision, ...] = ()
        stats, error = None, None
        if c.method in COMPRESSED_METHODS:
            windows, decisions, memory, stats, error = self.construct(history, question,
                                                                      self.windows(history, question, pool))
        elif c.method == "rag":
            memory = text_memory([history[p] for p in pool.positions])
        elif c.method == "oracle_turn":
            memory = text_memory([history[p] for p in question.evidence])
        else:  # full
            memory = text_memory(history.messages)
        timings["processing"] = time.perf_counter() - t1
        name, prompt = self.answer_prompt(question, memory)
        answer, think, out = "", None, None
        if error is None:
            t2 = time.perf_counter()
            out = self.client("answer").generate([prompt], c.answer_sampling)[0]
            timings["answer"] = time.perf_counter() - t2
            if out.error is not None:
                error = f"answer: {out.error}"
            else:
                answer, think = self._split_think(out.text)
                answer = answer.strip()
        timings["total"] = sum(timings.values())
        if index is not None:
            timings["index"] = index
        return QueryResult(
            question_id=question.id, method=c.method, status="ok" if error is None else "error", error=error,
            pool=pool, windows=windows, decisions=decisions, memory=memory, answer_prompt=name, answer=answer,
            answer_output=out, stats=stats, timings=timings, answer_think=think)
