"""Typed run records: ``RunRecord`` (one line of ``records.jsonl``) and its parts.

- ``part``: ``JsonPart``, the base that reads a JSON object into a frozen dataclass and writes back
  exactly that object (key order, absent keys and unknown keys kept);
- ``parts``: question, pool, windows, decisions, construction, model calls, judge, measures, timings;
- ``methods``: the method-specific part (``NanoMemoryPart``, ``Mem0Part``; ``METHOD_PARTS``);
- ``run``: ``RunRecord`` itself.

``lazymem.eval.runfiles.load_records`` reads a records file into RunRecords.
"""

from lazymem.eval.records.methods import METHOD_PARTS, Mem0Part, Mem0Result, NanoMemoryPart, NanoSession
from lazymem.eval.records.part import FieldError, JsonPart, json_kind
from lazymem.eval.records.parts import (
    CallMeta,
    ConstructionRecord,
    DecisionRecord,
    JudgeRecord,
    MeasuresRecord,
    PoolHit,
    PoolRecord,
    QuestionMeta,
    Timings,
    VerdictRecord,
    WindowRecord,
)
from lazymem.eval.records.run import RunRecord

__all__ = [
    "METHOD_PARTS",
    "CallMeta",
    "ConstructionRecord",
    "DecisionRecord",
    "FieldError",
    "JsonPart",
    "JudgeRecord",
    "MeasuresRecord",
    "Mem0Part",
    "Mem0Result",
    "NanoMemoryPart",
    "NanoSession",
    "PoolHit",
    "PoolRecord",
    "QuestionMeta",
    "RunRecord",
    "Timings",
    "VerdictRecord",
    "WindowRecord",
    "json_kind",
]
