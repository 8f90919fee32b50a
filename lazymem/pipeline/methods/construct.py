"""Methods that construct the memory window by window (paper Section 3.3): LazyMem and extractive.

Both run the same path (``LazyMemPipeline.construct``: window prompts, the format gate, merging
over overlapping sub-windows, assembling the kept messages); they differ only in who labels each
window's messages:

- ``LazyMem``: the memory-processing model (the ``mpm`` role), all windows in one generate call
  (``LazyMemPipeline.generate_mpm``: per decision count when structured, per window when grounded),
  decoded as ``pipeline.lazymem`` says (``LazyMemSettings``);
- ``Extractive``: the training-free ``ExtractiveProcessor`` (``pipeline.extractive`` settings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lazymem.construct import ExtractiveConfig
from lazymem.construct.prior import KeepPrior
from lazymem.errors import ConfigError
from lazymem.fields import h, require
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


GROUNDED_BACKENDS = ("transformers", "llamacpp", "fake")  # token-level control: grounded spans, per-line priors
TRACE_BACKENDS = ("transformers", "llamacpp", "fake")  # can make the array follow the trace token by token


@dataclass(frozen=True)
class LazyMemSettings:
    """``pipeline.lazymem``: how the MPM's decisions are decoded (the paper prints no decoding settings)."""

    structured: bool = field(
        default=False,
        metadata=h("constrain MPM decoding to decision_schema(n) of each window (untrained small models need it)"),
    )
    structured_trace: bool = field(
        default=False,
        metadata=h(
            "structured: the MPM writes its n-line <think> trace before the array, whose ops follow it "
            "(models trained with teacher gold-trace, e.g. LazyMem-135M; transformers or llamacpp)"
        ),
    )
    grounded: bool = field(
        default=False,
        metadata=h(
            "grounded decoding: every KEEP's compressed_content can only be a verbatim span of its own "
            "message (free or structured; backends transformers and llamacpp; LazyMem-135M's default)"
        ),
    )
    keep_prior: float = field(
        default=0.0,
        metadata=h(
            "a lexical KEEP prior: where the MPM writes the op of message i's <think> trace line, keep_prior x "
            "(the share of the query's content words message i has: the extractive processor's lexical_scores) is "
            "added to ' KEEP''s logit, beside mpm_sampling.logit_bias (the prompt's rule 11 as a decoding prior; "
            "0 = off; backends transformers and llamacpp, models that write a trace, e.g. LazyMem-135M)"
        ),
    )
    keep_prior_dense: float = field(
        default=0.0,
        metadata=h(
            "a dense KEEP prior beside keep_prior: keep_prior_dense x (the cosine similarity of the question and "
            "message i under keep_prior_model) is added to ' KEEP''s logit at message i's trace line "
            "(lazymem.construct.prior.KeepPrior; 0 = off; same backends as keep_prior)"
        ),
    )
    keep_prior_model: str = field(
        default="minilm-offline",
        metadata=h(
            "keep_prior_dense's sentence encoder (a weight is chosen for one encoder: all-MiniLM-L6-v2, "
            "'minilm-offline', for LazyMem-135M's)"
        ),
    )
    trace_independent: bool = field(
        default=False,
        metadata=h(
            "structured_trace: decide each message's op without the ops before it (its trace line read with every "
            "earlier op DROP: KEEP where ' KEEP''s logit, KEEP bias and prior added, is at least ' DROP''s; "
            "Sampling.trace_independent), so a window can keep more than the one message a model trained on "
            "one-gold windows keeps after its first KEEP; backends transformers and llamacpp"
        ),
    )
    schema_max_content: int = field(
        default=512, metadata=h("structured: max characters of a KEEP's compressed_content")
    )
    schema_max_reason: int = field(default=128, metadata=h("structured: max characters of a decision's reason"))

    def __post_init__(self):
        for name in ("structured", "structured_trace", "grounded", "trace_independent"):
            require(
                isinstance(getattr(self, name), bool), "lazymem", name, getattr(self, name), "must be true or false"
            )
        require(
            not self.trace_independent or (self.structured and self.structured_trace),
            "lazymem",
            "trace_independent",
            self.trace_independent,
            "needs structured: true and structured_trace: true (the array follows the decided trace)",
        )
        try:
            self.keep_prior_weights  # noqa: B018  (KeepPrior checks the weights and the encoder's name)
        except ConfigError as e:
            raise ConfigError(
                f"lazymem (keep_prior = KeepPrior.lexical, keep_prior_dense = dense, "
                f"keep_prior_model = dense_model): {e}"
            ) from None
        for name, low in (("schema_max_content", 1), ("schema_max_reason", 0)):
            v = getattr(self, name)
            require(
                isinstance(v, int) and not isinstance(v, bool) and v >= low,
                "lazymem",
                name,
                v,
                f"must be an integer >= {low}",
            )

    @property
    def keep_prior_weights(self) -> KeepPrior:
        """The per-message KEEP prior of ``keep_prior``, ``keep_prior_dense`` and ``keep_prior_model``."""
        return KeepPrior(self.keep_prior, self.keep_prior_dense, self.keep_prior_model)


