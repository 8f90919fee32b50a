"""Method ``nanomemory``: the retrieve-then-construct baseline of Wu et al. ("Back to Basics").

Sessions ranked by their best-matching turn (dense cosine), the top-k shown in one pruning call
whose reply is the memory (``lazymem.pipeline.baselines.NanoMemory`` has the algorithm and its
sources). Settings: ``pipeline.nanomemory`` (``NanoMemorySettings``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from lazymem.errors import ConfigError
from lazymem.fields import h, require
from lazymem.pipeline.methods.base import Method, MethodOutput


@dataclass(frozen=True)
class NanoMemorySettings:
    """``pipeline.nanomemory``: how many sessions its pruning call sees, in how large a window."""

    top_k: int = field(default=10, metadata=h("sessions shown to its pruning call (paper: 10)"))
    context: int | None = field(
        default=None,
        metadata=h(
            "the pruning call's context window in tokens; its prompt keeps the top sessions that fit in it less "
            "mpm_sampling.max_tokens (lazymem.pipeline.baselines.fit_sessions). None: the mpm model's own "
            "(llamacpp: extra_body.n_ctx, 8192 by default; transformers: max_position_embeddings; a server: not fitted)"
        ),
    )

    def __post_init__(self):
        require(
            isinstance(self.top_k, int) and not isinstance(self.top_k, bool) and self.top_k >= 1,
            "nanomemory",
            "top_k",
            self.top_k,
            "must be an integer >= 1",
        )
        require(
            self.context is None
            or (isinstance(self.context, int) and not isinstance(self.context, bool) and self.context >= 1),
            "nanomemory",
            "context",
            self.context,
            "must be None (the mpm model's window) or an integer >= 1 (tokens)",
        )


class NanoMemoryMethod(Method):
    name, label, in_paper = "nanomemory", "NanoMemory", True
    uses_dense = uses_mpm = writes_text = processing_stage = True
    settings_class = NanoMemorySettings

    def __init__(self, pipeline):
        super().__init__(pipeline)
        self._nano = None  # the session index, created on first use

    @classmethod
    def check(cls, config) -> None:
        if config.retrieval.dense_model is None:
            raise ConfigError(
                f"PipelineConfig.method={cls.name!r}: nanomemory ranks sessions by dense similarity: "
                "set retrieval.dense_model"
            )

    def warm_up(self) -> None:
        retriever = self.pipeline.retriever
        if hasattr(retriever, "warm_up"):
            retriever.warm_up()

    def memory(self, history, question, pool, timings) -> MethodOutput:
        """Rank sessions (timed as retrieval), one pruning call (processing)."""
        from lazymem.llm.usage import with_qwen3
        from lazymem.pipeline.baselines import NanoMemory
        from lazymem.pipeline.results import _completion_meta

        p = self.pipeline
        with p.retrieve_lock:
            if self._nano is None:
                self._nano = NanoMemory.from_config(p.retriever, self.config)  # fitted to the mpm's window
            t0 = time.perf_counter()
            if self._nano.index(history):  # embedding the turns is store-time work, like a history's index
                timings["index"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            sessions = self._nano.rank_sessions(history, question.text)
        timings["retrieval"] = timings.get("retrieval", 0.0) + time.perf_counter() - t0
        t1 = time.perf_counter()
        prompt, sessions, fit = self._nano.fitted_prompt(question, sessions)
        out = p.client("mpm").generate([prompt], self.config.mpm_sampling)[0]
        timings["processing"] = time.perf_counter() - t1
        out = with_qwen3(prompt, out)  # the call in Qwen3 tokens too (lazymem.llm.usage)
        gold = set(question.evidence)
        record = {
            "method": self.name,
            "top_k": self.config.nanomemory.top_k,
            "sessions": [
                {
                    "session_id": s["session_id"],
                    "score": s["score"],
                    "n_messages": len(s["positions"]),
                    "gold": sorted(gold & set(s["positions"])),
                }
                for s in sessions
            ],
            "gold_shown": len(gold & {p for s in sessions for p in s["positions"]}),
            "n_gold": len(gold),
            "prune_output": _completion_meta(out),
            "prune_think": None,
            "fit": fit,
        }
        if out.error is not None:
            return MethodOutput("", f"nanomemory prune: {out.error}", baseline=record, timed=True)
        memory, record["prune_think"] = p.split_think(out.text, out.reasoning)
        return MethodOutput(memory.strip(), baseline=record, timed=True)

    @classmethod
    def gold_shown(cls, record) -> int | None:
        return record.gold_shown

    @classmethod
    def calls(cls, config, dataset, questions, histories) -> dict:
        return {"mpm": None if questions is None else len(questions)}

    @classmethod
    def documents(cls, histories: list) -> int:
        from lazymem.pipeline.baselines import session_turns

        return sum(len(t) for h in histories for _, _, t in session_turns(h))
