"""The ``Method`` interface: how one system turns a history and a question into a memory.

A method is a class registered by name (``lazymem.pipeline.methods.REGISTRY``). The pipeline
(``lazymem.pipeline.LazyMemPipeline``) holds one instance per pipeline and calls
``memory(history, question, pool, timings)``; everything else in the project (evaluation,
attribution, memory measures, provenance, dry runs, benchmarks) asks the class what it does
through the class attributes below, never compares its name.

Adding a baseline is one module with a ``Method`` subclass (and its settings dataclass, if it has
settings) and one line in ``REGISTRY``; docs/ARCHITECTURE.md has the worked example, which
tests/test_method_settings.py registers and runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from lazymem.construct import ConstructionStats, Decision
    from lazymem.pipeline.results import WindowResult
    from lazymem.records import History, Question
    from lazymem.retrieve import Pool


@dataclass(frozen=True)
class MethodOutput:
    """What a method built for one question (the pipeline wraps it in a ``QueryResult``)."""

    memory: str  # the memory block handed to the answer model
    error: str | None = None  # "stage: ExceptionType: message" of a failed model call
    windows: tuple[WindowResult, ...] = ()  # construction methods: every window's processing
    decisions: tuple[Decision, ...] = ()  # construction methods: merged KEEP/DROP by position
    stats: ConstructionStats | None = None  # construction methods: gate and keep statistics
    baseline: Mapping | None = None  # a method-specific record (NanoMemory's sessions, Mem0's search)
    timed: bool = False  # True when the method set timings["processing"] itself


class Method:
    """One system's memory construction. Subclasses set the class attributes and ``memory``.

    Class attributes (what callers ask instead of the name):
        name: the registry name (``pipeline.method`` in configs, ``method`` in records).
        label: how tables show it (the paper's system name where the paper ran it).
        in_paper: True when the paper's Table 1 has this system as one row under ``label`` (a baseline).
        retrieves: builds the pool R_q with the hybrid retriever (dense + BM25, RRF, rerank).
        uses_dense: needs the dense encoder (retrieval.dense_model) even without the pool.
        uses_mpm: calls the ``mpm`` model role.
        mpm_client: ... through the pipeline's ``mpm`` client (False: through its own, as Mem0 does).
        constructs: memory = KEEP/DROP decisions over windows (answered with the compressed prompt).
        writes_text: the memory is new text, not messages: memory measures match gold by text.
        processing_stage: has a processing stage between retrieval and answer (latency tables).
        settings_class: the frozen dataclass of this method's own settings (None: it has none). They are
            the config section named after the method (``pipeline.<name>:`` in YAML, ``config.<name>`` in
            Python), and they enter the run fingerprint of this method's runs only.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    in_paper: ClassVar[bool] = False
    retrieves: ClassVar[bool] = False
    uses_dense: ClassVar[bool] = False
    uses_mpm: ClassVar[bool] = False
    mpm_client: ClassVar[bool] = True
    constructs: ClassVar[bool] = False
    writes_text: ClassVar[bool] = False
    processing_stage: ClassVar[bool] = False
    settings_class: ClassVar[type | None] = None

    def __init__(self, pipeline: Any):
        self.pipeline = pipeline  # the LazyMemPipeline (its clients, retriever, locks and config)

    @property
    def config(self) -> Any:
        """The pipeline's PipelineConfig."""
        return self.pipeline.config

    @property
    def answer_prompt(self) -> str:
        """The name of the answer prompt in PROMPTS (the paper's compressed-memory prompt for construction)."""
        return "answer_compressed" if self.constructs else "answer_text"

    def memory(
        self, history: History, question: Question, pool: Pool | None, timings: dict[str, float]
    ) -> MethodOutput:
        """Build the memory for one question (``pool`` is None unless ``retrieves``)."""
        raise NotImplementedError(f"method {self.name!r} does not implement memory()")

    def warm_up(self) -> None:
        """Load what the first question would otherwise load (models are loaded by the pipeline)."""

    def close(self) -> None:
        """Release what stays open between questions."""

    # what records, measures and dry runs ask

    @classmethod
    def check(cls, config: Any) -> None:
        """Raise ConfigError when ``config`` cannot run this method (called by PipelineConfig)."""

    @classmethod
    def memory_positions(cls, record: Any, question: Question, history: History) -> set[int] | None:
        """Positions whose messages make up a run record's memory (``record``: a ``lazymem.eval.records.RunRecord``,
        read by its attributes); None when it writes new text."""
        return None

    @classmethod
    def gold_shown(cls, record: Any) -> int | None:
        """How many gold messages the method's own search showed it, from a run record's method part
        (``RunRecord.baseline``); None: use the pool or windows."""
        return None

    @classmethod
    def calls(cls, config: Any, dataset: Any, questions: list | None, histories: list) -> dict:
        """Dry run: this method's model calls beyond answer and judge (``lazymem.eval.dryrun``)."""
        return {"mpm": 0}

    @classmethod
    def documents(cls, histories: list) -> int:
        """Dry run: texts the dense encoder embeds at most for these histories (one per message)."""
        return sum(len(h) for h in histories)

    @classmethod
    def settings(cls, config: Any) -> dict:
        """This method's own settings as plain values (dry runs and provenance show them)."""
        return {} if cls.settings_class is None else plain_settings(config.sections[cls.name])


def plain_settings(settings: Any) -> dict:
    """A settings dataclass as JSON-ready values: its ``as_dict()`` where it has one (a settings class
    leaves a field added later out while unset there, so fingerprints from before it stay valid), else
    ``dataclasses.asdict``."""
    import dataclasses

    as_dict = getattr(settings, "as_dict", None)
    return as_dict() if callable(as_dict) else dataclasses.asdict(settings)
