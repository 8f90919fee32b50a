"""What the query path returns: one ``QueryResult`` per question, one ``WindowResult`` per window."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lazymem.construct import ConstructionStats, Decision, GateVerdict
from lazymem.llm import Completion
from lazymem.llm.usage import call_usage
from lazymem.retrieve import Window

if TYPE_CHECKING:
    from lazymem.retrieve import Pool


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
            "positions": list(w.positions),
            "hits": list(w.hits),
            "gold": list(w.gold),
            "merged_id": w.merged_id,
            "sub_id": w.sub_id,
            "n_prev_bridge": self.n_prev_bridge,
            "n_next_bridge": self.n_next_bridge,
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
    pool: Pool | None  # the retrieval pool (None for oracle_turn / full)
    windows: tuple[WindowResult, ...]  # () for rag / oracle_turn / full
    decisions: tuple[Decision, ...]  # merged over windows, by position (lazymem / extractive)
    memory: str  # the memory block handed to the answer model
    answer_prompt: str  # name of the answer prompt in PROMPTS
    answer: str  # the answer (think trace stripped), "" when not reached
    answer_output: Completion | None  # the answer call (None when not reached)
    stats: ConstructionStats | None  # gate and keep statistics (lazymem / extractive)
    timings: Mapping[str, float]  # wall seconds: retrieval, processing, answer, total (+ index when built)
    answer_think: str | None = None  # the answer's stripped <think> trace, when there was one
    # method-specific record (nanomemory: sessions, pruning call; mem0: search, ingestion)
    baseline: Mapping | None = None

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
            stats.update(
                gate_fmt=s.gate_fmt,
                gate_pass_rate=s.gate_pass_rate,
                gold_keep_recall=s.gold_keep_recall,
                rewritten_rate=s.rewritten_rate,
            )
        return {
            "question_id": self.question_id,
            "method": self.method,
            "status": self.status,
            "error": self.error,
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
            "baseline": None if self.baseline is None else dict(self.baseline),
        }


def _decision_dict(d: Decision) -> dict:
    return {"pos": d.pos, "op": d.op, "content": d.content, "reason": d.rationale}


def _completion_meta(c: Completion | None) -> dict | None:
    """A call's bookkeeping without its text (the text is recorded once, elsewhere)."""
    if c is None:
        return None
    return {
        "model": c.model,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "latency_s": c.latency_s,
        "cached": c.cached,
        "finish_reason": c.finish_reason,
        "error": c.error,
        **call_usage(c),  # cached prompt tokens, passes, Qwen3 counts: only those known
    }