class _Constructing(Method):
    retrieves = uses_dense = constructs = processing_stage = True

    def memory(self, history, question, pool, timings) -> MethodOutput:
        windows = self.pipeline.windows(history, question, pool)
        results, decisions, memory, stats, error = self.pipeline.construct(history, question, windows)
        return MethodOutput(memory, error, results, decisions, stats)

    def window_outputs(
        self, history: History, question: Question, items: Sequence[WindowPrompt]
    ) -> tuple[list[str | None], list[Completion | None]]:
        """Every window's raw output (None where the call failed) and its model call (None without a model)."""
        raise NotImplementedError

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return record.kept_positions


class LazyMem(_Constructing):
    name, label = "lazymem", "LazyMem"  # the paper's rows are its trained models (LazyMem-4B, ...), not the method
    uses_mpm = True
    settings_class = LazyMemSettings

    @classmethod
    def check(cls, config) -> None:
        s, backend = config.lazymem, config.mpm.backend
        require(
            not s.structured_trace or backend in TRACE_BACKENDS,
            "PipelineConfig",
            "lazymem.structured_trace",
            s.structured_trace,
            "needs backend transformers or llamacpp (the array follows the trace token by "
            "token, or in a second pass; a server's JSON schema cannot make it)",
        )
        require(
            not s.grounded or backend in GROUNDED_BACKENDS,
            "PipelineConfig",
            "lazymem.grounded",
            s.grounded,
            f"needs token-level control of the MPM's decoding, which backends {GROUNDED_BACKENDS} have; "
            f"mpm.backend {backend!r} (an OpenAI-compatible server, vLLM) cannot do grounded decoding: "
            "set grounded: false (the rewritten count still measures it)",
        )
        for name in ("keep_prior", "keep_prior_dense"):
            require(
                not getattr(s, name) or backend in GROUNDED_BACKENDS,
                "PipelineConfig",
                f"lazymem.{name}",
                getattr(s, name),
                f"needs a logit bias that changes line by line, which backends "
                f"{GROUNDED_BACKENDS} give; mpm.backend {backend!r} cannot: set {name}: 0",
            )

    def window_outputs(self, history, question, items):
        if not items:
            return [], []
        outputs = self.pipeline.generate_mpm(
            [list(it.messages) for it in items],
            [it.n_decisions for it in items],
            [tuple(history[p].text for p in it.decision_positions) for it in items],
            question.text,
        )
        return [None if out.error is not None else out.text for out in outputs], list(outputs)

    @classmethod
    def calls(cls, config, dataset, questions, histories) -> dict:
        w = config.window
        if questions is None:
            total = None
        else:
            total = sum(
                max_windows(min(config.retrieval.n, len(dataset.histories[q.history_id])), w.w, w.L, w.s)
                for q in questions
            )
        return {"mpm_max": total, "mpm_max_per_question": max_windows(config.retrieval.n, w.w, w.L, w.s)}


class Extractive(_Constructing):
    name, label = "extractive", "Extractive (training-free)"
    settings_class = ExtractiveConfig

    def __init__(self, pipeline):
        super().__init__(pipeline)
        from lazymem.construct import ExtractiveProcessor

        self.processor = ExtractiveProcessor(pipeline.config.extractive)

    def window_outputs(self, history, question, items):
        raws = [
            self.processor.process(question.text, question.query_time, [history[p] for p in it.window.positions])
            for it in items
        ]
        return raws, [None] * len(items)
