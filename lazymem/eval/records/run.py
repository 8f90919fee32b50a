"""``RunRecord``: one line of a run's ``records.jsonl``, typed, with exactly the JSON it was read from.

>>> line = {"question_id": "q1", "method": "rag", "status": "ok", "error": None, "memory": "m",
...         "pool": {"positions": [3, 1]}, "timings": {"total": 1.5}, "question": {"type": "single-hop",
...         "evidence": [3]}, "judge": None, "note": "kept"}
>>> r = RunRecord.from_json(line)
>>> r.pool.positions, r.timings.total, r.question.evidence, r.windows, r.ok
((3, 1), 1.5, (3,), None, True)
>>> r.to_json() == line and list(r.to_json()) == list(line)
True
>>> RunRecord.from_json({"question_id": "q2", "method": "rag", "status": "ok", "n_gold": "2"}, "run/records.jsonl", 4)
Traceback (most recent call last):
...
lazymem.errors.LoadError: run/records.jsonl: record 4 (question_id 'q2'), field n_gold: '2' is not an integer
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from lazymem.errors import LoadError
from lazymem.eval.records.methods import METHOD_PARTS, Mem0Part, NanoMemoryPart
from lazymem.eval.records.part import FieldError, JsonPart, json_kind
from lazymem.eval.records.parts import (
    CallMeta,
    ConstructionRecord,
    DecisionRecord,
    JudgeRecord,
    MeasuresRecord,
    PoolRecord,
    QuestionMeta,
    Timings,
    WindowRecord,
)

if TYPE_CHECKING:
    from lazymem.pipeline.results import QueryResult

# what an error record holds before its question fields (lazymem.eval.runner.run_question)
FAILED_KEYS = ("question_id", "method", "status", "error", "traceback", "timings")


@dataclass(frozen=True)
class RunRecord(JsonPart):
    """One question of a run: the pipeline's result, scores, judge, measures, timings (``records.jsonl``).

    Fields absent from a record (an error record has no pool, windows or memory; older records no
    ``memory_measures`` or ``answer_think``) are None and stay absent in ``to_json``. ``baseline`` is
    the method's own part (``NanoMemoryPart``, ``Mem0Part``; the object as read for other methods).
    """

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset(
        {"traceback", "memory_measures_error", "usage", "run_id", "config_sha256", "attempt", "recorded_at"}
    )

    question_id: str
    method: str | None  # the pipeline method (lazymem.pipeline.methods); older hand-made records lack it
    status: str  # "ok", or "error"
    error: str | None = None  # "stage: ExceptionType: message" of the first failure
    traceback: str | None = None  # error records of an unexpected exception
    pool: PoolRecord | None = None  # the retrieval pool (None without one)
    windows: tuple[WindowRecord, ...] | None = None  # () for methods without windows
    decisions: tuple[DecisionRecord, ...] | None = None  # merged over windows
    construction: ConstructionRecord | None = None  # gate and keep statistics
    memory: str | None = None  # the memory block handed to the answer model
    answer_prompt: str | None = None  # its prompt's name in PROMPTS
    answer: str | None = None  # think trace stripped
    answer_think: str | None = None
    answer_output: CallMeta | None = None
    timings: Timings | None = None
    baseline: NanoMemoryPart | Mem0Part | Mapping[str, Any] | None = None  # the method's own part
    question: QuestionMeta | None = None
    n_gold: int | None = None  # gold positions of the question
    gold_in_pool: int | None = None  # of those, in the pool (NanoMemory: in the sessions it showed)
    memory_tokens: int | None = None  # Qwen3 tokens of the memory
    tokenizer: str | None = None  # "qwen3", "missing" or "off"
    locomo_f1: float | None = None  # LoCoMo's official F1
    answer_f1: float | None = None  # the token-F1 proxy (runs without LoCoMo categories)
    answer_contains: bool | float | None = None  # the answer contains the gold (proxy)
    judge: JudgeRecord | None = None
    memory_measures: MeasuresRecord | None = None
    memory_measures_error: str | None = None  # why the measures could not be computed
    # every model call's tokens and seconds by stage (lazymem.eval.usage.record_usage); absent: not measured
    usage: Mapping[str, Mapping[str, Any]] | None = None
    run_id: str | None = None  # the run that wrote the line
    config_sha256: str | None = None  # the config fingerprint it was made under (older lines lack it)
    attempt: int | None = None  # 1 + earlier error records of the question
    recorded_at: str | None = None  # UTC time the line was written

    @classmethod
    def decode_field(cls, name: str, value: Any, path: str, data: Mapping) -> Any:
        if name == "baseline" and value is not None:
            part = METHOD_PARTS.get(data.get("method"))
            if part is not None:
                return part.from_json(value, path)
            if not isinstance(value, Mapping):
                raise FieldError(path, f"{json_kind(value)}, expected an object")
            return value
        return super().decode_field(name, value, path, data)

    @classmethod
    def from_json(cls, data: Any, file: str = "record", index: int | None = None) -> RunRecord:
        """The record of one JSON object; LoadError naming `file`, the record (place, question id) and field."""
        qid = data.get("question_id") if isinstance(data, Mapping) else None
        try:
            return super().from_json(data)
        except FieldError as e:
            where = f"record {index} (question_id {qid!r})" if index is not None else f"question_id {qid!r}"
            raise LoadError(file, where, None if e.path == cls.__name__ else e.path, e.problem) from None

    @classmethod
    def from_result(cls, result: QueryResult) -> RunRecord:
        """The record of the pipeline's result for one question (its question fields are added after)."""
        return cls.from_json(result.to_dict(), "pipeline result")

    @classmethod
    def failed(cls, question_id: str, method: str, error: str, traceback: str) -> RunRecord:
        """The record of a question whose pipeline raised (its question fields are added after)."""
        return cls(question_id, method, "error", error, traceback, timings=Timings(json_keys=()), json_keys=FAILED_KEYS)

    @classmethod
    def of(cls, record: RunRecord | Mapping) -> RunRecord:
        """`record` itself, or a raw record (a dict of records.jsonl) read with ``from_json``."""
        return record if isinstance(record, RunRecord) else cls.from_json(record)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def label(self) -> bool | float | None:
        """The judge's label (None: not judged)."""
        return None if self.judge is None else self.judge.label

    @property
    def has_baseline(self) -> bool:
        """The record has a non-empty method part."""
        b = self.baseline
        return bool(b.to_json() if isinstance(b, JsonPart) else b)

    @property
    def nano(self) -> NanoMemoryPart | None:
        """NanoMemory's part, None for other methods."""
        return self.baseline if isinstance(self.baseline, NanoMemoryPart) else None

    @property
    def mem0(self) -> Mem0Part | None:
        """Mem0's part, None for other methods."""
        return self.baseline if isinstance(self.baseline, Mem0Part) else None

    @property
    def gold_shown(self) -> int | None:
        """Gold positions the method's own search showed it (NanoMemory, Mem0), else None."""
        b = self.baseline
        if isinstance(b, JsonPart):
            return getattr(b, "gold_shown", None)
        return b.get("gold_shown") if isinstance(b, Mapping) else None

    @property
    def kept_positions(self) -> set[int]:
        """Positions of the record's KEEP decisions."""
        return {d.pos for d in self.decisions or () if d.op == "KEEP"}

    @property
    def window_positions(self) -> set[int]:
        """Positions inside the record's windows."""
        return {p for w in self.windows or () for p in w.positions}

    def stage_seconds(self, stage: str) -> float | None:
        """Seconds of one stage ("retrieval", ..., or a key only some records have), None when absent."""
        return None if self.timings is None else self.timings.get(stage)
