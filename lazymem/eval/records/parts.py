"""The typed parts of a run record: question, pool, windows, decisions, construction, calls, judge, measures.

Each is a frozen ``JsonPart`` (lazymem.eval.records.part): its fields are the JSON keys that
``lazymem.pipeline.results``, ``lazymem.eval.judge`` and ``lazymem.eval.memory_measures`` write;
fields that older records lack admit None (and stay absent when written back).

>>> h = PoolHit.from_json({"pos": 4, "rank": 1, "score": 0.03, "dense_rank": 2})
>>> h.pos, h.dense_rank, h.bm25_rank, h.to_json()
(4, 2, None, {'pos': 4, 'rank': 1, 'score': 0.03, 'dense_rank': 2})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lazymem.eval.records.part import JsonPart


@dataclass(frozen=True)
class CallMeta(JsonPart):
    """A model call's bookkeeping without its text (``pipeline.results._completion_meta``; the judge's lacks error)."""

    OMIT_IF_NONE = frozenset({"cached_prompt_tokens", "passes", "qwen3_prompt_tokens", "qwen3_completion_tokens"})

    model: str | None  # the model id
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None  # wall seconds (a cache read when cached)
    cached: bool | None  # served from the LLM disk cache
    finish_reason: str | None
    error: str | None = None  # why the call failed (absent in judge calls)
    # lazymem.llm.usage.call_usage: absent in records made before them, or where the engine does not say
    cached_prompt_tokens: int | None = None  # of the prompt tokens read, those served from a prefix cache
    passes: tuple[Mapping[str, Any], ...] | None = None  # one object per request of a call that ran several
    qwen3_prompt_tokens: int | None = None  # the prompt(s) read, in Qwen3 tokens
    qwen3_completion_tokens: int | None = None  # the output, in Qwen3 tokens


@dataclass(frozen=True)
class QuestionMeta(JsonPart):
    """The question fields copied into its record (``lazymem.eval.runner.question_meta``)."""

    type: str  # question type (LongMemEval type, LoCoMo category name)
    abbrev: str | None  # its short form (KU, MS, ...)
    category: int | None  # LoCoMo category (1-5), None for LongMemEval
    text: str | None  # the question
    answer: Any  # the gold answer (a string, a number or a list)
    query_time: str | None
    history_id: str | None
    evidence: tuple[int, ...] | None  # gold positions
    abstention: bool | None  # the gold is an abstention


@dataclass(frozen=True)
class PoolHit(JsonPart):
    """One pooled message with its rank and score at every stage (``lazymem.retrieve.Hit``)."""

    pos: int  # position in the history
    rank: int  # final rank, 1-based
    score: float  # final score
    bm25_rank: int | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    rrf_rank: int | None = None
    rrf_score: float | None = None
    rerank_rank: int | None = None
    rerank_score: float | None = None


@dataclass(frozen=True)
class PoolRecord(JsonPart):
    """The retrieval pool R_q (``lazymem.retrieve.Pool.to_dict``)."""

    query: str | None
    history_id: str | None
    reranker: str | None  # the reranker that ran, or why none did
    stages: tuple[str, ...] | None
    positions: tuple[int, ...]  # pooled positions, best first
    hits: tuple[PoolHit, ...] | None
    timings: Mapping[str, float] | None  # seconds per retrieval stage


@dataclass(frozen=True)
class DecisionRecord(JsonPart):
    """One KEEP/DROP decision (``lazymem.construct.Decision``; ``reason`` is its rationale)."""

    pos: int
    op: str  # "KEEP" or "DROP"
    content: str | None  # the kept content (rewritten or verbatim)
    reason: str | None


@dataclass(frozen=True)
class VerdictRecord(JsonPart):
    """The format gate's verdict on one window output."""

    ok: bool  # passed the full gate
    reason: str | None  # failure kind ("" when ok)
    detail: str | None


@dataclass(frozen=True)
class WindowRecord(JsonPart):
    """One window's processing (``lazymem.pipeline.results.WindowResult.to_dict``)."""

    positions: tuple[int, ...]  # the window's positions
    hits: tuple[int, ...] | None  # pooled positions it was built around
    gold: tuple[int, ...] | None  # gold positions inside it
    merged_id: int | None
    sub_id: int | None
    n_prev_bridge: int | None
    n_next_bridge: int | None
    decision_positions: tuple[int, ...] | None  # positions of its non-empty messages
    raw: str | None  # the output the gate judged (think trace stripped)
    think: str | None
    output: CallMeta | None  # the model call (None for the extractive processor)
    verdict: VerdictRecord | None  # None when the call failed
    decisions: tuple[DecisionRecord, ...] | None


@dataclass(frozen=True)
class ConstructionRecord(JsonPart):
    """Gate and keep statistics of one question (``lazymem.construct.ConstructionStats`` and its rates)."""

    n_windows: int
    n_valid: int
    n_fmt: int
    n_messages: int
    n_decided: int | None
    n_kept: int
    n_gold: int
    n_gold_kept: int
    failures: Mapping[str, int] | None  # failure kind -> count
    n_keep_decisions: int | None = None  # absent in records made before it existed
    n_rewritten: int | None = None
    gate_fmt: float | None = None
    gate_pass_rate: float | None = None
    gold_keep_recall: float | None = None
    rewritten_rate: float | None = None


@dataclass(frozen=True)
class JudgeRecord(JsonPart):
    """The judge's call and label (``lazymem.eval.judge.judge_answer``)."""

    kind: str | None  # "longmemeval" or "locomo"
    prompt_name: str | None
    prompt: str | None
    response: str | None
    label: bool | float | None  # True = correct; None: unjudged
    skipped: str | None  # why the judge skipped the question
    error: str | None
    output: CallMeta | None
    unparseable: bool | None  # the reply could not be read (counted wrong)
    attempts: int | None
    retry_of: Mapping[str, Any] | None  # the first attempt, when retried


@dataclass(frozen=True)
class MeasuresRecord(JsonPart):
    """The memory's own measures (``lazymem.eval.memory_measures.MemoryMeasures``)."""

    evidence_recall: float | None
    n_gold: int | None
    n_gold_in_memory: int | None
    answer_recall_in_memory: float | None
    evidence_match: str | None  # "identity" or "text"


@dataclass(frozen=True)
class Timings(JsonPart):
    """Wall seconds per stage of one question (a stage that did not run is absent)."""

    OMIT_IF_NONE = frozenset({"retrieval", "processing", "answer", "total", "judge", "index", "load"})

    retrieval: float | None = None
    processing: float | None = None
    answer: float | None = None
    total: float | None = None
    judge: float | None = None
    index: float | None = None  # building a history's index (store time)
    load: float | None = None
