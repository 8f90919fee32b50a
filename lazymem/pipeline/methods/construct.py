"""Methods that construct the memory window by window (paper Section 3.3): LazyMem and extractive.

Both run the same path (``LazyMemPipeline.construct``: window prompts, the format gate, merging
over overlapping sub-windows, assembling the kept messages); they differ only in who labels each
window's messages:

- ``LazyMem``: the memory-processing model (the ``mpm`` role), all windows in one generate call
  (``LazyMemPipeline.generate_mpm``: per decision count when structured, per window when grounded);
- ``Extractive``: the training-free ``ExtractiveProcessor`` (``pipeline.extractive`` settings).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lazymem.pipeline.methods.base import Method, MethodOutput

if TYPE_CHECKING:
    from lazymem.construct import WindowPrompt
    from lazymem.llm import Completion
    from lazymem.records import History, Question


def max_windows(n_hits: int, w: int, L: int, s: int) -> int:
    """The most sub-windows (MPM calls) ``n_hits`` retrieved messages can give with radius w, length L, stride s.

    k hits that merge span at most 2wk + 1 messages, which split into 1 + ceil((2wk + 1 - L) / s)
    sub-windows; the bound is the best way to group the hits (a small knapsack over k).

    >>> max_windows(10, 1, 4, 3), max_windows(10, 2, 8, 7)
    (10, 10)
    """
    def sub(k: int) -> int:
        return 1 + math.ceil(max(0, 2 * w * k + 1 - L) / s)

    best = [0] * (n_hits + 1)
    for j in range(1, n_hits + 1):
        best[j] = max(sub(k) + best[j - k] for k in range(1, j + 1))
    return best[n_hits]


class _Constructing(Method):
    retrieves = uses_dense = constructs = processing_stage = True

    def memory(self, history, question, pool, timings) -> MethodOutput:
        windows = self.pipeline.windows(history, question, pool)
        results, decisions, memory, stats, error = self.pipeline.construct(history, question, windows)
        return MethodOutput(memory, error, results, decisions, stats)

    def window_outputs(self, history: History, question: Question, items: Sequence[WindowPrompt]
                       ) -> tuple[list[str | None], list[Completion | None]]:
        """Every window's raw output (None where the call failed) and its model call (None without a model)."""
        raise NotImplementedError

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return record.kept_positions


class LazyMem(_Constructing):
    name, label = "lazymem", "LazyMem"  # the paper's rows are its trained models (LazyMem-4B, ...), not the method
    uses_mpm = True

    def window_outputs(self, history, question, items):
        if not items:
            return [], []
        outputs = self.pipeline.generate_mpm([list(it.messages) for it in items], [it.n_decisions for it in items],
                                             [tuple(history[p].text for p in it.decision_positions) for it in items],
                                             question.text)
        return [None if out.error is not None else out.text for out in outputs], list(outputs)

    @classmethod
    def calls(cls, config, dataset, questions, histories) -> dict:
        w = config.window
        if questions is None:
            total = None
        else:
            total = sum(max_windows(min(config.retrieval.n, len(dataset.histories[q.history_id])), w.w, w.L, w.s)
                        for q in questions)
        return {"mpm_max": total, "mpm_max_per_question": max_windows(config.retrieval.n, w.w, w.L, w.s)}


class Extractive(_Constructing):
    name, label = "extractive", "Extractive (training-free)"
    section = "extractive"

    def __init__(self, pipeline):
        super().__init__(pipeline)
        from lazymem.construct import ExtractiveProcessor

        self.processor = ExtractiveProcessor(pipeline.config.extractive)

    def window_outputs(self, history, question, items):
        raws = [self.processor.process(question.text, question.query_time, [history[p] for p in it.window.positions])
                for it in items]
        return raws, [None] * len(items)
