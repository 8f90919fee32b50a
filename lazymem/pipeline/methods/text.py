"""Methods whose memory is messages verbatim, chronologically: RAG TopN, Oracle Turn, Oracle Session, Full.

- ``RAG``: the paper's RAG TopN baseline, the pool R_q's messages.
- ``OracleTurn``: the question's gold evidence messages.
- ``OracleSession``: every message of the sessions holding the gold evidence
  (``lazymem.pipeline.baselines.oracle_session_positions``).
- ``Full``: the whole history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lazymem.pipeline.methods.base import Method, MethodOutput
from lazymem.prompts import text_memory

if TYPE_CHECKING:
    from lazymem.records import History, Question
    from lazymem.retrieve import Pool


class _Verbatim(Method):
    """A memory of messages verbatim: subclasses say which positions."""

    @classmethod
    def positions(cls, history: History, question: Question, pool: Pool | None) -> list[int]:
        raise NotImplementedError

    def memory(self, history, question, pool, timings) -> MethodOutput:
        return MethodOutput(text_memory([history[p] for p in self.positions(history, question, pool)]))


class RAG(_Verbatim):
    name, label = "rag", "RAG TopN"
    retrieves = uses_dense = True

    @classmethod
    def positions(cls, history, question, pool):
        return list(pool.positions)

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return set(record.pool.positions if record.pool is not None else ())


class OracleTurn(_Verbatim):
    name, label, in_paper = "oracle_turn", "Oracle Turn", True

    @classmethod
    def positions(cls, history, question, pool):
        return list(question.evidence)

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return set(question.evidence)


class OracleSession(_Verbatim):
    name, label, in_paper = "oracle_session", "Oracle Session", True

    @classmethod
    def positions(cls, history, question, pool):
        from lazymem.pipeline.baselines import oracle_session_positions

        return oracle_session_positions(history, question)

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return set(cls.positions(history, question, None))


class Full(_Verbatim):
    name, label = "full", "Full history"

    @classmethod
    def positions(cls, history, question, pool):
        return [m.pos for m in history.messages]

    @classmethod
    def memory_positions(cls, record, question, history) -> set[int]:
        return {m.pos for m in history.messages}
